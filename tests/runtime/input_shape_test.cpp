// Symbolic dims taken from the shapes of the inputs the application will give
// (LoadOptions::set_input_shape): inferred values, bounds, contradictions with set_dim and
// between inputs, rank and constant mismatches, and the hint set_input gives afterwards.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

using testing::AlignedBuffer;

#define EXPECT_MESSAGE(status, text) EXPECT_EQ(std::string((status).message()), std::string(text))

// forward(a: float32[batch, 4], b: float32[batch, 4], c: float32[2 * batch, 3]) = (a + b, relu(c)),
// batch in [1, 8].
ir::ProgramBuilder two_input_program() {
  ir::ProgramBuilder pb;
  ir::MethodBuilder& m = pb.add_method("forward");
  const int batch = m.add_symbol("batch", 1, 8);
  ir::Dim b = ir::Dim::symbol(batch, 8);
  ir::Dim twice(16);
  twice.expr = {{fb::ShapeOp::Const, 2}, {fb::ShapeOp::Sym, batch}, {fb::ShapeOp::Mul, 0}};
  int a = m.add_input("a", ScalarType::Float32, {b, 4});
  int bb = m.add_input("b", ScalarType::Float32, {b, 4});
  int c = m.add_input("c", ScalarType::Float32, {twice, 3});
  int sum = m.add_tensor("sum", ScalarType::Float32, {b, 4});
  int r = m.add_tensor("r", ScalarType::Float32, {twice, 3});
  ir::Node add;
  add.op = fb::OpType::Add;
  add.name = "add";
  add.inputs = {a, bb};
  add.outputs = {sum};
  m.add_kernel(add);
  ir::Node relu;
  relu.op = fb::OpType::Relu;
  relu.name = "relu";
  relu.inputs = {c};
  relu.outputs = {r};
  m.add_kernel(relu);
  m.add_output(sum);
  m.add_output(r);
  if (!m.plan_memory().is_ok()) std::abort();
  return pb;
}

class InputShapes : public ::testing::Test {
 protected:
  void SetUp() override {
    auto single = testing::add_relu_mul_program(/*symbolic=*/true).build();
    ASSERT_TRUE(single.ok()) << single.status().message();
    single_buf_ = std::make_unique<AlignedBuffer>(*single);
    single_loader_ = std::make_unique<BufferDataLoader>(single_buf_->data(), single_buf_->size());
    auto p = Program::load(single_loader_.get());
    ASSERT_TRUE(p.ok()) << p.status().message();
    single_ = std::make_unique<Program>(std::move(*p));

    auto two = two_input_program().build();
    ASSERT_TRUE(two.ok()) << two.status().message();
    two_buf_ = std::make_unique<AlignedBuffer>(*two);
    two_loader_ = std::make_unique<BufferDataLoader>(two_buf_->data(), two_buf_->size());
    auto q = Program::load(two_loader_.get());
    ASSERT_TRUE(q.ok()) << q.status().message();
    two_ = std::make_unique<Program>(std::move(*q));
  }

  std::unique_ptr<AlignedBuffer> single_buf_, two_buf_;
  std::unique_ptr<BufferDataLoader> single_loader_, two_loader_;
  std::unique_ptr<Program> single_, two_;  // x: [batch, 4]; a, b: [batch, 4], c: [2*batch, 3]
};

TEST(LoadOptionsInputShape, ErrorsChangeNothing) {
  LoadOptions o;
  ASSERT_TRUE(o.set_input_shape("x", {3, 4}).is_ok());
  ASSERT_TRUE(o.set_input_shape(size_t{1}, {2}).is_ok());
  Status twice = o.set_input_shape("x", {3, 4});
  EXPECT_EQ(twice.code(), Error::InvalidArgument);
  EXPECT_MESSAGE(twice, "the shape of input 'x' is given twice");
  EXPECT_EQ(o.set_input_shape(size_t{1}, {2}).code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_input_shape("", {1}).code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_input_shape(std::string(40, 'n'), {1}).code(), Error::InvalidArgument);
  Status negative = o.set_input_shape("y", {2, -1});
  EXPECT_EQ(negative.code(), Error::InvalidArgument);
  EXPECT_MESSAGE(negative, "input 'y': shape [2, -1] has a negative size at dim 1");
  std::vector<int64_t> deep(kMaxDims + 1, 1);
  Status rank = o.set_input_shape("y", deep);
  EXPECT_EQ(rank.code(), Error::InvalidArgument);
  EXPECT_MESSAGE(rank, "input 'y': shape has rank 9; at most 8");
  ASSERT_EQ(o.input_shapes().size(), 2u);
  EXPECT_STREQ(o.input_shapes()[0].name, "x");
  EXPECT_EQ(o.input_shapes()[0].index, -1);
  EXPECT_EQ(o.input_shapes()[0].rank, 2u);
  EXPECT_EQ(o.input_shapes()[0].sizes[0], 3);
  EXPECT_EQ(o.input_shapes()[1].index, 1);
  for (size_t i = 2; i < LoadOptions::kMaxInputShapes; ++i) {
    ASSERT_TRUE(o.set_input_shape(i, {1}).is_ok());
  }
  Status full = o.set_input_shape("z", {1});
  EXPECT_EQ(full.code(), Error::InvalidArgument);
  EXPECT_MESSAGE(full, "more than 16 input shapes given");
  EXPECT_EQ(o.input_shapes().size(), LoadOptions::kMaxInputShapes);
}

