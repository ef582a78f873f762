// The layout helpers: physical dims, memory-order equivalence, NCHW <-> NHWC conversions.
#include <gtest/gtest.h>

#include <vector>

#include "tessera/backends/xnnpack/layout.h"
#include "tessera/backends/xnnpack/thread_pools.h"

namespace tessera::xnnpack {
namespace {

Dims dims(std::initializer_list<int64_t> d) {
  std::vector<int64_t> v(d);
  return Dims(Span<const int64_t>(v.data(), v.size()));
}

TEST(XnnpackLayoutUtil, PhysicalDims) {
  EXPECT_EQ(physical_dims(dims({2, 3, 4, 5}), 4, Layout::ChannelsLast), dims({2, 4, 5, 3}));
  EXPECT_EQ(physical_dims(dims({3, 1, 1}), 4, Layout::ChannelsLast), dims({1, 1, 1, 3}));
  EXPECT_EQ(physical_dims(dims({5}), 3, Layout::Identity), dims({1, 1, 5}));
}

TEST(XnnpackLayoutUtil, SameMemoryOrderComparesAxesNotSizes) {
  // [1, 2, 2, 2]: equal sizes, different order.
  EXPECT_FALSE(same_memory_order(dims({1, 2, 2, 2}), 4, Layout::Identity, 4, Layout::ChannelsLast));
  EXPECT_TRUE(same_memory_order(dims({4, 8, 1, 1}), 4, Layout::Identity, 4, Layout::ChannelsLast));
  EXPECT_TRUE(same_memory_order(dims({1, 1, 5, 7}), 4, Layout::Identity, 4, Layout::ChannelsLast));
  EXPECT_FALSE(same_memory_order(dims({1, 3, 5, 1}), 4, Layout::Identity, 4, Layout::ChannelsLast));
  EXPECT_TRUE(same_memory_order(dims({6, 1, 1}), 3, Layout::Identity, 4, Layout::ChannelsLast));
  EXPECT_FALSE(same_memory_order(dims({6, 2, 1}), 3, Layout::Identity, 4, Layout::ChannelsLast));
}

TEST(XnnpackLayoutUtil, ConversionsRoundTrip) {
  Result<PoolPtr> pool = ThreadPools::create(2);
  ASSERT_TRUE(pool.ok());
  for (auto [n, c, s] : {std::tuple<int64_t, int64_t, int64_t>{1, 3, 50176},
                         {2, 5, 7},
                         {1, 16, 64},
                         {3, 33, 17},
                         {1, 1, 9},
                         {1, 64, 1},
                         {2, 512, 196}}) {
    std::vector<float> in(static_cast<size_t>(n * c * s)), mid(in.size()), back(in.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    for (pthreadpool_t p : {static_cast<pthreadpool_t>(nullptr), pool->get()}) {
      nchw_to_nhwc(in.data(), mid.data(), n, c, s, p);
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t k = 0; k < c; ++k) {
          for (int64_t x = 0; x < s; ++x) {
            ASSERT_EQ(mid[static_cast<size_t>((b * s + x) * c + k)],
                      in[static_cast<size_t>((b * c + k) * s + x)]);
          }
        }
      }
      nhwc_to_nchw(mid.data(), back.data(), n, c, s, p);
      ASSERT_EQ(back, in) << n << " " << c << " " << s;
    }
  }
}

TEST(XnnpackLayoutUtil, Permute) {
  const float in[6] = {0, 1, 2, 3, 4, 5};  // [2, 3]
  float out[6];
  const int perm[2] = {1, 0};
  permute(in, dims({2, 3}), perm, out);
  EXPECT_EQ(std::vector<float>(out, out + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

}  // namespace
}  // namespace tessera::xnnpack
