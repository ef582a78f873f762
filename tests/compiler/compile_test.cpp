#include "tessera/compiler/compiler.h"

#include <gtest/gtest.h>

#include "tessera/ir/schema.h"
#include "tests/compiler/test_util.h"

namespace tessera::compiler {
namespace {

using testing::compile_model;
using testing::OnnxBuilder;

// x -> Conv -> Relu -> Softmax -> Add(x') ; a fake backend takes Conv/Relu/Add only.
OnnxBuilder small_cnn() {
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), int64_t{2}, int64_t{4}, int64_t{4}});
  b.floats("w", {2, 2, 1, 1}, {1, 0, 0, 1});
  b.floats("b", {2}, {0.5f, -0.5f});
  b.node("Conv", {"x", "w", "b"}, {"c"});
  b.node("Relu", {"c"}, {"r"});
  b.node("Softmax", {"r"}, {"s"}).i("axis", 1);
  b.node("Add", {"s", "x"}, {"y"});
  b.output("y");
  return b;
}

BackendTarget fake_target(std::string name = "fake") {
  BackendTarget t;
  t.name = std::move(name);
  t.supports_op = [](const ir::Graph&, const ir::Node& n) {
    return n.op == fb::OpType::Conv || n.op == fb::OpType::Add;
  };
  t.check_spec = [](const std::string& key, const std::string& value) -> Status {
    if (key != "num_threads") return Status::error(Error::OptionUnknownKey, "fake: unknown option '%s'", key.c_str());
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
      return Status::error(Error::OptionTypeMismatch, "fake: num_threads wants an int, got '%s'", value.c_str());
    }
    return Status::ok();
  };
  return t;
}

// The FlatBuffer part of a program file (the constant segment follows it).
const fb::Program* verify(const std::vector<uint8_t>& bytes) {
  EXPECT_GE(bytes.size(), 8u);
  const size_t fb_size = flatbuffers::GetPrefixedSize(bytes.data()) + sizeof(flatbuffers::uoffset_t);
  EXPECT_LE(fb_size, bytes.size());
  flatbuffers::Verifier v(bytes.data(), fb_size);
  EXPECT_TRUE(fb::VerifySizePrefixedProgramBuffer(v));
  return fb::GetSizePrefixedProgram(bytes.data());
}

TEST(Compile, PortableOnlyProgram) {
  auto c = compile_model(small_cnn(), {{"batch", 1, 4}});
  ASSERT_OK(c);
  auto bytes = c->program.build();
  ASSERT_OK(bytes);
  const fb::Program* p = verify(bytes.value());
  ASSERT_EQ(p->methods()->size(), 1u);
  const fb::Method* m = p->methods()->Get(0);
  EXPECT_EQ(m->name()->str(), "forward");
  EXPECT_EQ(m->chain()->size(), 3u);  // Conv(+Relu), Softmax, Add
  EXPECT_EQ(m->delegates()->size(), 0u);
  ASSERT_EQ(m->symbols()->size(), 1u);
  EXPECT_EQ(m->symbols()->Get(0)->max(), 4);
  EXPECT_GT(m->arena_size(), 0u);
  EXPECT_EQ(c->report.arena_bytes, m->arena_size());
  EXPECT_GE(c->report.unplanned_bytes, c->report.arena_bytes);
  EXPECT_EQ(c->report.ops_by_backend["portable"]["Conv"], 1);
  EXPECT_EQ(c->report.passes.activations_fused, 1);
  EXPECT_EQ(p->segment_offset() % 64, 0u);
  for (const fb::ConstantRef* ref : *p->constants()) EXPECT_EQ(ref->offset() % 64, 0u);
}