TEST_F(InputShapes, DimIsInferredFromTheInput) {
  for (int64_t batch : {1, 3, 8}) {
    LoadOptions opts;
    ASSERT_TRUE(opts.set_input_shape("x", {batch, 4}).is_ok());
    auto m = single_->load_method("forward", nullptr, opts);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(*m->symbol_value("batch"), batch);
    std::vector<float> x(static_cast<size_t>(batch) * 4, 1.0f);
    int64_t sizes[] = {batch, 4};
    ASSERT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x.data())).is_ok());
    ASSERT_TRUE(m->execute().is_ok());
    EXPECT_EQ((*m->get_output(0))->size(0), batch);
  }
  // By position, and with an explicit value that agrees.
  LoadOptions by_index;
  ASSERT_TRUE(by_index.set_input_shape(size_t{0}, {5, 4}).is_ok());
  ASSERT_TRUE(by_index.set_dim("batch", 5).is_ok());
  auto m = single_->load_method("forward", nullptr, by_index);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(*m->symbol_value("batch"), 5);
}

TEST_F(InputShapes, InferredValueOutsideTheBounds) {
  LoadOptions opts;
  ASSERT_TRUE(opts.set_input_shape("x", {9, 4}).is_ok());
  auto m = single_->load_method("forward", nullptr, opts);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::InvalidArgument);
  EXPECT_MESSAGE(m.status(),
                 "symbolic dim 'batch' = 9 (dim 0 of input 'x', shape [9, 4]) is outside the "
                 "bounds [1, 8] the program was compiled for");
  LoadOptions zero;
  ASSERT_TRUE(zero.set_input_shape("x", {0, 4}).is_ok());
  EXPECT_EQ(single_->load_method("forward", nullptr, zero).error(), Error::InvalidArgument);
}

TEST_F(InputShapes, ExplicitDimContradictingTheInput) {
  LoadOptions opts;
  ASSERT_TRUE(opts.set_dim("batch", 1).is_ok());
  ASSERT_TRUE(opts.set_input_shape("x", {2, 4}).is_ok());
  auto m = single_->load_method("forward", nullptr, opts);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::InvalidArgument);
  EXPECT_MESSAGE(m.status(),
                 "symbolic dim 'batch' is set to 1 (LoadOptions::set_dim; tessera-run --dim "
                 "batch=1), but input 'x' has shape [2, 4], whose dim 0 makes it 2");
}

TEST_F(InputShapes, TwoInputsDisagree) {
  LoadOptions opts;
  ASSERT_TRUE(opts.set_input_shape("a", {2, 4}).is_ok());
  ASSERT_TRUE(opts.set_input_shape("b", {3, 4}).is_ok());
  auto m = two_->load_method("forward", nullptr, opts);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::InvalidArgument);
  EXPECT_MESSAGE(m.status(),
                 "the given input shapes disagree on symbolic dim 'batch': input 'a' has shape "
                 "[2, 4] (dim 0 = 2) and input 'b' has shape [3, 4] (dim 0 = 3)");

  LoadOptions agree;
  ASSERT_TRUE(agree.set_input_shape("a", {3, 4}).is_ok());
  ASSERT_TRUE(agree.set_input_shape("b", {3, 4}).is_ok());
  ASSERT_TRUE(agree.set_input_shape("c", {6, 3}).is_ok());
  auto ok = two_->load_method("forward", nullptr, agree);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*ok->symbol_value("batch"), 3);
  EXPECT_EQ((*ok->input(2))->size(0), 6);
}

