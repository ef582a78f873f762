// Every validation path of prepare_kernel gives its specific error, naming op and node, and
// never crashes on hostile attributes or shapes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "kernel_test_util.h"

namespace tessera::kernel_test {
namespace {

// prepare_kernel on raw Tensors (for shapes a TestTensor cannot hold).
Status prepare_raw(const fb::Node* node, std::vector<const Tensor*> in, std::vector<Tensor*> out,
                   size_t arena = 1 << 20) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[arena]);
  MemoryAllocator alloc(buf.get(), arena);
  portable::KernelNode kn{node, {in.data(), in.size()}, {out.data(), out.size()}};
  auto k = portable::prepare_kernel(kn, alloc);
  return k.ok() ? Status::ok() : k.status();
}

struct ConvFixture {
  TestTensor x = TestTensor::random({1, 4, 5, 5}, 1);
  TestTensor w = TestTensor::random({8, 4, 2, 2}, 2);
  TestTensor y{ScalarType::Float32, {1, 8, 4, 4}};

  Status prepare(NodeSpec& spec) { return prepare_op(spec.node(), {&x, &w}, {&y}); }
};

TEST(Errors, NullNodeAndUnknownOp) {
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  expect_error(prepare_raw(nullptr, in, out), Error::InvalidArgument, "node is null");
  NodeSpec unknown(static_cast<OpType>(200), "weird");
  expect_error(prepare_raw(unknown.node(), in, out), Error::OperatorMissing, "op 200");
  EXPECT_FALSE(portable::has_kernel(static_cast<OpType>(200)));
  for (int op = static_cast<int>(fb::OpType::MIN); op <= static_cast<int>(fb::OpType::MAX); ++op) {
    EXPECT_TRUE(portable::has_kernel(static_cast<OpType>(op))) << fb::EnumNameOpType(static_cast<OpType>(op));
  }
}

TEST(Errors, ConvOutputShapeMessage) {
  ConvFixture f;
  f.y = TestTensor(ScalarType::Float32, {1, 8, 5, 5});
  NodeSpec spec(OpType::Conv, "conv1");
  expect_error(f.prepare(spec), Error::ShapeMismatch,
               "Conv node 'conv1': output shape [1, 8, 5, 5] does not match computed [1, 8, 4, 4]");
}

TEST(Errors, Arity) {
  TestTensor a = TestTensor::random({2}, 1);
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec add(OpType::Add, "add1");
  expect_error(prepare_op(add.node(), {&a}, {&y}), Error::InvalidProgram,
               "Add node 'add1': expected 2 inputs, got 1");
  expect_error(prepare_op(add.node(), {&a, &a, &a}, {&y}), Error::InvalidProgram, "got 3");
  ConvFixture f;
  NodeSpec conv(OpType::Conv, "c");
  expect_error(prepare_op(conv.node(), {&f.x, nullptr, &f.w}, {&f.y}), Error::InvalidProgram,
               "required input 1 is absent");
  NodeSpec relu(OpType::Relu, "r");
  TestTensor y2(ScalarType::Float32, {2});
  expect_error(prepare_op(relu.node(), {&a}, {&y, &y2}), Error::InvalidProgram, "expected 1 outputs, got 2");
  expect_error(prepare_op(relu.node(), {&a}, {}), Error::InvalidProgram, "expected 1 outputs, got 0");
  NodeSpec concat(OpType::Concat, "cat");
  concat.attr(attr_int("axis", 0));
  expect_error(prepare_op(concat.node(), {}, {&y}), Error::InvalidProgram, "expected at least 1 inputs, got 0");
  expect_error(prepare_op(concat.node(), {&a, nullptr, &a}, {&y}), Error::InvalidProgram,
               "input 1 is absent");
}

TEST(Errors, AttributeTypes) {
  ConvFixture f;
  NodeSpec strides(OpType::Conv, "c1");
  strides.attr(attr_int("strides", 1));
  expect_error(f.prepare(strides), Error::InvalidProgram,
               "Conv node 'c1': attribute 'strides' has type Int, expected Ints");
  NodeSpec group(OpType::Conv, "c1");
  group.attr(attr_float("group", 1.0f));
  expect_error(f.prepare(group), Error::InvalidProgram, "'group' has type Float, expected Int");
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec alpha(OpType::LeakyRelu, "lr");
  alpha.attr(attr_string("alpha", "0.1"));
  expect_error(prepare_op(alpha.node(), {&x}, {&y}), Error::InvalidProgram, "expected Float");
  NodeSpec mode(OpType::Gelu, "g");
  mode.attr(attr_int("approximate", 1));
  expect_error(prepare_op(mode.node(), {&x}, {&y}), Error::InvalidProgram, "expected String");
}

