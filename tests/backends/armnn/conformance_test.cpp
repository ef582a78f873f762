// The conformance suite every backend shares (tests/backends/common/conformance.h), on the
// armnn backend: every op family; the cases the backend's supports_op rejects report SKIPPED with
// its reason.
#include "harness.h"
#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {

TESSERA_INSTANTIATE_CONFORMANCE(armnn_backend::testing::kBackendName);

}  // namespace tessera::backend_testing
