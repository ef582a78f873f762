// XNNPACK's mid-size buffers (packed weights, indirection buffers: 64 KiB to 1 MiB) come from the
// backend's ChunkPool (tessera/core/chunk_pool.h) and go back with the delegate.
#include <gtest/gtest.h>

#include "harness.h"
#include "tessera/backend/registry.h"
#include "tessera/core/chunk_pool.h"
#include "tessera/core/large_buffer.h"
#include "tests/backends/common/conv_cases.h"

namespace tessera::xnnpack::testing {
namespace {

using backend_testing::conv_case;
using backend_testing::ConvCfg;

class XnnpackMemory : public ::testing::Test {
 protected:
  // As in a release build, under AddressSanitizer too: chunks are mapped. Restored even when an
  // assertion ends the test early.
  void SetUp() override { tessera::internal::set_large_buffer_threshold(ChunkPool::kChunkBytes); }
  void TearDown() override { tessera::internal::set_large_buffer_threshold(0); }
};

TEST_F(XnnpackMemory, MidSizeBuffersShareHugePageChunksAndGoWithTheDelegate) {
  Result<BackendInterface*> backend = get_backend(kBackendName);
  ASSERT_TRUE(backend.ok() && (*backend)->is_available());  // XNNPACK initialised before
  const size_t before = internal::pooled_chunks();
  {
    // 128 x 64 x 3 x 3 float weights: 288 KiB packed, and an indirection buffer at setup.
    ConvCfg cfg{1, 64, 16, 16, 128, 3, 3};
    cfg.pt = cfg.pl = cfg.pb = cfg.pr = 1;
    const GraphCase c = conv_case(cfg, 7);
    Session s;
    ASSERT_TRUE(s.init(c).is_ok());
    EXPECT_GT(internal::pooled_chunks(), before);
    const std::vector<Floats> inputs = random_inputs(c, 3);
    Result<std::vector<Floats>> want = run_portable(c, inputs);
    ASSERT_TRUE(want.ok()) << want.status().message();
    std::vector<Floats> got;
    ASSERT_TRUE(s.run(inputs, &got).is_ok());
    ASSERT_TRUE(s.run(inputs, &got).is_ok());
    EXPECT_TRUE(close(got, *want));
  }
  EXPECT_EQ(internal::pooled_chunks(), before);
}

}  // namespace
}  // namespace tessera::xnnpack::testing