TEST(Errors, ConvAttributeValues) {
  ConvFixture f;
  struct Case {
    AttrSpec attr;
    Error code;
    const char* needle;
  };
  const Case cases[] = {
      {attr_ints("strides", {-1, 1}), Error::InvalidProgram, "'strides'[0] is -1, expected >= 1"},
      {attr_ints("strides", {0, 1}), Error::InvalidProgram, "'strides'[0] is 0"},
      {attr_ints("strides", {1, int64_t{1} << 40}), Error::InvalidProgram, "'strides'[1]"},
      {attr_ints("strides", {1}), Error::InvalidProgram, "'strides' has 1 entries, expected 2"},
      {attr_ints("dilations", {1, 0}), Error::InvalidProgram, "'dilations'[1] is 0"},
      {attr_ints("pads", {0, 0, -1, 0}), Error::InvalidProgram, "'pads'[2] is -1"},
      {attr_ints("pads", {0, 0}), Error::InvalidProgram, "'pads' has 2 entries, expected 4"},
      {attr_ints("pads", {INT64_MAX, 0, INT64_MAX, 0}), Error::InvalidProgram, "'pads'[0]"},
      {attr_int("group", 0), Error::InvalidProgram, "group 0 does not divide the 4 input channels"},
      {attr_int("group", -2), Error::InvalidProgram, "group -2"},
      {attr_int("group", 3), Error::InvalidProgram, "group 3 does not divide the 4 input channels"},
      {attr_int("group", 2), Error::ShapeMismatch, "weights have 4 channels per group, expected 2"},
      {attr_ints("dilations", {5, 1}), Error::InvalidProgram,
       "spatial dim 0: kernel extent 6 is larger than the padded input 5"},
      {attr_string("auto_pad", "SAME_UPPER"), Error::NotSupported, "auto_pad 'SAME_UPPER'"},
      {attr_ints("kernel_shape", {2}), Error::InvalidProgram, "'kernel_shape' has 1 entries"},
  };
  for (const Case& c : cases) {
    NodeSpec spec(OpType::Conv, "conv2");
    spec.attr(c.attr);
    expect_error(f.prepare(spec), c.code, c.needle);
  }
}

TEST(Errors, ConvShapes) {
  TestTensor x = TestTensor::random({1, 4, 3, 3}, 1);
  TestTensor w = TestTensor::random({2, 4, 4, 4}, 2);
  TestTensor y(ScalarType::Float32, {1, 2, 1, 1});
  NodeSpec spec(OpType::Conv, "big");
  expect_error(prepare_op(spec.node(), {&x, &w}, {&y}), Error::InvalidProgram,
               "spatial dim 0: kernel extent 4 is larger than the padded input 3");
  TestTensor w3 = TestTensor::random({2, 4, 3}, 3);
  expect_error(prepare_op(spec.node(), {&x, &w3}, {&y}), Error::ShapeMismatch,
               "weights have rank 3, input has rank 4");
  TestTensor w_ok = TestTensor::random({2, 4, 3, 3}, 4);
  TestTensor bias = TestTensor::random({3}, 5);
  expect_error(prepare_op(spec.node(), {&x, &w_ok, &bias}, {&y}), Error::ShapeMismatch,
               "bias has shape [3], expected [2]");
  TestTensor w_zero(ScalarType::Float32, {2, 4, 0, 3});
  expect_error(prepare_op(spec.node(), {&x, &w_zero}, {&y}), Error::InvalidProgram, "kernel size 0");
  TestTensor x6 = TestTensor::random({1, 1, 2, 2, 2, 2}, 6);
  TestTensor w6 = TestTensor::random({1, 1, 1, 1, 1, 1}, 7);
  TestTensor y6(ScalarType::Float32, {1, 1, 2, 2, 2, 2});
  expect_error(prepare_op(spec.node(), {&x6, &w6}, {&y6}), Error::NotSupported, "input rank 6");
}

TEST(Errors, ConvTranspose) {
  TestTensor x = TestTensor::random({1, 2, 3, 3}, 1);
  TestTensor w = TestTensor::random({2, 3, 3, 3}, 2);
  TestTensor y(ScalarType::Float32, {1, 3, 5, 5});
  NodeSpec op(OpType::ConvTranspose, "ct");
  op.attr(attr_ints("output_padding", {-1, 0}));
  expect_error(prepare_op(op.node(), {&x, &w}, {&y}), Error::InvalidProgram, "'output_padding'[0] is -1");
  NodeSpec shape(OpType::ConvTranspose, "ct");
  shape.attr(attr_ints("output_shape", {9, 5}));
  expect_error(prepare_op(shape.node(), {&x, &w}, {&y}), Error::InvalidProgram,
               "'output_shape'[0] is 9, must be in [1, 5]");
  NodeSpec pads(OpType::ConvTranspose, "ct");
  pads.attr(attr_ints("pads", {3, 0, 3, 0}));
  expect_error(prepare_op(pads.node(), {&x, &w}, {&y}), Error::InvalidProgram,
               "pads leave an output size of -1");
  TestTensor w_bad = TestTensor::random({3, 3, 3, 3}, 3);
  NodeSpec plain(OpType::ConvTranspose, "ct");
  expect_error(prepare_op(plain.node(), {&x, &w_bad}, {&y}), Error::ShapeMismatch,
               "weights have 3 input channels, input has 2");
}

