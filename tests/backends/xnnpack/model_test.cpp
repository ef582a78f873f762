// End to end on the PyTorch-exported fixtures (tests/models/make_fixtures.py): compile each model
// with XNNPACK as the delegate backend, load and run it through the runtime (Program, Method),
// and compare with PyTorch's outputs (max |diff| <= 1e-4 * max |ref|) at batch 1 and 4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "tessera/backends/xnnpack/xnnpack_backend.h"
#include "tessera/compiler/backend_targets.h"
#include "tessera/compiler/compiler.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/delegate_info.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/compiler/program_runner.h"

namespace tessera::xnnpack {
namespace {

using compiler::testing::HostArray;

std::string fixture_dir() {
  const char* env = std::getenv("TESSERA_FIXTURES");
  return env ? env : TESSERA_FIXTURES_DIR;
}

struct Aligned {
  explicit Aligned(const std::vector<uint8_t>& bytes)
      : size(bytes.size()),
        data(static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64))) {
    std::copy(bytes.begin(), bytes.end(), data);
  }
  ~Aligned() { std::free(data); }
  size_t size;
  uint8_t* data;
};

class XnnpackModel : public ::testing::TestWithParam<std::string> {};

TEST_P(XnnpackModel, MatchesPyTorch) {
  const std::string dir = fixture_dir() + "/" + GetParam();
  if (!std::filesystem::exists(dir + "/model.onnx")) {
    GTEST_SKIP() << "fixture missing: " << dir << " (run tests/models/make_fixtures.py)";
  }
  compiler::CompileOptions options;
  options.import.dims = {{"batch", 1, 8}};
  auto targets = compiler::registry_backend_targets({"xnnpack"});
  ASSERT_TRUE(targets.ok()) << targets.status().message();
  options.backends = std::move(targets).value();
  auto compiled = compiler::compile_onnx_file(dir + "/model.onnx", options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  for (const auto& [backend, ops] : compiled->report.ops_by_backend) {
    std::string list;
    for (const auto& [op, n] : ops) list += " " + op + "x" + std::to_string(n);
    std::printf("  %s: %s:%s\n", GetParam().c_str(), backend.c_str(), list.c_str());
  }
  auto bytes = compiled->program.build();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Aligned file(*bytes);
  BufferDataLoader loader(file.data, file.size);
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  for (const char* suffix : {"", "_b4"}) {
    auto input = compiler::testing::read_npy(dir + "/input" + suffix + ".npy");
    auto ref = compiler::testing::read_npy(dir + "/output" + suffix + ".npy");
    ASSERT_TRUE(input.ok() && ref.ok());
    LoadOptions load;
    ASSERT_TRUE(load.set_dim("batch", input->dims[0]).is_ok());
    auto method = program->load_method("forward", nullptr, load);
    ASSERT_TRUE(method.ok()) << method.status().message();
    for (size_t d = 0; d < method->num_delegates(); ++d) {
      EXPECT_STREQ(method->delegate_info(d).backend, "xnnpack") << method->delegate_info(d).reason;
    }
    Tensor t(ScalarType::Float32, input->dims, input->data.data());
    ASSERT_TRUE(method->set_input(0, t).is_ok());
    Status st = method->execute();
    ASSERT_TRUE(st.is_ok()) << st.message();
    auto out = method->get_output(0);
    ASSERT_TRUE(out.ok());
    const Tensor& o = **out;
    ASSERT_EQ(static_cast<size_t>(o.numel()), ref->data.size());
    double max_ref = 0, max_diff = 0;
    for (size_t i = 0; i < ref->data.size(); ++i) {
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref->data[i])));
      const double diff = std::fabs(static_cast<double>(o.data_as<float>()[i]) - ref->data[i]);
      max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
    }
    std::printf("  %s%s: %zu delegates, max |diff| %.3g, max |ref| %.3g\n", GetParam().c_str(),
                suffix, method->num_delegates(), max_diff, max_ref);
    EXPECT_LE(max_diff, 1e-4 * max_ref) << GetParam() << suffix;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, XnnpackModel,
                         ::testing::Values("mlp", "mlp_op11", "mlp_op17", "transformer",
                                           "mobilenet_v2", "resnet18", "squeezenet1_1",
                                           "shufflenet_v2_x1_0", "mnasnet0_5", "efficientnet_b0",
                                           "regnet_y_400mf", "mobilenet_v3_small", "googlenet",
                                           "densenet121", "resnext50_32x4d"));

}  // namespace
}  // namespace tessera::xnnpack
