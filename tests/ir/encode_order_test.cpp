// The bytes a program encodes to do not depend on the compiler that built Tessera. A FlatBuffer
// is written back to front: whatever the builder is asked for first lands nearest the end. Two
// builder calls in one expression (two arguments of one call) run in an order C++ leaves
// unspecified, and GCC and clang take opposite ones, so programs written by a GCC and a clang
// build of tessera-compile differed (every model of the benchmark set, every backend but the
// portable one), and with them every hash made of their bytes (the selection cache's key). These
// tests pin the order of each pair that was written in one expression; GCC's order is the one
// kept, so that the programs it wrote keep their bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/program_builder.h"
#include "tessera/ir/schema.h"

namespace tessera {
namespace {

// Where `p` lies in `bytes`: its offset from the start.
ptrdiff_t at(const std::vector<uint8_t>& bytes, const void* p) {
  return static_cast<const uint8_t*>(p) - bytes.data();
}

TEST(EncodeOrder, GraphOutputsThenInputsThenNodes) {
  ir::Graph g;
  g.values.resize(3);
  ir::Node n;
  n.op = fb::OpType::Identity;
  n.inputs = {0};
  n.outputs = {1};
  g.nodes.push_back(n);
  g.inputs = {0};
  g.outputs = {1, 2};
  const std::vector<uint8_t> bytes = ir::encode_graph(g);
  const fb::Graph* f = flatbuffers::GetRoot<fb::Graph>(bytes.data());
  ASSERT_NE(f->nodes(), nullptr);
  ASSERT_NE(f->inputs(), nullptr);
  ASSERT_NE(f->outputs(), nullptr);
  // Asked for first, written last: outputs nearest the end, then inputs, then the nodes.
  EXPECT_GT(at(bytes, f->outputs()), at(bytes, f->inputs()));
  EXPECT_GT(at(bytes, f->inputs()), at(bytes, f->nodes()));
}

TEST(EncodeOrder, CompileSpecValueThenKeyAndDelegateOutputsThenInputs) {
  ir::ProgramBuilder p;
  ir::MethodBuilder& m = p.add_method("forward");
  const int x = m.add_input("x", ScalarType::Float32, {ir::Dim{4}});
  const int y = m.add_tensor("y", ScalarType::Float32, {ir::Dim{4}});
  const int z = m.add_tensor("z", ScalarType::Float32, {ir::Dim{4}});
  ir::DelegateDesc d;
  d.id = "stub#0";
  d.backend = "stub";
  d.payload = ir::encode_graph(ir::Graph{});
  d.compile_specs = {{"a-key", "a-value"}};
  d.inputs = {x};
  d.outputs = {y, z};
  m.delegates.push_back(d);
  ir::InstructionDesc ins;
  ins.kind = fb::InstructionKind::Delegate;
  ins.delegate = 0;
  m.chain.push_back(ins);
  m.add_output(y);
  m.add_output(z);
  Result<std::vector<uint8_t>> built = p.build();
  ASSERT_TRUE(built.ok()) << built.status().message();
  const std::vector<uint8_t>& bytes = *built;
  const fb::Program* program = fb::GetSizePrefixedProgram(bytes.data());
  ASSERT_NE(program->methods(), nullptr);
  const fb::Method* method = program->methods()->Get(0);
  ASSERT_NE(method->delegates(), nullptr);
  ASSERT_NE(method->chain(), nullptr);
  const fb::CompileSpec* spec = method->delegates()->Get(0)->compile_specs()->Get(0);
  ASSERT_NE(spec->value(), nullptr);
  EXPECT_EQ(spec->key()->str(), "a-key");
  EXPECT_GT(at(bytes, spec->value()), at(bytes, spec->key()));
  const fb::Instruction* call = method->chain()->Get(0);
  ASSERT_NE(call->inputs(), nullptr);
  ASSERT_NE(call->outputs(), nullptr);
  EXPECT_EQ(call->outputs()->size(), 2u);
  EXPECT_GT(at(bytes, call->outputs()), at(bytes, call->inputs()));
}

}  // namespace
}  // namespace tessera