TEST(Errors, AxesOutOfRange) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec softmax(OpType::Softmax, "sm");
  softmax.attr(attr_int("axis", 2));
  expect_error(prepare_op(softmax.node(), {&x}, {&y}), Error::InvalidProgram,
               "Softmax node 'sm': axis 2 is out of range for rank 2");
  NodeSpec concat(OpType::Concat, "cat");
  concat.attr(attr_int("axis", -3));
  expect_error(prepare_op(concat.node(), {&x, &x}, {&y}), Error::InvalidProgram, "axis -3 is out of range");
  NodeSpec no_axis(OpType::Concat, "cat");
  expect_error(prepare_op(no_axis.node(), {&x, &x}, {&y}), Error::InvalidProgram,
               "missing required attribute 'axis'");
  TestTensor idx = TestTensor::i64({1}, {0});
  NodeSpec gather(OpType::Gather, "g");
  gather.attr(attr_int("axis", INT64_MIN));
  expect_error(prepare_op(gather.node(), {&x, &idx}, {&y}), Error::InvalidProgram, "out of range");
  NodeSpec reduce(OpType::ReduceMean, "rm");
  reduce.attr(attr_ints("axes", {5}));
  expect_error(prepare_op(reduce.node(), {&x}, {&y}), Error::InvalidProgram, "axis 5 is out of range");
  NodeSpec flatten(OpType::Flatten, "f");
  flatten.attr(attr_int("axis", 3));
  expect_error(prepare_op(flatten.node(), {&x}, {&y}), Error::InvalidProgram, "axis 3 is out of range");
  NodeSpec split(OpType::Split, "s");
  split.attr(attr_int("axis", 2));
  expect_error(prepare_op(split.node(), {&x}, {&y}), Error::InvalidProgram, "axis 2 is out of range");
  NodeSpec ln(OpType::LayerNormalization, "ln");
  ln.attr(attr_int("axis", -3));
  TestTensor g = TestTensor::random({3}, 2);
  expect_error(prepare_op(ln.node(), {&x, &g}, {&y}), Error::InvalidProgram, "axis -3 is out of range");
  NodeSpec squeeze(OpType::Squeeze, "sq");
  squeeze.attr(attr_ints("axes", {-5}));
  expect_error(prepare_op(squeeze.node(), {&x}, {&y}), Error::InvalidProgram, "axis -5 is out of range");
}

TEST(Errors, TransposePerm) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {3, 2});
  const std::vector<int64_t> bad[] = {{0, 0}, {0, 2}, {-1, 0}, {0, 1, 2}, {1}};
  for (const auto& perm : bad) {
    NodeSpec spec(OpType::Transpose, "t");
    spec.attr(attr_ints("perm", perm));
    Status st = prepare_op(spec.node(), {&x}, {&y});
    EXPECT_EQ(st.code(), Error::InvalidProgram) << st.message();
    EXPECT_NE(std::strstr(st.message(), "perm"), nullptr) << st.message();
  }
  NodeSpec long_perm(OpType::Transpose, "t");
  long_perm.attr(attr_ints("perm", std::vector<int64_t>(20, 0)));
  expect_error(prepare_op(long_perm.node(), {&x}, {&y}), Error::InvalidProgram, "at most 8");
}

