#include "tessera/compiler/sym_expr.h"

#include <gtest/gtest.h>

#include "tessera/ir/schema.h"
#include "tessera/ir/shape_expr.h"

namespace tessera::compiler {
namespace {

// Evaluates the lowered ir::Dim the way the runtime does (ir::eval_dim on a FlatBuffer).
int64_t eval_lowered(const ir::Dim& d, std::vector<int64_t> symbols) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<fb::ShapeTerm> terms;
  for (const ir::ShapeTerm& t : d.expr) terms.emplace_back(t.op, t.value);
  auto expr = terms.empty() ? 0 : b.CreateVectorOfStructs(terms);
  b.Finish(fb::CreateDim(b, d.value, expr));
  auto r = ir::eval_dim(flatbuffers::GetRoot<fb::Dim>(b.GetBufferPointer()), symbols);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : -1;
}

TEST(SymExpr, CanonicalFormMakesEqualProductsEqual) {
  SymExpr b = SymExpr::symbol(0);
  EXPECT_EQ(b * SymExpr(16), SymExpr(16) * b);
  EXPECT_EQ(b * SymExpr(2) + b * SymExpr(3), b * SymExpr(5));
  EXPECT_EQ(b - b, SymExpr(0));
  EXPECT_TRUE((b - b).is_const());
  EXPECT_NE(b, SymExpr::symbol(1));
}

TEST(SymExpr, ExactQuotientsSimplify) {
  SymExpr b = SymExpr::symbol(0);
  // [batch, 116, 28, 28] reshaped to [batch, 2, 58, -1]: -1 = batch*116*28*28 / (batch*2*58)
  SymExpr total = b * SymExpr(116 * 28 * 28);
  SymExpr known = b * SymExpr(2 * 58);
  EXPECT_EQ(SymExpr::floor_div(total, known), SymExpr(28 * 28));
  EXPECT_EQ(SymExpr::floor_div(b * SymExpr(64), SymExpr(4)), b * SymExpr(16));
  EXPECT_EQ(SymExpr::floor_div(SymExpr(7), SymExpr(2)), SymExpr(3));
  EXPECT_EQ(SymExpr::floor_div(b, b), SymExpr(1));
}

TEST(SymExpr, InexactQuotientStaysAFloorDivision) {
  SymExpr b = SymExpr::symbol(0);
  SymExpr q = SymExpr::floor_div(b + SymExpr(1), SymExpr(2));
  EXPECT_FALSE(q.is_const());
  std::vector<ir::Symbol> syms = {{"batch", 1, 9}};
  for (int64_t v = 1; v <= 9; ++v) {
    EXPECT_EQ(q.eval({v}).value(), (v + 1) / 2);
    EXPECT_EQ(eval_lowered(q.to_dim(syms), {v}), (v + 1) / 2);
  }
  EXPECT_EQ(q.upper_bound(syms), 5);
  // Nested constant divisions collapse: floor(floor(x/2)/3) = floor(x/6).
  EXPECT_EQ(SymExpr::floor_div(q, SymExpr(3)), SymExpr::floor_div(b + SymExpr(1), SymExpr(6)));
}

TEST(SymExpr, LoweredFormEvaluatesLikeTheExpression) {
  SymExpr b = SymExpr::symbol(0), s = SymExpr::symbol(1);
  std::vector<ir::Symbol> syms = {{"batch", 1, 8}, {"seq", 2, 5}};
  std::vector<SymExpr> exprs = {b * SymExpr(4),
                                b * s * SymExpr(3) + SymExpr(7),
                                s - SymExpr(1),
                                SymExpr(100) - b,
                                SymExpr::floor_div(b * s + SymExpr(3), SymExpr(4)) * SymExpr(2)};
  for (const SymExpr& e : exprs) {
    ir::Dim d = e.to_dim(syms);
    int64_t max_seen = 0;
    for (int64_t bv = 1; bv <= 8; ++bv) {
      for (int64_t sv = 2; sv <= 5; ++sv) {
        const int64_t want = e.eval({bv, sv}).value();
        EXPECT_EQ(eval_lowered(d, {bv, sv}), want) << e.to_string(&syms);
        max_seen = std::max(max_seen, want);
      }
    }
    EXPECT_EQ(d.value, max_seen) << e.to_string(&syms);
  }
}

// A lowered dim holds its bound: 100 - batch is bounded by 99 for batch in [1, 8], and
// exceeds it only below the symbol's range, which eval_dim_within_bound refuses.
TEST(SymExpr, EvaluatedDimIsHeldToItsBound) {
  ir::Dim d = (SymExpr(100) - SymExpr::symbol(0)).to_dim({{"batch", 1, 8}});
  ASSERT_EQ(d.value, 99);
  flatbuffers::FlatBufferBuilder b;
  std::vector<fb::ShapeTerm> terms;
  for (const ir::ShapeTerm& t : d.expr) terms.emplace_back(t.op, t.value);
  b.Finish(fb::CreateDim(b, d.value, b.CreateVectorOfStructs(terms)));
  const fb::Dim* dim = flatbuffers::GetRoot<fb::Dim>(b.GetBufferPointer());
  std::vector<int64_t> symbols = {1};
  EXPECT_EQ(ir::eval_dim_within_bound(dim, symbols).value(), 99);
  symbols = {0};
  EXPECT_EQ(ir::eval_dim(dim, symbols).value(), 100);
  auto r = ir::eval_dim_within_bound(dim, symbols);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Error::InvalidProgram);
  EXPECT_STREQ(r.status().message(), "evaluates to 100, above its bound 99");
  // Errors of the evaluation itself pass through unchanged.
  symbols = {};
  r = ir::eval_dim_within_bound(dim, symbols);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("names symbol 0"), std::string::npos)
      << r.status().message();
}

TEST(SymExpr, Printing) {
  std::vector<ir::Symbol> syms = {{"batch", 1, 8}};
  EXPECT_EQ((SymExpr::symbol(0) * SymExpr(16)).to_string(&syms), "batch*16");
  EXPECT_EQ((SymExpr::symbol(0) - SymExpr(2)).to_string(&syms), "-2 + batch");
  EXPECT_EQ(SymExpr(5).to_string(), "5");
}

}  // namespace
}  // namespace tessera::compiler
