// Conformance (conformance.h): the ops that select, compare or convert elements, over dtypes
// other than float32: Gather, Where, Cast, and the comparisons (Equal, Less, Greater).
// Non-float outputs are compared bit for bit with the portable kernels.
#include <cstdint>
#include <vector>

#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {
namespace {

using Op = fb::OpType;

std::vector<ir::Dim> as_dims(const std::vector<int64_t>& d) {
  return std::vector<ir::Dim>(d.begin(), d.end());
}

// Gather of a graph input `data` (dtype `dtype`) along `axis` with constant `indices`.
GraphCase gather_case(const std::vector<int64_t>& data, int64_t axis,
                      const std::vector<int64_t>& index_dims, const std::vector<int64_t>& indices,
                      ScalarType index_dtype = ScalarType::Int64,
                      ScalarType dtype = ScalarType::Float32) {
  GraphCase g;
  const int x = g.input(as_dims(data), dtype);
  const int i = g.constant_ints(index_dims, index_dtype, indices);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(data.size()) : axis);
  std::vector<int64_t> out(data.begin(), data.begin() + static_cast<int64_t>(a));
  out.insert(out.end(), index_dims.begin(), index_dims.end());
  out.insert(out.end(), data.begin() + static_cast<int64_t>(a) + 1, data.end());
  const int y = g.tensor(as_dims(out), dtype);
  g.node(Op::Gather, {x, i}, y).attrs.push_back(ir::Attr::make_int("axis", axis));
  g.output(y);
  return g;
}

GraphCase cast_case(const std::vector<int64_t>& dims, ScalarType from, ScalarType to) {
  GraphCase g;
  g.int_lo = -300;  // integer sources wrap and saturate in the narrower targets
  g.int_hi = 300;
  const int x = g.input(as_dims(dims), from);
  const int y = g.tensor(as_dims(dims), to);
  g.node(Op::Cast, {x}, y).attrs.push_back(ir::Attr::make_int("to", static_cast<int64_t>(to)));
  g.output(y);
  return g;
}

// Where(cond, x, y), all graph inputs, the output broadcast to `out`.
GraphCase where_case(const std::vector<int64_t>& cond, const std::vector<int64_t>& x,
                     const std::vector<int64_t>& y, const std::vector<int64_t>& out,
                     ScalarType dtype = ScalarType::Float32) {
  GraphCase g;
  const int c = g.input(as_dims(cond), ScalarType::Bool);
  const int a = g.input(as_dims(x), dtype);
  const int b = g.input(as_dims(y), dtype);
  const int o = g.tensor(as_dims(out), dtype);
  g.node(Op::Where, {c, a, b}, o);
  g.output(o);
  return g;
}

GraphCase compare_case(Op op, const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                       const std::vector<int64_t>& out, ScalarType dtype) {
  GraphCase g;
  g.int_lo = -2;  // small integers, so that Equal holds for some elements
  g.int_hi = 2;
  const int x = g.input(as_dims(a), dtype);
  const int y = g.input(as_dims(b), dtype);
  const int o = g.tensor(as_dims(out), ScalarType::Bool);
  g.node(op, {x, y}, o);
  g.output(o);
  return g;
}

}  // namespace

// ---- Gather -------------------------------------------------------------------------------------

TEST_P(Gather, ConstantIndices) {
  EXPECT_CONFORMS(gather_case({5, 4}, 0, {3}, {0, -1, 2}));
  EXPECT_CONFORMS(gather_case({2, 6, 3}, 1, {2, 2}, {5, 0, -6, 3}));
  EXPECT_CONFORMS(gather_case({3, 4}, -1, {}, {2}));  // a scalar index drops the axis
  EXPECT_CONFORMS(gather_case({4, 3, 2}, 2, {3}, {1, 0, 1}, ScalarType::Int32));
}

TEST_P(Gather, IndicesFromAGraphInput) {
  GraphCase g;
  g.int_lo = -7;
  g.int_hi = 6;
  const int x = g.input({7, 3});
  const int i = g.input({2, 2}, ScalarType::Int64);
  const int y = g.tensor({2, 2, 3});
  g.node(Op::Gather, {x, i}, y);
  g.output(y);
  EXPECT_CONFORMS(g);
}

TEST_P(Gather, IntegerData) {
  // A shape value: one dim of an int64 shape.
  EXPECT_CONFORMS(gather_case({4}, 0, {}, {1}, ScalarType::Int64, ScalarType::Int64));
  EXPECT_CONFORMS(gather_case({3, 5}, 1, {2}, {4, -5}, ScalarType::Int64, ScalarType::Int32));
}