TEST(Errors, UnsupportedDtypesNameOpNodeAndDtype) {
  TestTensor a(ScalarType::Int8, {2});
  TestTensor y(ScalarType::Int8, {2});
  NodeSpec add(OpType::Add, "add7");
  expect_error(prepare_op(add.node(), {&a, &a}, {&y}), Error::NotSupported,
               "Add node 'add7': dtype int8 of input 0 is not supported");
  TestTensor h(ScalarType::Float16, {1, 1, 3, 3});
  TestTensor hw(ScalarType::Float16, {1, 1, 1, 1});
  TestTensor hy(ScalarType::Float16, {1, 1, 3, 3});
  NodeSpec conv(OpType::Conv, "conv_h");
  expect_error(prepare_op(conv.node(), {&h, &hw}, {&hy}), Error::NotSupported,
               "Conv node 'conv_h': dtype float16 of input 0 is not supported");
  TestTensor b(ScalarType::Float16, {2});
  TestTensor by(ScalarType::Bool, {2});
  NodeSpec eq(OpType::Equal, "eq");
  expect_error(prepare_op(eq.node(), {&b, &b}, {&by}), Error::NotSupported, "dtype float16");
  TestTensor f = TestTensor::random({2}, 1);
  NodeSpec where(OpType::Where, "w");
  TestTensor fy(ScalarType::Float32, {2});
  expect_error(prepare_op(where.node(), {&f, &f, &f}, {&fy}), Error::NotSupported,
               "dtype float32 of input 0");
  TestTensor idx = TestTensor::random({1}, 2);
  NodeSpec gather(OpType::Gather, "g");
  expect_error(prepare_op(gather.node(), {&f, &idx}, {&fy}), Error::NotSupported,
               "dtype float32 of input 1");
}

TEST(Errors, DtypeConstraints) {
  TestTensor f = TestTensor::random({2}, 1);
  TestTensor i = TestTensor::i64({2}, {1, 2});
  TestTensor b(ScalarType::Bool, {2});
  NodeSpec eq(OpType::Equal, "eq");
  expect_error(prepare_op(eq.node(), {&f, &i}, {&b}), Error::InvalidProgram,
               "input 1 has dtype int64, expected float32");
  TestTensor fy(ScalarType::Float32, {2});
  expect_error(prepare_op(eq.node(), {&f, &f}, {&fy}), Error::InvalidProgram,
               "output 0 has dtype float32, expected bool");
  NodeSpec relu(OpType::Relu, "r");
  TestTensor iy(ScalarType::Int64, {2});
  expect_error(prepare_op(relu.node(), {&f}, {&iy}), Error::InvalidProgram, "output 0 has dtype int64");
  NodeSpec concat(OpType::Concat, "cat");
  concat.attr(attr_int("axis", 0));
  TestTensor cy(ScalarType::Float32, {4});
  expect_error(prepare_op(concat.node(), {&f, &i}, {&cy}), Error::InvalidProgram, "input 1 has dtype int64");
  NodeSpec cast(OpType::Cast, "cast");
  expect_error(prepare_op(cast.node(), {&f}, {&iy}), Error::InvalidProgram, "missing required attribute 'to'");
  NodeSpec cast9(OpType::Cast, "cast");
  cast9.attr(attr_int("to", 9));
  expect_error(prepare_op(cast9.node(), {&f}, {&iy}), Error::InvalidProgram, "'to' is 9");
  NodeSpec cast_mismatch(OpType::Cast, "cast");
  cast_mismatch.attr(attr_int("to", 3));
  expect_error(prepare_op(cast_mismatch.node(), {&f}, {&iy}), Error::InvalidProgram,
               "output 0 has dtype int64, expected int32");
}

TEST(Errors, FusedActivation) {
  TestTensor f = TestTensor::random({2}, 1);
  TestTensor b(ScalarType::Bool, {2});
  NodeSpec eq(OpType::Equal, "eq");
  eq.activation(fb::Activation::Relu);
  expect_error(prepare_op(eq.node(), {&f, &f}, {&b}), Error::NotSupported,
               "Equal node 'eq': a fused activation needs a float32 output, got bool");
  TestTensor y(ScalarType::Float32, {2});
  NodeSpec inverted(OpType::Add, "a");
  inverted.activation(fb::Activation::Clip, 1.0f, -1.0f);
  expect_error(prepare_op(inverted.node(), {&f, &f}, {&y}), Error::InvalidProgram,
               "fused Clip activation has an invalid range [1, -1]");
  NodeSpec nan(OpType::Add, "a");
  nan.activation(fb::Activation::Clip, NAN, 1.0f);
  expect_error(prepare_op(nan.node(), {&f, &f}, {&y}), Error::InvalidProgram, "invalid range");
  NodeSpec unknown(OpType::Add, "a");
  unknown.activation(static_cast<fb::Activation>(9));
  expect_error(prepare_op(unknown.node(), {&f, &f}, {&y}), Error::InvalidProgram,
               "unknown fused activation 9");
}

TEST(Errors, AllocatorExhausted) {
  TestTensor x = TestTensor::random({1, 8, 16, 16}, 1);
  TestTensor w = TestTensor::random({8, 8, 3, 3}, 2);
  TestTensor y(ScalarType::Float32, {1, 8, 14, 14});
  NodeSpec spec(OpType::Conv, "conv9");
  expect_error(prepare_op(spec.node(), {&x, &w}, {&y}, 512), Error::MemoryAllocationFailed,
               "Conv node 'conv9': allocator exhausted");
  expect_error(prepare_op(spec.node(), {&x, &w}, {&y}, 16), Error::MemoryAllocationFailed,
               "allocator exhausted");
}

