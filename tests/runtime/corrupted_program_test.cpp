// A table of broken program files: each must give its specific error, never a crash or an
// out-of-bounds read (run under AddressSanitizer to prove the latter).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

using testing::AlignedBuffer;

Status load_bytes(const std::vector<uint8_t>& bytes, bool symbolic = false) {
  AlignedBuffer buf(bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  if (!program.ok()) return program.status();
  // A program that verifies must also load its methods cleanly (or fail with an error).
  for (size_t i = 0; i < program->num_methods(); ++i) {
    LoadOptions opts;
    if (symbolic) (void)opts.set_dim("batch", 2);
    auto m = program->load_method(*program->method_name(i), nullptr, opts);
    if (!m.ok()) return m.status();
  }
  return Status::ok();
}

std::vector<uint8_t> good_bytes(bool symbolic = false) {
  auto r = testing::add_relu_mul_program(symbolic).build();
  EXPECT_TRUE(r.ok());
  return *r;
}

// Writes through to a field of the (already built) program, for corruptions the builder
// cannot express.
const fb::Program* root(std::vector<uint8_t>& bytes) { return fb::GetSizePrefixedProgram(bytes.data()); }

template <typename T>
void poke(const void* where, T value) {
  std::memcpy(const_cast<void*>(where), &value, sizeof value);
}

const uint8_t* field(const void* table, flatbuffers::voffset_t vt) {
  return reinterpret_cast<const flatbuffers::Table*>(table)->GetAddressOf(vt);
}

TEST(CorruptedProgram, GoodProgramLoads) {
  Status st = load_bytes(good_bytes());
  EXPECT_TRUE(st.is_ok()) << st.message();
}

TEST(CorruptedProgram, EmptyAndTinyFiles) {
  EXPECT_EQ(load_bytes({}).code(), Error::Truncated);
  EXPECT_EQ(load_bytes({1, 2, 3, 4, 5, 6, 7, 8}).code(), Error::Truncated);
}

TEST(CorruptedProgram, WrongMagic) {
  auto bytes = good_bytes();
  std::memcpy(bytes.data() + 8, "ONNX", 4);
  Status st = load_bytes(bytes);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_STREQ(st.message(), "not a Tessera program: magic is 'ONNX', expected 'TSR1'");
}

TEST(CorruptedProgram, SizePrefixPastTheEnd) {
  auto bytes = good_bytes();
  poke<uint32_t>(bytes.data(), static_cast<uint32_t>(bytes.size() + 100));
  EXPECT_EQ(load_bytes(bytes).code(), Error::Truncated);
}

TEST(CorruptedProgram, TruncatedAtEveryOffset) {
  const auto bytes = good_bytes();
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(len));
    Status st = load_bytes(cut);
    ASSERT_FALSE(st.is_ok()) << "truncated at " << len << " loaded";
    ASSERT_TRUE(st.code() == Error::Truncated || st.code() == Error::InvalidProgram)
        << len << ": " << error_name(st.code()) << " " << st.message();
  }
}

TEST(CorruptedProgram, TruncatedConstantSegment) {
  auto bytes = good_bytes();
  bytes.resize(bytes.size() - 8);
  Status st = load_bytes(bytes);
  EXPECT_EQ(st.code(), Error::Truncated);
  EXPECT_NE(std::string(st.message()).find("constant segment"), std::string::npos);
}

TEST(CorruptedProgram, NewerVersion) {
  auto bytes = good_bytes();
  poke<uint32_t>(field(root(bytes), fb::Program::VT_VERSION), 99);
  Status st = load_bytes(bytes);
  EXPECT_EQ(st.code(), Error::NotSupported);
  EXPECT_STREQ(st.message(), "program format version 99 is not supported (this runtime reads 1)");
}

TEST(CorruptedProgram, MisalignedAndOutOfRangeConstants) {
  {
    auto bytes = good_bytes();
    poke<uint64_t>(root(bytes)->constants()->Get(1), 8);  // offset field comes first
    Status st = load_bytes(bytes);
    EXPECT_EQ(st.code(), Error::InvalidProgram);
    EXPECT_STREQ(st.message(), "constant 1 offset 8 is not 64-byte aligned");
  }
  {
    auto bytes = good_bytes();
    poke<uint64_t>(root(bytes)->constants()->Get(1), 1 << 20);
    EXPECT_EQ(load_bytes(bytes).code(), Error::InvalidProgram);
  }
  {
    auto bytes = good_bytes();
    poke<uint64_t>(field(root(bytes), fb::Program::VT_SEGMENT_OFFSET), 72);
    EXPECT_EQ(load_bytes(bytes).code(), Error::InvalidProgram);
  }
}