// A dim that is an expression of a symbol (2 * batch) is checked, not solved.
TEST_F(InputShapes, ExpressionDimsAreCheckedNotSolved) {
  LoadOptions only_c;
  ASSERT_TRUE(only_c.set_input_shape("c", {6, 3}).is_ok());
  auto unsolved = two_->load_method("forward", nullptr, only_c);
  ASSERT_FALSE(unsolved.ok());
  EXPECT_NE(std::string(unsolved.status().message())
                .find("symbolic dim 'batch' needs a value between 1 and 8"),
            std::string::npos)
      << unsolved.status().message();

  LoadOptions odd;
  ASSERT_TRUE(odd.set_input_shape("a", {3, 4}).is_ok());
  ASSERT_TRUE(odd.set_input_shape("c", {5, 3}).is_ok());
  auto m = two_->load_method("forward", nullptr, odd);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error(), Error::ShapeMismatch);
  EXPECT_MESSAGE(m.status(),
                 "input 'c' is given shape [5, 3]; the program expects [6, 3] ([(2 * batch), 3] "
                 "with batch=3)");
}

TEST_F(InputShapes, RankConstantAndNameMismatches) {
  LoadOptions rank;
  ASSERT_TRUE(rank.set_input_shape("x", {2, 4, 1}).is_ok());
  auto r = single_->load_method("forward", nullptr, rank);
  EXPECT_EQ(r.error(), Error::ShapeMismatch);
  EXPECT_MESSAGE(r.status(),
                 "input 'x' has rank 2 in the program ([batch, 4]); the given shape [2, 4, 1] has "
                 "rank 3");

  LoadOptions constant;
  ASSERT_TRUE(constant.set_input_shape("x", {2, 5}).is_ok());
  auto c = single_->load_method("forward", nullptr, constant);
  EXPECT_EQ(c.error(), Error::ShapeMismatch);
  EXPECT_MESSAGE(c.status(),
                 "input 'x' is given shape [2, 5]; the program expects [2, 4] ([batch, 4] with "
                 "batch=2)");

  LoadOptions name;
  ASSERT_TRUE(name.set_input_shape("y", {2, 4}).is_ok());
  auto n = single_->load_method("forward", nullptr, name);
  EXPECT_EQ(n.error(), Error::NotFound);
  EXPECT_MESSAGE(n.status(),
                 "a shape is given for input 'y'; method 'forward' has no such input (inputs: "
                 "'x')");

  LoadOptions index;
  ASSERT_TRUE(index.set_input_shape(size_t{3}, {2, 4}).is_ok());
  auto i = single_->load_method("forward", nullptr, index);
  EXPECT_EQ(i.error(), Error::NotFound);
  EXPECT_MESSAGE(i.status(), "a shape is given for input 3; method 'forward' has 1 input(s)");

  LoadOptions both;
  ASSERT_TRUE(both.set_input_shape("x", {2, 4}).is_ok());
  ASSERT_TRUE(both.set_input_shape(size_t{0}, {2, 4}).is_ok());
  auto b = single_->load_method("forward", nullptr, both);
  EXPECT_EQ(b.error(), Error::InvalidArgument);
  EXPECT_MESSAGE(b.status(),
                 "the shape of input 'x' (input 0) is given twice, by name and by index");
}

TEST_F(InputShapes, SetInputAfterLoadSaysWhatTheMethodWasLoadedWith) {
  LoadOptions opts;
  ASSERT_TRUE(opts.set_input_shape("x", {1, 4}).is_ok());
  auto m = single_->load_method("forward", nullptr, opts);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<float> x(8, 0.0f);
  int64_t sizes[] = {2, 4};
  Status st = m->set_input(0, Tensor(ScalarType::Float32, sizes, x.data()));
  EXPECT_EQ(st.code(), Error::ShapeMismatch);
  EXPECT_MESSAGE(st,
                 "input 0 ('x') has shape [1, 4], got [2, 4] (the method was loaded with "
                 "batch=1; load it with LoadOptions::set_input_shape or set_dim for another "
                 "shape)");
}

TEST_F(InputShapes, MissingDimMentionsTheInputShapes) {
  auto m = single_->load_method("forward");
  ASSERT_FALSE(m.ok());
  EXPECT_MESSAGE(m.status(),
                 "symbolic dim 'batch' needs a value between 1 and 8: set it in LoadOptions "
                 "(tessera-run --dim batch=N), or give the shape of an input that has it as a dim "
                 "(LoadOptions::set_input_shape; tessera-run --input)");
}

}  // namespace
}  // namespace tessera