TEST(Errors, Broadcasting) {
  TestTensor a = TestTensor::random({2, 3}, 1);
  TestTensor b = TestTensor::random({4}, 2);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec add(OpType::Add, "add");
  expect_error(prepare_op(add.node(), {&a, &b}, {&y}), Error::ShapeMismatch,
               "Add node 'add': shapes [2, 3] and [4] cannot be broadcast together");
  TestTensor c = TestTensor::random({3}, 3);
  TestTensor wrong(ScalarType::Float32, {3, 3});
  expect_error(prepare_op(add.node(), {&a, &c}, {&wrong}), Error::ShapeMismatch,
               "output shape [3, 3] does not match computed [2, 3]");
  TestTensor a9 = TestTensor::random({1, 1, 1, 1, 1, 1, 1, 1}, 4);
  TestTensor b9 = TestTensor::random({1, 1, 1, 1, 1, 1, 1, 2}, 5);
  TestTensor y9(ScalarType::Float32, {1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_TRUE(run_op(add.node(), {&a9, &b9}, {&y9}).is_ok());
}

TEST(Errors, GemmAndMatMul) {
  TestTensor a = TestTensor::random({2, 3}, 1);
  TestTensor b = TestTensor::random({3, 4}, 2);
  TestTensor y(ScalarType::Float32, {2, 4});
  NodeSpec trans(OpType::Gemm, "fc");
  trans.attr(attr_int("transA", 2));
  expect_error(prepare_op(trans.node(), {&a, &b}, {&y}), Error::InvalidProgram, "transA and transB must be 0 or 1");
  NodeSpec tb(OpType::Gemm, "fc");
  tb.attr(attr_int("transB", 1));
  expect_error(prepare_op(tb.node(), {&a, &b}, {&y}), Error::ShapeMismatch, "inner dims 3 and 4");
  TestTensor c = TestTensor::random({3}, 3);
  NodeSpec plain(OpType::Gemm, "fc");
  expect_error(prepare_op(plain.node(), {&a, &b, &c}, {&y}), Error::ShapeMismatch,
               "C shape [3] does not broadcast to [2, 4]");
  TestTensor a3 = TestTensor::random({1, 2, 3}, 4);
  expect_error(prepare_op(plain.node(), {&a3, &b}, {&y}), Error::InvalidProgram, "must be 2-D");
  TestTensor s = TestTensor::f32({}, {1});
  NodeSpec mm(OpType::MatMul, "mm");
  expect_error(prepare_op(mm.node(), {&s, &b}, {&y}), Error::InvalidProgram, "rank >= 1");
}

TEST(Errors, PoolAttributes) {
  TestTensor x = TestTensor::random({1, 1, 5, 5}, 1);
  TestTensor y(ScalarType::Float32, {1, 1, 3, 3});
  struct Case {
    std::vector<AttrSpec> attrs;
    Error code;
    const char* needle;
  };
  const Case cases[] = {
      {{}, Error::InvalidProgram, "'kernel_shape' has 0 entries, expected 2"},
      {{attr_ints("kernel_shape", {3, 0})}, Error::InvalidProgram, "'kernel_shape'[1] is 0"},
      {{attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {3, 0, 0, 0})}, Error::InvalidProgram,
       "must be smaller than the kernel extent 3"},
      {{attr_ints("kernel_shape", {3, 3}), attr_int("ceil_mode", 2)}, Error::InvalidProgram,
       "must be 0 or 1"},
      {{attr_ints("kernel_shape", {7, 3})}, Error::InvalidProgram, "kernel extent 7 is larger"},
      {{attr_ints("kernel_shape", {3, 3}), attr_string("auto_pad", "SAME_LOWER")}, Error::NotSupported,
       "auto_pad 'SAME_LOWER'"},
      {{attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {1, -2})}, Error::InvalidProgram,
       "'strides'[1] is -2"},
  };
  for (const Case& c : cases) {
    NodeSpec spec(OpType::AveragePool, "ap");
    for (const AttrSpec& a : c.attrs) spec.attr(a);
    expect_error(prepare_op(spec.node(), {&x}, {&y}), c.code, c.needle);
  }
  TestTensor x2 = TestTensor::random({2, 5}, 2);
  NodeSpec rank2(OpType::MaxPool, "mp");
  rank2.attr(attr_ints("kernel_shape", {2}));
  expect_error(prepare_op(rank2.node(), {&x2}, {&y}), Error::NotSupported, "input rank 2");
  NodeSpec valid(OpType::MaxPool, "mp");
  valid.attr(attr_ints("kernel_shape", {3, 3})).attr(attr_string("auto_pad", "VALID"));
  EXPECT_TRUE(run_op(valid.node(), {&x}, {&y}).is_ok());
}

