// The conformance suite (tests/backends/common/conformance.h) on the portable backend: the
// portable kernels run as one delegate (its init, memory plan and execute) against the same
// kernels run node by node.
#include "tests/backends/common/conformance.h"

namespace tessera::backend_testing {

inline constexpr const char kPortable[] = "portable";

TESSERA_INSTANTIATE_CONFORMANCE(kPortable);

}  // namespace tessera::backend_testing
