// BackendConformance: the support check before each case, the skip report, and the
// support-matrix mode's environment (conformance.h).
#include "tests/backends/common/conformance.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tessera/backend/registry.h"
#include "tessera/core/chunk_pool.h"
#include "tessera/core/large_buffer.h"
#include "tests/backends/common/support_matrix.h"

namespace tessera::backend_testing {
namespace {

// TESSERA_TEST_LARGE_BUFFER_THRESHOLD=N: LargeBuffers from N bytes on are mapped (1: every
// one), so that the suite runs the backends' huge-page path on its small tensors too.
// TESSERA_TEST_CHUNK_POOL_MIN_BYTES=N: ChunkPools take buffers from N bytes on (1: every one
// below the threshold), so that the suite runs XNNPACK's small buffers through its pool.
class LargeBufferThreshold : public ::testing::Environment {
 public:
  void SetUp() override {
    size_t n = 0;
    if (read("TESSERA_TEST_LARGE_BUFFER_THRESHOLD", &n)) internal::set_large_buffer_threshold(n);
    if (read("TESSERA_TEST_CHUNK_POOL_MIN_BYTES", &n)) internal::set_chunk_pool_min_bytes(n);
  }
  void TearDown() override {
    internal::set_large_buffer_threshold(0);
    internal::set_chunk_pool_min_bytes(0);
  }

 private:
  static bool read(const char* name, size_t* out) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return false;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    const bool valid = *end == '\0' && n > 0;
    EXPECT_TRUE(valid) << name << ": " << v;
    if (valid) *out = static_cast<size_t>(n);
    return valid;
  }
};
::testing::Environment* const kLargeBufferThreshold =
    ::testing::AddGlobalTestEnvironment(new LargeBufferThreshold);

}  // namespace

bool BackendConformance::accepts(const GraphCase& c) {
  Result<BackendInterface*> backend_or = get_backend(backend());
  if (!backend_or.ok()) {
    ADD_FAILURE() << backend() << ": " << backend_or.status().message();
    return false;
  }
  const std::vector<uint8_t> bytes = ir::encode_graph(c.graph);
  const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  const bool matrix = matrix_mode() != MatrixMode::Off;
  bool all = true;
  for (const fb::Node* node : *g->nodes()) {
    const std::string why =
        (*backend_or)->unsupported_reason(OpView{static_cast<int>(node->op()), node, g});
    if (matrix) record_support(backend(), node->op(), why);
    if (why.empty()) continue;
    all = false;
    if (!matrix) rejections_.push_back(why);
  }
  ++checked_;
  if (!all && !matrix) ++rejected_;
  return all && !matrix;
}

void BackendConformance::TearDown() {
  if (rejections_.empty() || HasFailure()) return;
  std::string reasons;
  for (const std::string& r : rejections_) {
    if (reasons.find(r) != std::string::npos) continue;
    reasons += (reasons.empty() ? "" : "; ") + r;
  }
  // The cases it accepted have run and passed.
  GTEST_SKIP() << backend() << " rejects a node in " << rejected_ << " of " << checked_
               << " cases: " << reasons;
}

std::string ConformanceParamName::operator()(
    const ::testing::TestParamInfo<ConformanceParam>& info) const {
  return std::string(info.param.backend) + "_" + fb::EnumNameOpType(info.param.op);
}

std::vector<ConformanceParam> with_ops(const char* backend, std::vector<fb::OpType> ops) {
  std::vector<ConformanceParam> out;
  for (fb::OpType op : ops) out.push_back({backend, op});
  return out;
}

std::vector<fb::OpType> binary_ops() {
  using Op = fb::OpType;
  return {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Min, Op::Pow};
}

std::vector<fb::OpType> fused_binary_ops() {
  using Op = fb::OpType;
  return {Op::Add, Op::Sub, Op::Mul, Op::Div};  // the binary ops program.fbs fuses into
}

std::vector<fb::OpType> unary_ops() {
  using Op = fb::OpType;
  return {Op::Relu,      Op::Clip,       Op::LeakyRelu, Op::Sigmoid, Op::Tanh, Op::HardSigmoid,
          Op::HardSwish, Op::Erf,        Op::Gelu,      Op::Exp,     Op::Sqrt, Op::Neg,
          Op::Abs,       Op::Reciprocal, Op::Identity,  Op::Mish,    Op::Elu};
}

std::vector<fb::OpType> pool_ops() {
  using Op = fb::OpType;
  return {Op::MaxPool, Op::AveragePool};
}

std::vector<fb::OpType> reduce_ops() {
  using Op = fb::OpType;
  return {Op::ReduceMean, Op::ReduceSum, Op::ReduceMax};
}

std::vector<fb::OpType> compare_ops() {
  using Op = fb::OpType;
  return {Op::Equal, Op::Less, Op::Greater};
}

namespace {

/// In support-matrix mode, writes or checks the backends' columns of the table when the run ends.
class SupportMatrixEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    const MatrixMode mode = matrix_mode();
    if (mode == MatrixMode::Off) return;
    const char* path = std::getenv(mode == MatrixMode::Write ? "TESSERA_SUPPORT_MATRIX"
                                                             : "TESSERA_SUPPORT_MATRIX_CHECK");
    std::string text;
    {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    if (recorded_support().empty()) {
      ADD_FAILURE() << "support matrix: no conformance case ran (filter Conformance/*)";
      return;
    }
    if (mode == MatrixMode::Write) {
      std::ofstream out(path);
      out << update_support_doc(text, recorded_support());
      if (!out) ADD_FAILURE() << "support matrix: cannot write " << path;
      return;
    }
    if (text.empty()) {
      ADD_FAILURE() << path << " is missing or empty";
      return;
    }
    const std::string diff = compare_support_doc(text, recorded_support());
    EXPECT_EQ(diff, "") << path
                        << " is not current; regenerate it with `cmake --build <build> --target "
                           "ops-support-doc` and commit it";
  }
};

[[maybe_unused]] ::testing::Environment* const kSupportMatrixEnvironment =
    ::testing::AddGlobalTestEnvironment(new SupportMatrixEnvironment);

}  // namespace

}  // namespace tessera::backend_testing