TEST(Errors, SliceAndPadAttributes) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec lens(OpType::Slice, "sl");
  lens.attr(attr_ints("starts", {0, 0})).attr(attr_ints("ends", {1}));
  expect_error(prepare_op(lens.node(), {&x}, {&y}), Error::InvalidProgram, "must have the same length");
  NodeSpec repeated(OpType::Slice, "sl");
  repeated.attr(attr_ints("starts", {0, 0})).attr(attr_ints("ends", {1, 1})).attr(attr_ints("axes", {1, -1}));
  expect_error(prepare_op(repeated.node(), {&x}, {&y}), Error::InvalidProgram, "axis 1 is repeated");
  NodeSpec pads_len(OpType::Pad, "p");
  pads_len.attr(attr_ints("pads", {1, 1, 1}));
  expect_error(prepare_op(pads_len.node(), {&x}, {&y}), Error::InvalidProgram, "pads has 3 entries, expected 4");
  NodeSpec negative(OpType::Pad, "p");
  negative.attr(attr_ints("pads", {0, -2, 0, -2}));
  expect_error(prepare_op(negative.node(), {&x}, {&y}), Error::InvalidProgram, "negative");
  NodeSpec huge(OpType::Pad, "p");
  huge.attr(attr_ints("pads", {0, INT64_MAX, 0, INT64_MAX}));
  expect_error(prepare_op(huge.node(), {&x}, {&y}), Error::InvalidProgram, "pad value out of range");
  TestTensor e(ScalarType::Float32, {2, 0});
  TestTensor ey(ScalarType::Float32, {2, 2});
  NodeSpec reflect(OpType::Pad, "p");
  reflect.attr(attr_ints("pads", {0, 1, 0, 1})).attr(attr_string("mode", "reflect"));
  expect_error(prepare_op(reflect.node(), {&e}, {&ey}), Error::InvalidProgram, "cannot reflect-pad the empty axis 1");
}

TEST(Errors, OtherAttributeValues) {
  TestTensor x = TestTensor::random({2, 3}, 1);
  TestTensor y(ScalarType::Float32, {2, 3});
  NodeSpec gelu(OpType::Gelu, "g");
  gelu.attr(attr_string("approximate", "fast"));
  expect_error(prepare_op(gelu.node(), {&x}, {&y}), Error::InvalidProgram, "approximate is 'fast'");
  TestTensor g = TestTensor::random({3}, 2);
  NodeSpec eps(OpType::LayerNormalization, "ln");
  eps.attr(attr_float("epsilon", -1.0f));
  expect_error(prepare_op(eps.node(), {&x, &g}, {&y}), Error::InvalidProgram, "epsilon -1 must be finite");
  NodeSpec clip(OpType::Clip, "c");
  clip.attr(attr_float("min", NAN));
  expect_error(prepare_op(clip.node(), {&x}, {&y}), Error::InvalidProgram, "must not be NaN");
  NodeSpec keep(OpType::ReduceSum, "rs");
  keep.attr(attr_int("keepdims", 5));
  expect_error(prepare_op(keep.node(), {&x}, {&y}), Error::InvalidProgram, "keepdims");
  NodeSpec dup(OpType::Unsqueeze, "u");
  dup.attr(attr_ints("axes", {0, 0}));
  TestTensor uy(ScalarType::Float32, {1, 1, 2, 3});
  expect_error(prepare_op(dup.node(), {&x}, {&uy}), Error::InvalidProgram, "axis 0 is repeated");
  TestTensor rx = TestTensor::random({2, 3}, 3);
  TestTensor ry(ScalarType::Float32, {2, 3, 1});
  NodeSpec resize(OpType::Resize, "rs");
  expect_error(prepare_op(resize.node(), {&rx}, {&ry}), Error::ShapeMismatch,
               "output rank 3 does not match input rank 2");
}