TEST(Compile, DelegatesWithPayloadsAndCompileSpecs) {
  CompileOptions options;
  options.backends = {fake_target()};
  options.specs = {{"fake", "num_threads", "2"}};
  auto c = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_OK(c);
  ASSERT_EQ(c->report.delegates.size(), 2u);  // the Softmax between them splits Conv and Add
  EXPECT_EQ(c->report.delegates[0].id, "fake#0");
  EXPECT_EQ(c->report.delegates[1].id, "fake#1");
  EXPECT_EQ(c->report.ops_by_backend["portable"]["Softmax"], 1);
  auto bytes = c->program.build();
  ASSERT_OK(bytes);
  const fb::Method* m = verify(bytes.value())->methods()->Get(0);
  ASSERT_EQ(m->delegates()->size(), 2u);
  const fb::Delegate* d = m->delegates()->Get(0);
  EXPECT_EQ(d->backend()->str(), "fake");
  ASSERT_EQ(d->compile_specs()->size(), 1u);
  EXPECT_EQ(d->compile_specs()->Get(0)->key()->str(), "num_threads");
  flatbuffers::Verifier v(d->payload()->data(), d->payload()->size());
  ASSERT_TRUE(v.VerifyBuffer<fb::Graph>(nullptr));
  const fb::Graph* payload = flatbuffers::GetRoot<fb::Graph>(d->payload()->data());
  ASSERT_EQ(payload->nodes()->size(), 1u);
  EXPECT_EQ(payload->nodes()->Get(0)->op(), fb::OpType::Conv);
  EXPECT_EQ(payload->nodes()->Get(0)->activation(), fb::Activation::Relu);
  EXPECT_EQ(payload->symbols()->size(), 1u);
  // The conv's weight is a program constant referenced from the payload.
  int constants = 0;
  for (const fb::Value* val : *payload->values()) constants += val->constant() >= 0;
  EXPECT_EQ(constants, 2);
  // The method chain: delegate, kernel, delegate.
  ASSERT_EQ(m->chain()->size(), 3u);
  EXPECT_EQ(m->chain()->Get(0)->kind(), fb::InstructionKind::Delegate);
  EXPECT_EQ(m->chain()->Get(1)->kind(), fb::InstructionKind::Kernel);
  EXPECT_EQ(m->chain()->Get(2)->kind(), fb::InstructionKind::Delegate);
}

TEST(Compile, SelectableProgramsRecordEachDelegatesCandidates) {
  // "fake" and "also" take Conv and Add, "wide" the Softmax and Add but no Conv: unpinned, each
  // delegate lists the backends that take all its nodes (when at least two do); pinned, none.
  BackendTarget wide = fake_target("wide");
  wide.supports_op = [](const ir::Graph&, const ir::Node& n) {
    return n.op == fb::OpType::Add || n.op == fb::OpType::Softmax;
  };
  CompileOptions options;
  options.backends = {fake_target(), fake_target("also"), wide};
  auto pinned = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_OK(pinned);
  for (const DelegateReport& d : pinned->report.delegates) EXPECT_TRUE(d.candidates.empty()) << d.id;

  options.selectable = true;
  auto c = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_OK(c);
  auto bytes = c->program.build();
  ASSERT_OK(bytes);
  const fb::Method* m = verify(bytes.value())->methods()->Get(0);
  // Conv on fake (preferred); the Softmax only wide has, and the Add follows it there.
  ASSERT_EQ(m->delegates()->size(), 2u);
  const fb::Delegate* conv = m->delegates()->Get(0);
  EXPECT_EQ(conv->backend()->str(), "fake");
  ASSERT_NE(conv->candidates(), nullptr);
  ASSERT_EQ(conv->candidates()->size(), 2u);
  EXPECT_EQ(conv->candidates()->Get(0)->str(), "fake");
  EXPECT_EQ(conv->candidates()->Get(1)->str(), "also");
  const fb::Delegate* rest = m->delegates()->Get(1);
  EXPECT_EQ(rest->backend()->str(), "wide");
  EXPECT_EQ(rest->candidates(), nullptr);  // only wide takes the Softmax: pinned
  EXPECT_EQ(c->report.delegates[0].candidates, (std::vector<std::string>{"fake", "also"}));
  // tessera-compile --json shows them.
  const std::string json = report_to_json(c->report);
  EXPECT_NE(json.find("\"candidates\": [\n        \"fake\",\n        \"also\"\n      ]"),
            std::string::npos)
      << json;
}