// Corruptions expressed through the builder.
Status load_modified(const std::function<void(ir::ProgramBuilder&, ir::MethodBuilder&)>& edit,
                     bool symbolic = false) {
  ir::ProgramBuilder pb = testing::add_relu_mul_program(symbolic);
  edit(pb, pb.methods()[0]);
  auto bytes = pb.build();
  if (!bytes.ok()) return bytes.status();
  return load_bytes(*bytes, symbolic);
}

struct Case {
  const char* name;
  std::function<void(ir::ProgramBuilder&, ir::MethodBuilder&)> edit;
  Error code;
  const char* message_part;
};

TEST(CorruptedProgram, SemanticTable) {
  const Case cases[] = {
      {"node input out of range", [](auto&, auto& m) { m.chain[0].node.inputs[0] = 99; },
       Error::InvalidProgram, "refers to value 99"},
      {"node output negative", [](auto&, auto& m) { m.chain[1].node.outputs[0] = -5; },
       Error::InvalidProgram, "refers to value -5"},
      {"unknown op", [](auto&, auto& m) { m.chain[0].node.op = static_cast<fb::OpType>(999); },
       Error::InvalidProgram, "unknown op 999"},
      {"constant index out of range", [](auto&, auto& m) { m.graph.values[1].constant = 42; },
       Error::InvalidProgram, "refers to constant 42"},
      {"constant size mismatch", [](auto&, auto& m) { m.graph.values[1].dims = {5}; },
       Error::InvalidProgram, "needs 20 bytes but constant 0 has 16"},
      {"oversized shape",
       [](auto&, auto& m) {
         m.graph.values[3].dims = {int64_t{1} << 40, int64_t{1} << 40};
       },
       Error::InvalidProgram, "is too large"},
      {"rank above the maximum",
       [](auto&, auto& m) { m.graph.values[3].dims = std::vector<ir::Dim>(9, ir::Dim(1)); },
       Error::InvalidProgram, "rank 9"},
      {"negative dim", [](auto&, auto& m) { m.graph.values[3].dims[0] = -3; },
       Error::InvalidProgram, "negative"},
      {"arena offset outside the arena",
       [](auto&, auto& m) { m.graph.values[3].arena_offset = 1 << 20; }, Error::InvalidProgram,
       "outside the"},
      {"misaligned arena offset", [](auto&, auto& m) { m.graph.values[3].arena_offset = 3; },
       Error::InvalidProgram, "misaligned"},
      // Kernels write a step's outputs while they read its inputs: the plan never lets them
      // share bytes, and a program that does is refused (a fuzzer found a partial overlap that
      // reached a memcpy between overlapping ranges).
      {"output partly over its input",
       [](auto&, auto& m) { m.graph.values[3].arena_offset = m.graph.values[0].arena_offset + 16; },
       Error::InvalidProgram,
       "instruction 0: output value 3 [16, 48) shares arena bytes with input value 0 [0, 32)"},
      {"output in its input's slot",
       [](auto&, auto& m) { m.graph.values[4].arena_offset = m.graph.values[3].arena_offset; },
       Error::InvalidProgram, "output value 4"},
      {"arena too large", [](auto&, auto& m) { m.arena_size = uint64_t{1} << 50; },
       Error::InvalidProgram, "exceeds the limit"},
      {"unknown dtype",
       [](auto&, auto& m) { m.graph.values[3].dtype = static_cast<ScalarType>(77); },
       Error::InvalidProgram, "unknown dtype 77"},
      {"output is a constant", [](auto&, auto& m) { m.chain[0].node.outputs[0] = 1; },
       Error::InvalidProgram, "is a constant"},
      {"method input out of range", [](auto&, auto& m) { m.graph.inputs[0] = 12; },
       Error::InvalidProgram, "input 0 refers to value 12"},
      {"delegate index out of range",
       [](auto&, auto& m) {
         ir::InstructionDesc ins;
         ins.kind = fb::InstructionKind::Delegate;
         ins.delegate = 0;
         m.chain.push_back(ins);
         ir::DelegateDesc d;
         d.id = "stub#0";
         d.backend = "stub";
         d.payload = ir::encode_graph(ir::Graph{});
         m.delegates.push_back(d);
         m.chain.back().delegate = 3;
       },
       Error::InvalidProgram, "delegate index 3"},
      {"delegate payload garbage",
       [](auto&, auto& m) {
         ir::DelegateDesc d;
         d.id = "stub#0";
         d.backend = "stub";
         d.payload = std::vector<uint8_t>(64, 0xAB);
         m.add_delegate(d);
       },
       Error::InvalidProgram, "FlatBuffers verification"},
      {"duplicate delegate id",
       [](auto&, auto& m) {
         ir::DelegateDesc d;
         d.id = "stub#0";
         d.backend = "stub";
         d.payload = ir::encode_graph(ir::Graph{});
         m.add_delegate(d);
         m.add_delegate(d);
       },
       Error::InvalidProgram, "duplicate delegate id 'stub#0'"},
      {"payload constant out of range",
       [](auto&, auto& m) {
         ir::Graph g;
         ir::Value v;
         v.dims = {4};
         v.constant = 9;
         g.values.push_back(v);
         ir::DelegateDesc d;
         d.id = "stub#0";
         d.backend = "stub";
         d.payload = ir::encode_graph(g);
         m.add_delegate(d);
       },
       Error::InvalidProgram, "refers to constant 9"},
      {"delegate binds the wrong number of inputs",
       [](auto&, auto& m) {
         ir::Graph g;
         ir::Value v;
         v.dims = {2, 4};
         g.values.push_back(v);
         g.inputs = {0};
         g.outputs = {0};
         ir::DelegateDesc d;
         d.id = "stub#0";
         d.backend = "stub";
         d.payload = ir::encode_graph(g);
         d.inputs = {};
         d.outputs = {4};
         m.add_delegate(d);
       },
       Error::InvalidProgram, "binds 0 inputs"},
      {"duplicate method name", [](auto& pb, auto&) { pb.add_method("forward"); },
       Error::InvalidProgram, "duplicate method name"},
  };
  for (const Case& c : cases) {
    Status st = load_modified(c.edit);
    EXPECT_EQ(st.code(), c.code) << c.name << ": " << error_name(st.code()) << " " << st.message();
    EXPECT_NE(std::string(st.message()).find(c.message_part), std::string::npos)
        << c.name << ": '" << st.message() << "' lacks '" << c.message_part << "'";
  }
}