TEST(Errors, TensorValidation) {
  NodeSpec relu(OpType::Relu, "r");
  float data[4] = {};
  const int64_t neg[] = {2, -1};
  Tensor bad(ScalarType::Float32, neg, data);
  const int64_t ok_sizes[] = {2, 2};
  Tensor out(ScalarType::Float32, ok_sizes, data);
  expect_error(prepare_raw(relu.node(), {&bad}, {&out}), Error::InvalidProgram,
               "Relu node 'r': input 0 has negative size -1 at dim 1");
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  Tensor big(ScalarType::Float32, huge, data);
  expect_error(prepare_raw(relu.node(), {&big}, {&out}), Error::InvalidProgram, "input 0 has too many elements");
  Tensor nhwc(ScalarType::Float32, ok_sizes, data);
  const uint8_t order[] = {1, 0};
  ASSERT_TRUE(nhwc.set_dim_order(order).is_ok());
  expect_error(prepare_raw(relu.node(), {&nhwc}, {&out}), Error::NotSupported, "non-default dim order");
  Tensor bad_out(ScalarType::Float32, neg, data);
  expect_error(prepare_raw(relu.node(), {&out}, {&bad_out}), Error::InvalidProgram, "output 0 has negative size");
}

}  // namespace
}  // namespace tessera::kernel_test

namespace tessera::kernel_test {
namespace {

// Parses "computed [a, b, c]" out of a ShapeMismatch message.
bool computed_shape(const char* message, std::vector<int64_t>* out) {
  const char* p = std::strstr(message, "computed [");
  if (p == nullptr) return false;
  p += std::strlen("computed [");
  out->clear();
  while (*p != ']' && *p != '\0') {
    char* end;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p) return false;
    out->push_back(v);
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return *p == ']';
}

// Random, mostly hostile attribute values. Every prepare must return (ok or an error); whenever
// it names the shape it computed, the kernel is prepared again with that shape and run, so the
// sanitizers check the run path for every geometry that validation accepts.
TEST(Errors, RandomAttributesNeverCrash) {
  std::mt19937 rng(1234);
  const int64_t edge[] = {-7, -3, -2, -1, 0, 1, 1, 1, 2, 2, 3, 4, 5, 9,
                          INT64_MAX, INT64_MIN, int64_t{1} << 31, (int64_t{1} << 31) - 1};
  auto value = [&] { return edge[rng() % (sizeof edge / sizeof edge[0])]; };
  auto list = [&](size_t max_len) {
    std::vector<int64_t> v(rng() % (max_len + 1));
    for (int64_t& e : v) e = value();
    return v;
  };
  struct OpAttrs {
    OpType op;
    std::vector<const char*> ints_attrs;
    std::vector<const char*> int_attrs;
    int inputs;  // 1: X; 2: X, W (Conv family) or X, indices (Gather)
  };
  const OpAttrs ops[] = {
      {OpType::Conv, {"strides", "dilations", "pads", "kernel_shape"}, {"group"}, 2},
      {OpType::ConvTranspose, {"strides", "dilations", "pads", "output_padding", "output_shape"}, {"group"}, 2},
      {OpType::MaxPool, {"kernel_shape", "strides", "dilations", "pads"}, {"ceil_mode"}, 1},
      {OpType::AveragePool, {"kernel_shape", "strides", "pads"}, {"ceil_mode", "count_include_pad"}, 1},
      {OpType::Slice, {"starts", "ends", "axes", "steps"}, {}, 1},
      {OpType::Pad, {"pads", "axes"}, {}, 1},
      {OpType::Transpose, {"perm"}, {}, 1},
      {OpType::Squeeze, {"axes"}, {}, 1},
      {OpType::Unsqueeze, {"axes"}, {}, 1},
      {OpType::ReduceSum, {"axes"}, {"keepdims", "noop_with_empty_axes"}, 1},
      {OpType::Softmax, {}, {"axis"}, 1},
      {OpType::Flatten, {}, {"axis"}, 1},
      {OpType::Gather, {}, {"axis"}, 2},
      {OpType::Split, {"split"}, {"axis"}, 1},
      {OpType::Concat, {}, {"axis"}, 1},
      {OpType::LayerNormalization, {}, {"axis"}, 2},
      {OpType::Cast, {}, {"to"}, 1},
  };
  int prepared = 0, ran = 0;
  for (const OpAttrs& o : ops) {
    for (int iter = 0; iter < 300; ++iter) {
      NodeSpec spec(o.op, "fuzz");
      for (const char* name : o.ints_attrs) {
        if (rng() % 3 != 0) spec.attr(attr_ints(name, list(6)));
      }
      for (const char* name : o.int_attrs) {
        if (rng() % 3 != 0) spec.attr(attr_int(name, value()));
      }
      if (o.op == OpType::Pad && rng() % 2) {
        static const char* const kModes[] = {"constant", "reflect", "edge"};
        spec.attr(attr_string("mode", kModes[rng() % 3]));
      }
      // X: rank 3 or 4 with small sizes; W and indices to match.
      std::vector<int64_t> xs = {1 + static_cast<int64_t>(rng() % 2), 2, 1 + static_cast<int64_t>(rng() % 5)};
      if (rng() % 2) xs.push_back(1 + rng() % 6);
      TestTensor x = TestTensor::random(xs, iter);
      std::vector<int64_t> ws = {2, 2};
      for (size_t d = 2; d < xs.size(); ++d) ws.push_back(1 + rng() % 3);
      TestTensor w = TestTensor::random(ws, iter + 1);
      TestTensor idx = TestTensor::i64({2}, {0, -1});
      TestTensor g = TestTensor::random({xs.back()}, iter + 2);
      std::vector<TestTensor*> in = {&x};
      if (o.inputs == 2) {
        in.push_back(o.op == OpType::Gather ? &idx : (o.op == OpType::LayerNormalization ? &g : &w));
      }
      TestTensor y(o.op == OpType::Cast ? ScalarType::Float32 : ScalarType::Float32, {1});
      Status st = prepare_op(spec.node(), in, {&y});
      std::vector<int64_t> shape;
      if (st.is_ok() || !computed_shape(st.message(), &shape)) continue;
      int64_t n = 1;
      bool valid = true;
      for (int64_t d : shape) {
        valid = valid && d >= 0 && d < (1 << 20);
        if (valid) n *= d;
      }
      // A computed shape is always a real shape.
      EXPECT_TRUE(valid) << fb::EnumNameOpType(o.op) << ": " << st.message();
      if (!valid || n > (1 << 20)) continue;
      TestTensor y2(ScalarType::Float32, shape);
      st = prepare_op(spec.node(), in, {&y2});
      if (!st.is_ok()) continue;
      ++prepared;
      st = run_op(spec.node(), in, {&y2});
      EXPECT_TRUE(st.is_ok()) << st.message();
      ++ran;
    }
  }
  EXPECT_GT(prepared, 50);  // the generator does reach the run path
  std::printf("random attributes: %d kernels prepared with their computed shape and run\n", ran);
}

}  // namespace
}  // namespace tessera::kernel_test

