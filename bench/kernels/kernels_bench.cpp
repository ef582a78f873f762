// Micro-benchmarks of the portable kernels that dominate CNN and transformer models.
// Reports GFLOP/s for the arithmetic-heavy ops. Single-threaded, like the kernels.
#include <benchmark/benchmark.h>
#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tessera/ir/schema.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera {
namespace {

struct Attr {
  std::string name;
  std::vector<int64_t> ints;  // empty: an Int attribute with value i
  int64_t i = 0;
};

class Harness {
 public:
  Harness(fb::OpType op, const std::vector<Attr>& attrs,
          const std::vector<std::vector<int64_t>>& inputs, const std::vector<int64_t>& output) {
    std::vector<flatbuffers::Offset<fb::Attr>> a;
    for (const Attr& at : attrs) {
      auto name = fbb_.CreateString(at.name);
      if (at.ints.empty()) {
        a.push_back(fb::CreateAttr(fbb_, name, fb::AttrType::Int, at.i));
      } else {
        a.push_back(fb::CreateAttr(fbb_, name, fb::AttrType::Ints, 0, 0, fbb_.CreateVector(at.ints)));
      }
    }
    fbb_.Finish(fb::CreateNode(fbb_, op, fbb_.CreateString("bench"), 0, 0, fbb_.CreateVector(a)));
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (const auto& s : inputs) add(s, &in_, [&] { return dist(rng); });
    add(output, &out_, [] { return 0.0f; });
    arena_.resize(256u << 20);
    alloc_ = std::make_unique<MemoryAllocator>(arena_.data(), arena_.size());
    for (auto& t : in_) in_ptrs_.push_back(&t);
    for (auto& t : out_) out_ptrs_.push_back(&t);
    portable::KernelNode kn{flatbuffers::GetRoot<fb::Node>(fbb_.GetBufferPointer()),
                            {in_ptrs_.data(), in_ptrs_.size()}, {out_ptrs_.data(), out_ptrs_.size()}};
    auto k = portable::prepare_kernel(kn, *alloc_);
    if (k.ok()) kernel_ = *k;
    error_ = k.ok() ? "" : k.status().message();
  }

  bool run() {
    return portable::run_kernel(kernel_, {in_ptrs_.data(), in_ptrs_.size()},
                                {out_ptrs_.data(), out_ptrs_.size()}).is_ok();
  }
  const std::string& error() const { return error_; }

 private:
  template <typename F>
  void add(const std::vector<int64_t>& sizes, std::vector<Tensor>* list, F value) {
    int64_t n = 1;
    for (int64_t d : sizes) n *= d;
    data_.emplace_back(static_cast<size_t>(n));
    for (float& v : data_.back()) v = value();
    list->emplace_back(ScalarType::Float32, sizes, data_.back().data());
  }

  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<std::vector<float>> data_;
  std::vector<Tensor> in_, out_;
  std::vector<const Tensor*> in_ptrs_;
  std::vector<Tensor*> out_ptrs_;
  std::vector<uint8_t> arena_;
  std::unique_ptr<MemoryAllocator> alloc_;
  portable::PreparedKernel kernel_;
  std::string error_;
};

void run(benchmark::State& state, Harness& h, double flops) {
  if (!h.error().empty()) {
    state.SkipWithError(h.error().c_str());
    return;
  }
  for (auto _ : state) {
    if (!h.run()) state.SkipWithError("run failed");
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const bool trans_b = state.range(1) != 0;
  Harness h(fb::OpType::Gemm, {{"transB", {}, trans_b}}, {{n, n}, {n, n}}, {n, n});
  run(state, h, 2.0 * n * n * n);
}
BENCHMARK(BM_Gemm)->Args({256, 0})->Args({512, 0})->Args({512, 1});

void BM_LinearBatch1(benchmark::State& state) {
  Harness h(fb::OpType::Gemm, {{"transB", {}, 1}}, {{1, 768}, {3072, 768}, {3072}}, {1, 3072});
  run(state, h, 2.0 * 768 * 3072);
}
BENCHMARK(BM_LinearBatch1);

void BM_MatMulBert(benchmark::State& state) {
  Harness h(fb::OpType::MatMul, {}, {{1, 128, 768}, {768, 768}}, {1, 128, 768});
  run(state, h, 2.0 * 128 * 768 * 768);
}
BENCHMARK(BM_MatMulBert);

void BM_Conv3x3(benchmark::State& state) {
  Harness h(fb::OpType::Conv, {{"pads", {1, 1, 1, 1}}},
            {{1, 64, 56, 56}, {64, 64, 3, 3}, {64}}, {1, 64, 56, 56});
  run(state, h, 2.0 * 64 * 64 * 9 * 56 * 56);
}
BENCHMARK(BM_Conv3x3);

void BM_ConvStem7x7(benchmark::State& state) {
  Harness h(fb::OpType::Conv, {{"pads", {3, 3, 3, 3}}, {"strides", {2, 2}}},
            {{1, 3, 224, 224}, {64, 3, 7, 7}, {64}}, {1, 64, 112, 112});
  run(state, h, 2.0 * 64 * 3 * 49 * 112 * 112);
}
BENCHMARK(BM_ConvStem7x7);

void BM_Conv1x1(benchmark::State& state) {
  Harness h(fb::OpType::Conv, {}, {{1, 256, 14, 14}, {1024, 256, 1, 1}}, {1, 1024, 14, 14});
  run(state, h, 2.0 * 1024 * 256 * 196);
}
BENCHMARK(BM_Conv1x1);

void BM_Depthwise3x3(benchmark::State& state) {
  Harness h(fb::OpType::Conv, {{"pads", {1, 1, 1, 1}}, {"group", {}, 128}},
            {{1, 128, 56, 56}, {128, 1, 3, 3}}, {1, 128, 56, 56});
  run(state, h, 2.0 * 128 * 9 * 56 * 56);
}
BENCHMARK(BM_Depthwise3x3);

void BM_ConvTranspose4x4(benchmark::State& state) {
  Harness h(fb::OpType::ConvTranspose, {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}},
            {{1, 128, 28, 28}, {128, 64, 4, 4}}, {1, 64, 56, 56});
  run(state, h, 2.0 * 128 * 64 * 16 * 28 * 28);
}
BENCHMARK(BM_ConvTranspose4x4);

void BM_Softmax(benchmark::State& state) {
  Harness h(fb::OpType::Softmax, {}, {{12, 128, 128}}, {12, 128, 128});
  run(state, h, 0);
}
BENCHMARK(BM_Softmax);

void BM_MaxPool3x3s2(benchmark::State& state) {
  Harness h(fb::OpType::MaxPool,
            {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}},
            {{1, 64, 112, 112}}, {1, 64, 56, 56});
  run(state, h, 0);
}
BENCHMARK(BM_MaxPool3x3s2);

}  // namespace
}  // namespace tessera
