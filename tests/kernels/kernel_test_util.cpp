#include "kernel_test_util.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>

namespace {
std::atomic<long> g_heap_allocations{0};
}  // namespace

// Counting replacements of the global allocation functions (the test binary only).
void* operator new(std::size_t n) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace tessera::kernel_test {

long heap_allocations() { return g_heap_allocations.load(); }

const fb::Node* NodeSpec::node() {
  fbb_.Clear();
  std::vector<flatbuffers::Offset<fb::Attr>> attrs;
  for (const AttrSpec& a : attrs_) {
    auto name = fbb_.CreateString(a.name);
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints = 0;
    flatbuffers::Offset<flatbuffers::Vector<float>> floats = 0;
    flatbuffers::Offset<flatbuffers::String> s = 0;
    if (a.type == fb::AttrType::Ints) ints = fbb_.CreateVector(a.ints);
    if (a.type == fb::AttrType::Floats) floats = fbb_.CreateVector(a.floats);
    if (a.type == fb::AttrType::String) s = fbb_.CreateString(a.s);
    attrs.push_back(fb::CreateAttr(fbb_, name, a.type, a.i, a.f, ints, floats, s));
  }
  auto name = fbb_.CreateString(name_);
  auto attr_vec = fbb_.CreateVector(attrs);
  auto node = fb::CreateNode(fbb_, op_, name, 0, 0, attr_vec, activation_,
                             activation_ == fb::Activation::Clip ? lo_ : -INFINITY,
                             activation_ == fb::Activation::Clip ? hi_ : INFINITY);
  fbb_.Finish(node);
  return flatbuffers::GetRoot<fb::Node>(fbb_.GetBufferPointer());
}

TestTensor::TestTensor(ScalarType dtype, std::vector<int64_t> sizes)
    : dtype_(dtype), sizes_(std::move(sizes)) {
  storage_.assign(nbytes() > 0 ? nbytes() : 1, 0);
}

int64_t TestTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return n;
}

template <typename T>
static TestTensor make_typed(ScalarType t, std::vector<int64_t> sizes, const std::vector<T>& v) {
  TestTensor x(t, std::move(sizes));
  EXPECT_EQ(static_cast<int64_t>(v.size()), x.numel()) << "test data size";
  if (static_cast<int64_t>(v.size()) == x.numel() && !v.empty()) {
    std::memcpy(x.data(), v.data(), v.size() * sizeof(T));
  }
  return x;
}

TestTensor TestTensor::f32(std::vector<int64_t> sizes, const std::vector<float>& values) {
  return make_typed(ScalarType::Float32, std::move(sizes), values);
}
TestTensor TestTensor::i64(std::vector<int64_t> sizes, const std::vector<int64_t>& values) {
  return make_typed(ScalarType::Int64, std::move(sizes), values);
}
TestTensor TestTensor::i32(std::vector<int64_t> sizes, const std::vector<int32_t>& values) {
  return make_typed(ScalarType::Int32, std::move(sizes), values);
}
TestTensor TestTensor::boolean(std::vector<int64_t> sizes, const std::vector<uint8_t>& values) {
  return make_typed(ScalarType::Bool, std::move(sizes), values);
}

TestTensor TestTensor::random(std::vector<int64_t> sizes, uint32_t seed, float lo, float hi) {
  TestTensor x(ScalarType::Float32, std::move(sizes));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  auto* p = static_cast<float*>(x.data());
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = dist(rng);
  return x;
}

std::vector<double> TestTensor::doubles() const {
  std::vector<float> f = floats();
  return std::vector<double>(f.begin(), f.end());
}

namespace {

// A MemoryAllocator whose every allocation is its own heap block, freed with the allocator.
class BlockAllocator : public MemoryAllocator {
 public:
  explicit BlockAllocator(size_t capacity) : MemoryAllocator(nullptr, capacity), capacity_(capacity) {}
  ~BlockAllocator() override {
    for (void* p : blocks_) std::free(p);
  }
  void* allocate(size_t size, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
    if (size > capacity_ - used_) return nullptr;
    used_ += size;
    // malloc's 16-byte alignment covers the common case with an exact-size block; larger
    // alignments round the block up.
    void* p = alignment <= 16 ? std::malloc(size > 0 ? size : 1)
                              : std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p != nullptr) blocks_.push_back(p);
    return p;
  }
  void reset() override {
    for (void* p : blocks_) std::free(p);
    blocks_.clear();
    used_ = 0;
  }