namespace tessera::kernel_test {
namespace {

TEST(Errors, RandomResizeNeverCrashes) {
  std::mt19937 rng(99);
  static const char* const kModes[] = {"nearest", "linear", "cubic", "bogus"};
  static const char* const kCtm[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nearest", "tf_crop_and_resize"};
  static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  static const float kScales[] = {0.5f, 1.0f, 2.0f, 3.7f, 1e-30f, 1e30f, 0.0f, -1.0f, INFINITY, NAN};
  int ran = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    const int rank = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> in, out;
    for (int d = 0; d < rank; ++d) {
      in.push_back(static_cast<int64_t>(rng() % 5));
      out.push_back(static_cast<int64_t>(rng() % 7));
    }
    NodeSpec spec(OpType::Resize, "rs");
    spec.attr(attr_string("mode", kModes[rng() % 4]));
    spec.attr(attr_string("coordinate_transformation_mode", kCtm[rng() % 6]));
    spec.attr(attr_string("nearest_mode", kNearest[rng() % 4]));
    if (rng() % 2) {
      std::vector<float> scales(rank);
      for (float& s : scales) s = kScales[rng() % 10];
      spec.attr(attr_floats("scales", scales));
    }
    TestTensor x = TestTensor::random(in, iter);
    TestTensor y(ScalarType::Float32, out);
    if (prepare_op(spec.node(), {&x}, {&y}).is_ok()) {
      EXPECT_TRUE(run_op(spec.node(), {&x}, {&y}).is_ok());
      ++ran;
    }
  }
  EXPECT_GT(ran, 100);
}

TEST(Errors, RandomBroadcastShapes) {
  std::mt19937 rng(7);
  int ran = 0;
  for (int iter = 0; iter < 500; ++iter) {
    std::vector<int64_t> a, b;
    const int ra = static_cast<int>(rng() % 5), rb = static_cast<int>(rng() % 5);
    for (int d = 0; d < ra; ++d) a.push_back(static_cast<int64_t>(rng() % 4));
    for (int d = 0; d < rb; ++d) b.push_back(static_cast<int64_t>(rng() % 4));
    TestTensor x = TestTensor::random(a, iter), z = TestTensor::random(b, iter + 1);
    TestTensor y(ScalarType::Float32, {1});
    NodeSpec spec(OpType::Pow, "p");
    Status st = prepare_op(spec.node(), {&x, &z}, {&y});
    std::vector<int64_t> shape;
    if (st.is_ok() || !computed_shape(st.message(), &shape)) continue;
    TestTensor y2(ScalarType::Float32, shape);
    EXPECT_TRUE(run_op(spec.node(), {&x, &z}, {&y2}).is_ok());
    ++ran;
  }
  EXPECT_GT(ran, 50);
}

}  // namespace
}  // namespace tessera::kernel_test
