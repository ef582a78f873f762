#include <gtest/gtest.h>

#include "tessera/runtime/load_options.h"

namespace tessera {
namespace {

TEST(LoadOptions, DimsAndErrors) {
  LoadOptions o;
  EXPECT_TRUE(o.set_dim("batch", 4).is_ok());
  EXPECT_EQ(o.set_dim("batch", 5).code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_dim("", 5).code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_dim(std::string(40, 'x'), 5).code(), Error::InvalidArgument);
  int64_t v = 0;
  EXPECT_TRUE(o.find_dim("batch", &v));
  EXPECT_EQ(v, 4);
  EXPECT_FALSE(o.find_dim("seq", &v));
}

TEST(LoadOptions, RetargetAndFallback) {
  LoadOptions o;
  EXPECT_TRUE(o.add_retarget("xnnpack", "onednn").is_ok());
  EXPECT_EQ(o.add_retarget("xnnpack", "portable").code(), Error::InvalidArgument);
  EXPECT_EQ(o.retarget_of("xnnpack"), "onednn");
  EXPECT_EQ(o.retarget_of("opencl"), "opencl");
  EXPECT_TRUE(o.set_fallback("opencl, xnnpack,portable").is_ok());
  ASSERT_EQ(o.fallback_size(), 3u);
  EXPECT_EQ(o.fallback(1), "xnnpack");
  EXPECT_EQ(o.set_fallback("a,,b").code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_fallback("a,b,").code(), Error::InvalidArgument);
  EXPECT_EQ(o.set_fallback("a,b,a").code(), Error::InvalidArgument);
  EXPECT_EQ(o.fallback_size(), 3u);  // failed calls change nothing
}

}  // namespace
}  // namespace tessera