TEST(CorruptedProgram, SymbolTable) {
  Status st = load_modified([](auto&, auto& m) { m.graph.symbols[0].min = 9; }, true);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_NE(std::string(st.message()).find("bounds [9, 8]"), std::string::npos) << st.message();
  st = load_modified([](auto&, auto& m) { m.graph.values[0].dims[0].expr[0].value = 5; }, true);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_NE(std::string(st.message()).find("names symbol 5"), std::string::npos) << st.message();
  st = load_modified([](auto&, auto& m) { m.graph.values[0].dims[0].value = 4; }, true);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_NE(std::string(st.message()).find("above its bound 4"), std::string::npos) << st.message();
  st = load_modified(
      [](auto&, auto& m) {
        m.graph.values[0].dims[0].expr.push_back({fb::ShapeOp::Const, 0});
        m.graph.values[0].dims[0].expr.push_back({fb::ShapeOp::FloorDiv, 0});
      },
      true);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_NE(std::string(st.message()).find("divides by zero"), std::string::npos) << st.message();
}

TEST(CorruptedProgram, RandomByteFlipsNeverCrash) {
  const auto bytes = good_bytes();
  std::mt19937 rng(1234);
  int loaded = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto copy = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) copy[rng() % copy.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    Status st = load_bytes(copy);
    if (st.is_ok()) ++loaded;  // flips in padding or in constant data are harmless
  }
  SUCCEED() << loaded << " of 3000 corrupted files still loaded";
}

}  // namespace
}  // namespace tessera
