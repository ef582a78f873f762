#include <gtest/gtest.h>

#include <cmath>

#include "tessera/core/evalue.h"
#include "tessera/core/scalar_type.h"
#include "tessera/core/tensor.h"

namespace tessera {
namespace {

TEST(ScalarType, SizesAndNames) {
  EXPECT_EQ(element_size(ScalarType::Float32), 4u);
  EXPECT_EQ(element_size(ScalarType::Float16), 2u);
  EXPECT_EQ(element_size(ScalarType::Int64), 8u);
  EXPECT_EQ(element_size(ScalarType::Bool), 1u);
  EXPECT_STREQ(scalar_type_name(ScalarType::UInt8), "uint8");
  EXPECT_TRUE(is_valid_scalar_type(6));
  EXPECT_FALSE(is_valid_scalar_type(7));
  EXPECT_FALSE(is_valid_scalar_type(-1));
}

TEST(ScalarType, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953f}) {
    EXPECT_EQ(half_to_float(float_to_half(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
}

TEST(Tensor, ShapeAndBytes) {
  float data[24];
  int64_t sizes[] = {2, 3, 4};
  Tensor t(ScalarType::Float32, sizes, data);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_default_dim_order());
  int64_t strides[3];
  t.contiguous_strides(strides);
  EXPECT_EQ(strides[0], 12);
  EXPECT_EQ(strides[1], 4);
  EXPECT_EQ(strides[2], 1);
  char buf[64];
  EXPECT_STREQ(format_sizes(t.sizes(), buf, sizeof buf), "[2, 3, 4]");
}

TEST(Tensor, RejectsBadSizesAndDimOrder) {
  Tensor t;
  int64_t neg[] = {2, -1};
  EXPECT_EQ(t.set_sizes(neg).code(), Error::InvalidArgument);
  int64_t too_many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(t.set_sizes(too_many).code(), Error::InvalidArgument);
  int64_t ok[] = {1, 3, 2, 2};
  ASSERT_TRUE(t.set_sizes(ok).is_ok());
  uint8_t nhwc[] = {0, 2, 3, 1};
  EXPECT_TRUE(t.set_dim_order(nhwc).is_ok());
  EXPECT_FALSE(t.is_default_dim_order());
  uint8_t dup[] = {0, 0, 1, 2};
  EXPECT_EQ(t.set_dim_order(dup).code(), Error::InvalidArgument);
}

TEST(EValue, Tags) {
  EXPECT_TRUE(EValue().is_none());
  EXPECT_EQ(EValue(int64_t{3}).to_int(), 3);
  EXPECT_TRUE(EValue(true).to_bool());
  EXPECT_DOUBLE_EQ(EValue(2.5).to_double(), 2.5);
  int64_t list[] = {1, 2};
  EValue l{Span<const int64_t>(list)};
  EXPECT_TRUE(l.is_int_list());
  EXPECT_EQ(l.to_int_list()[1], 2);
  float f = 1;
  int64_t s[] = {1};
  EValue t{Tensor(ScalarType::Float32, s, &f)};
  EXPECT_TRUE(t.is_tensor());
  EXPECT_EQ(t.to_tensor().numel(), 1);
  EXPECT_STREQ(evalue_tag_name(t.tag()), "tensor");
}

}  // namespace
}  // namespace tessera