// A selectable compile does not leave a leading run of ops as a delegate of its own when the
// backend of everything after it takes them too: the Conv, which "fake" prefers, joins "wide",
// which also takes it and has the Softmax after it (ShuffleNetV2's stem and its first channel
// shuffle). Pinned, the preference stands.
TEST(Compile, SelectableLeadingOpsJoinTheBackendAfterThem) {
  BackendTarget wide = fake_target("wide");
  wide.supports_op = [](const ir::Graph&, const ir::Node& n) {
    return n.op == fb::OpType::Conv || n.op == fb::OpType::Add || n.op == fb::OpType::Softmax;
  };
  CompileOptions options;
  options.backends = {fake_target(), wide};
  auto pinned = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_OK(pinned);
  EXPECT_EQ(pinned->report.delegates.size(), 3u);
  options.selectable = true;
  auto c = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_OK(c);
  ASSERT_EQ(c->report.delegates.size(), 1u);
  EXPECT_EQ(c->report.delegates[0].backend, "wide");
}

TEST(Compile, CompileSpecErrors) {
  CompileOptions options;
  options.backends = {fake_target()};
  options.specs = {{"xnnpack", "num_threads", "2"}};
  auto wrong_backend = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_FALSE(wrong_backend.ok());
  EXPECT_EQ(wrong_backend.error(), Error::OptionUnknownBackend);
  options.specs = {{"fake", "num_thread", "2"}};
  auto bad_key = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.error(), Error::OptionUnknownKey);
  options.specs = {{"fake", "num_threads", "many"}};
  auto bad_value = compile_model(small_cnn(), {{"batch", 1, 4}}, options);
  ASSERT_FALSE(bad_value.ok());
  EXPECT_EQ(bad_value.error(), Error::OptionTypeMismatch);
}

TEST(Compile, ParseCompileSpec) {
  auto s = parse_compile_spec("xnnpack.num_threads=4");
  ASSERT_OK(s);
  EXPECT_EQ(s->backend, "xnnpack");
  EXPECT_EQ(s->key, "num_threads");
  EXPECT_EQ(s->value, "4");
  auto empty_value = parse_compile_spec("opencl.cache_dir=");
  ASSERT_OK(empty_value);
  EXPECT_EQ(empty_value->value, "");
  for (const char* bad : {"xnnpack", "xnnpack.num_threads", ".k=v", "x.=v", "k=v"}) {
    EXPECT_FALSE(parse_compile_spec(bad).ok()) << bad;
  }
}

TEST(Compile, ReportJson) {
  auto c = compile_model(small_cnn(), {{"batch", 1, 4}});
  ASSERT_OK(c);
  const std::string json = report_to_json(c->report);
  for (const char* key : {"\"ops_by_backend\"", "\"delegates\"", "\"arena_bytes\"", "\"constants_bytes\"",
                          "\"portable\"", "\"batch\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

// A program the compiler writes must load: the loader rejects tensors of rank above kMaxDims,
// so the compiler does too, naming the tensor (the onnx_compile fuzz target found programs
// that compiled and then failed Program::load).
TEST(Compile, RankAboveMaxDimsIsNotSupported) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1},
                int64_t{1}, int64_t{2}});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", {});
  auto c = compile_model(b);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), Error::NotSupported);
  EXPECT_STREQ(c.status().message(), "tensor 'x' has rank 9; Tessera tensors have at most 8 dims");
}

// Found by fuzz/onnx_compile (fuzz/corpus/onnx_compile/regression-empty-tensor-huge-dims): an
// empty int64 initializer [1, 34359738240, 0, 0] (Gather's indices there, which gave an output
// of the same dims): no elements, but the loader refuses a tensor whose non-zero dims are
// 256 GiB, so the compiler must not write it.
TEST(Compile, FuzzRegressionEmptyTensorWithHugeDimsIsNotSupported) {
  OnnxBuilder b(13);
  b.input("x", {int64_t{3}}, onnx::TensorProto::INT64);
  b.ints("idx", {1, 34359738240, 0, 0}, {});
  b.node("Gather", {"x", "idx"}, {"y"}).i("axis", 0);
  b.output("y", {}, onnx::TensorProto::INT64);
  auto c = compile_model(b);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), Error::NotSupported);
  EXPECT_STREQ(c.status().message(),
               "tensor 'idx': its non-zero dims need more than 68719476736 bytes, the most a "
               "Tessera tensor may have");
}

}  // namespace
}  // namespace tessera::compiler
