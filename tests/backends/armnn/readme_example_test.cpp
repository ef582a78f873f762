// Compiles and runs the order-of-calls example of tessera/backends/armnn/README.md (CMake
// extracts its cpp block into readme_example.h): a program with one armnn delegate (Relu) loads
// and runs through load_on_armnn, and afterwards a runtime-wide option is InvalidState.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "readme_example.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/program_builder.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/method.h"

namespace {

using tessera::fb::OpType;

// "forward": y = relu(x) for x of 2 x 8, the Relu in an armnn delegate.
std::vector<uint8_t> relu_program() {
  tessera::ir::Graph g;
  g.values.resize(2);
  g.values[0].dims = {2, 8};
  g.values[1].dims = {2, 8};
  g.inputs = {0};
  g.outputs = {1};
  tessera::ir::Node relu;
  relu.op = OpType::Relu;
  relu.inputs = {0};
  relu.outputs = {1};
  g.nodes.push_back(relu);

  tessera::ir::ProgramBuilder pb;
  tessera::ir::MethodBuilder& m = pb.add_method("forward");
  const int x = m.add_input("x", tessera::ScalarType::Float32, {2, 8});
  const int y = m.add_tensor("y", tessera::ScalarType::Float32, {2, 8});
  tessera::ir::DelegateDesc d;
  d.id = "armnn#0";
  d.backend = "armnn";
  d.payload = tessera::ir::encode_graph(g);
  d.inputs = {x};
  d.outputs = {y};
  m.add_delegate(d);
  m.add_output(y);
  EXPECT_TRUE(m.plan_memory().is_ok());
  auto bytes = pb.build();
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

TEST(ArmnnReadme, OrderOfCallsExampleRuns) {
  const std::vector<uint8_t> bytes = relu_program();
  ASSERT_FALSE(bytes.empty());
  alignas(64) static uint8_t file[1 << 16];
  ASSERT_LE(bytes.size(), sizeof file);
  std::memcpy(file, bytes.data(), bytes.size());
  tessera::BufferDataLoader loader(file, bytes.size());
  auto program = tessera::Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();

  auto method = load_on_armnn(*program, "/nonexistent/armnn-tuning.bin");
  ASSERT_TRUE(method.ok()) << method.status().message();
  auto in = method->input(0);
  ASSERT_TRUE(in.ok());
  float* x = static_cast<float*>((*in)->data());
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i - 8);
  ASSERT_TRUE(method->execute().is_ok());
  auto out = method->get_output(0);
  ASSERT_TRUE(out.ok());
  const float* y = static_cast<const float*>((*out)->data());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], i < 8 ? 0.0f : static_cast<float>(i - 8)) << i;

  // Step 1 after step 3: the runtime exists.
  tessera::BackendOptions<1> late;
  ASSERT_TRUE(late.set(tessera::armnn_backend::kTuningLevel, int64_t{2}).is_ok());
  tessera::Status st = tessera::set_option("armnn", late.view());
  EXPECT_EQ(st.code(), tessera::Error::InvalidState) << st.message();
}

}  // namespace