 private:
  size_t capacity_;
  size_t used_ = 0;
  std::vector<void*> blocks_;
};

struct Prepared {
  std::unique_ptr<MemoryAllocator> allocator;
  std::vector<Tensor> in_tensors, out_tensors;
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor*> out_ptrs;
};

Result<portable::PreparedKernel> prepare(const fb::Node* node, std::vector<TestTensor*>& inputs,
                                         std::vector<TestTensor*>& outputs, size_t arena_bytes,
                                         Prepared* p) {
  p->allocator = std::make_unique<BlockAllocator>(arena_bytes);
  p->in_tensors.reserve(inputs.size());
  p->out_tensors.reserve(outputs.size());
  for (TestTensor* t : inputs) {
    if (t == nullptr) {
      p->in_ptrs.push_back(nullptr);
    } else {
      p->in_tensors.push_back(t->tensor());
      p->in_ptrs.push_back(&p->in_tensors.back());
    }
  }
  for (TestTensor* t : outputs) {
    p->out_tensors.push_back(t->tensor());
    p->out_ptrs.push_back(&p->out_tensors.back());
  }
  portable::KernelNode kn{node, {p->in_ptrs.data(), p->in_ptrs.size()},
                          {p->out_ptrs.data(), p->out_ptrs.size()}};
  return portable::prepare_kernel(kn, *p->allocator);
}

}  // namespace

Status prepare_op(const fb::Node* node, std::vector<TestTensor*> inputs,
                  std::vector<TestTensor*> outputs, size_t arena_bytes) {
  Prepared p;
  auto k = prepare(node, inputs, outputs, arena_bytes, &p);
  return k.ok() ? Status::ok() : k.status();
}

Status run_op(const fb::Node* node, std::vector<TestTensor*> inputs,
              std::vector<TestTensor*> outputs, size_t arena_bytes) {
  Prepared p;
  auto k = prepare(node, inputs, outputs, arena_bytes, &p);
  if (!k.ok()) return k.status();
  std::vector<std::vector<uint8_t>> first;
  for (int pass = 0; pass < 2; ++pass) {
    for (TestTensor* t : outputs) std::memset(t->data(), pass == 0 ? 0xff : 0x7f, t->nbytes());
    const long before = heap_allocations();
    Status st = portable::run_kernel(*k, {p.in_ptrs.data(), p.in_ptrs.size()},
                                     {p.out_ptrs.data(), p.out_ptrs.size()});
    EXPECT_EQ(heap_allocations(), before) << "run_kernel allocated on the heap";
    if (!st.is_ok()) return st;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto* b = static_cast<const uint8_t*>(outputs[i]->data());
      std::vector<uint8_t> bytes(b, b + outputs[i]->nbytes());
      if (pass == 0) {
        first.push_back(std::move(bytes));
      } else {
        EXPECT_TRUE(bytes == first[i]) << "output " << i << " differs between runs "
                                       << "(an element is left unwritten or depends on it)";
      }
    }
  }
  return Status::ok();
}

void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  const std::vector<double>& mag, double rtol) {
  ASSERT_EQ(got.size(), ref.size());
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[i];
    const double g = got[i];
    if (std::isnan(r)) {
      if (!std::isnan(g) && ++failures <= 10) ADD_FAILURE() << "at " << i << ": got " << g << ", expected NaN";
      continue;
    }
    if (std::isinf(r)) {
      if (g != r && ++failures <= 10) ADD_FAILURE() << "at " << i << ": got " << g << ", expected " << r;
      continue;
    }
    double scale = std::fabs(r);
    if (!mag.empty() && mag[i] > scale) scale = mag[i];
    const double tol = rtol * scale + 1e-30;
    if (!(std::fabs(g - r) <= tol) && ++failures <= 10) {
      ADD_FAILURE() << "at " << i << ": got " << g << ", expected " << r << " (|diff| "
                    << std::fabs(g - r) << " > tol " << tol << ")";
    }
  }
  EXPECT_EQ(failures, 0) << failures << " of " << got.size() << " elements out of tolerance";
}

void expect_error(const Status& st, Error code, const char* needle) {
  EXPECT_EQ(st.code(), code) << "got " << error_name(st.code()) << ": " << st.message();
  EXPECT_NE(std::strstr(st.message(), needle), nullptr)
      << "message '" << st.message() << "' lacks '" << needle << "'";
}

}  // namespace tessera::kernel_test
