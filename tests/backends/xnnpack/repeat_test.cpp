// A one-op delegate executed many times stays correct (run under ASan to check for leaks).
#include <gtest/gtest.h>

#include "harness.h"

namespace tessera::xnnpack::testing {
namespace {

using Op = fb::OpType;

TEST(XnnpackRepeat, OneOpDelegateThousandTimes) {
  GraphCase c = GraphCase::single(Op::Add, {{1, 16, 9, 9}, {1, 16, 9, 9}}, {1, 16, 9, 9});
  Session s;
  ASSERT_TRUE(s.init(c).is_ok());
  for (int i = 0; i < 1000; ++i) {
    std::vector<Floats> in = random_inputs(c, static_cast<uint32_t>(i));
    std::vector<Floats> got;
    ASSERT_TRUE(s.run(in, &got).is_ok());
    for (size_t k = 0; k < got[0].size(); ++k) {
      ASSERT_EQ(got[0][k], in[0][k] + in[1][k]) << "iteration " << i << " element " << k;
    }
  }
}

TEST(XnnpackRepeat, InitDestroyCycles) {
  GraphCase c = GraphCase::single(Op::Relu, {{2, 3, 5, 5}}, {2, 3, 5, 5});
  for (int i = 0; i < 200; ++i) {
    Session s;
    ASSERT_TRUE(s.init(c).is_ok());
    std::vector<Floats> in = random_inputs(c, 9), got;
    ASSERT_TRUE(s.run(in, &got).is_ok());
    for (size_t k = 0; k < got[0].size(); ++k) ASSERT_EQ(got[0][k], in[0][k] > 0 ? in[0][k] : 0.0f);
  }
}

TEST(XnnpackRepeat, OutputPointerMayChangeBetweenCalls) {
  GraphCase c = GraphCase::single(Op::Sigmoid, {{1, 4, 3, 3}}, {1, 4, 3, 3});
  std::vector<Floats> in = random_inputs(c, 10);
  Result<std::vector<Floats>> want = run_portable(c, in);
  ASSERT_TRUE(want.ok());
  // Two sessions run alternately; each re-binds its own output each call.
  Session a, b;
  ASSERT_TRUE(a.init(c).is_ok());
  ASSERT_TRUE(b.init(c).is_ok());
  for (int i = 0; i < 5; ++i) {
    std::vector<Floats> ga, gb;
    ASSERT_TRUE(a.run(in, &ga).is_ok());
    ASSERT_TRUE(b.run(in, &gb).is_ok());
    EXPECT_TRUE(close(ga, *want));
    EXPECT_TRUE(close(gb, *want));
  }
}

}  // namespace
}  // namespace tessera::xnnpack::testing