// ---- Cast ---------------------------------------------------------------------------------------

TEST_P(Cast, FromFloat32) {
  for (ScalarType to : {ScalarType::Int64, ScalarType::Int32, ScalarType::Int8, ScalarType::UInt8,
                        ScalarType::Bool, ScalarType::Float16, ScalarType::Float32}) {
    SCOPED_TRACE(scalar_type_name(to));
    EXPECT_CONFORMS(cast_case({2, 3, 5}, ScalarType::Float32, to), -300.0f, 300.0f);
  }
}

TEST_P(Cast, ToFloat32AndBetweenIntegers) {
  for (ScalarType from : {ScalarType::Int64, ScalarType::Int32, ScalarType::Int8, ScalarType::UInt8,
                          ScalarType::Bool}) {
    SCOPED_TRACE(scalar_type_name(from));
    EXPECT_CONFORMS(cast_case({4, 6}, from, ScalarType::Float32));
  }
  EXPECT_CONFORMS(cast_case({7}, ScalarType::Int64, ScalarType::Int32));
  EXPECT_CONFORMS(cast_case({7}, ScalarType::Int32, ScalarType::Int64));
  EXPECT_CONFORMS(cast_case({7}, ScalarType::Int64, ScalarType::Int8));
  EXPECT_CONFORMS(cast_case({7}, ScalarType::Int32, ScalarType::Bool));
}

// ---- Where --------------------------------------------------------------------------------------

TEST_P(Where, Broadcasting) {
  EXPECT_CONFORMS(where_case({2, 3, 4}, {2, 3, 4}, {2, 3, 4}, {2, 3, 4}));
  EXPECT_CONFORMS(where_case({3, 1}, {1, 4}, {}, {3, 4}));
  EXPECT_CONFORMS(where_case({4}, {2, 3, 4}, {3, 1}, {2, 3, 4}));
}

TEST_P(Where, IntegerValuesAndConstants) {
  EXPECT_CONFORMS(where_case({2, 5}, {2, 5}, {5}, {2, 5}, ScalarType::Int64));
  GraphCase g;
  const int c = g.constant_ints({2, 3}, ScalarType::Bool, {1, 0, 0, 1, 1, 0});
  const int x = g.input({2, 3});
  const int y = g.constant({1}, {-0.5f});
  const int o = g.tensor({2, 3});
  g.node(Op::Where, {c, x, y}, o);
  g.output(o);
  EXPECT_CONFORMS(g);
}

TEST_P(Where, MaskFromAComparison) {
  // y = Where(x < 0, x * 0.1, x): the mask pattern exported models use.
  GraphCase g;
  const int x = g.input({2, 8});
  const int zero = g.constant({1}, {0.0f});
  const int mask = g.tensor({2, 8}, ScalarType::Bool);
  g.node(Op::Less, {x, zero}, mask);
  const int scale = g.constant({1}, {0.1f});
  const int scaled = g.tensor({2, 8});
  g.node(Op::Mul, {x, scale}, scaled);
  const int y = g.tensor({2, 8});
  g.node(Op::Where, {mask, scaled, x}, y);
  g.output(y);
  EXPECT_CONFORMS(g);
}

// ---- Equal, Less, Greater -----------------------------------------------------------------------

TEST_P(Compare, Float32) {
  EXPECT_CONFORMS(compare_case(op(), {2, 3, 4}, {2, 3, 4}, {2, 3, 4}, ScalarType::Float32));
  EXPECT_CONFORMS(compare_case(op(), {3, 1}, {5}, {3, 5}, ScalarType::Float32));
  // Against a constant operand on the left.
  GraphCase g;
  const int x = g.constant({4}, {-1.0f, 0.0f, 0.5f, 2.0f});
  const int y = g.input({3, 4});
  const int o = g.tensor({3, 4}, ScalarType::Bool);
  g.node(op(), {x, y}, o);
  g.output(o);
  EXPECT_CONFORMS(g, -2.0f, 2.0f);
}

TEST_P(Compare, Integers) {
  EXPECT_CONFORMS(compare_case(op(), {2, 3, 4}, {4}, {2, 3, 4}, ScalarType::Int64));
  EXPECT_CONFORMS(compare_case(op(), {5, 1}, {1, 6}, {5, 6}, ScalarType::Int32));
}

}  // namespace tessera::backend_testing
