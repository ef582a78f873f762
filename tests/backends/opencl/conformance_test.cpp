// The conformance suite every backend shares (tests/backends/common/conformance.h), on the
// opencl backend: every op family; the cases the backend's supports_op rejects report SKIPPED
// with its reason. The run keeps compiled programs in a temporary cache_dir, so a kernel source
// that several cases share (the same op at other sizes) is compiled once per run.
#include "tests/backends/common/conformance.h"
#include "harness.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backends/opencl/options.h"
#include "tests/backends/common/test_files.h"

namespace tessera::backend_testing {
namespace {

class ProgramCacheEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    BackendOptions<1> options;
    ASSERT_TRUE(options.set(opencl::kCacheDir, std::string_view(dir_->path())).is_ok());
    const Status st = set_option(opencl::testing::kBackendName, options.view());
    ASSERT_TRUE(st.is_ok()) << st.message();
  }
  void TearDown() override { dir_.reset(); }

 private:
  std::unique_ptr<TempDir> dir_;
};

[[maybe_unused]] ::testing::Environment* const kProgramCache =
    ::testing::AddGlobalTestEnvironment(new ProgramCacheEnvironment);

}  // namespace

TESSERA_INSTANTIATE_CONFORMANCE(opencl::testing::kBackendName);

}  // namespace tessera::backend_testing
