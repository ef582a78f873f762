// The conformance suite every backend shares (tests/backends/common/conformance.h), on the
// xnnpack backend: every op family; the cases the backend's supports_op rejects report SKIPPED with
// its reason.
#include "tests/backends/common/conformance.h"
#include "harness.h"

namespace tessera::backend_testing {

TESSERA_INSTANTIATE_CONFORMANCE(xnnpack::testing::kBackendName);

}  // namespace tessera::backend_testing
