// Internal: the whole-method check of a measured selection (MethodSelection in delegate_info.h).
// Per-delegate timing cannot see what handing over between backends costs (another library's
// thread pool waking, cold caches, layout conversions at each boundary); this times the whole
// method with the per-delegate mix and with one backend for every delegate, and keeps the
// fastest end to end.
#pragma once

namespace tessera {
class Program;
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

struct MethodState;

/// After every delegate of `state` is loaded: when each was measured by this load (not read
/// from the selection cache), there are two or more and their chosen backends differ, times
/// Method::execute on deterministic inputs with the mix and with each backend accepted for
/// every delegate (LoadOptions::selection_budget_ms for the whole check), and moves every
/// delegate to a uniform backend that beats the mix by the variant margin (replaces_fastest).
/// Records the result in each delegate's selection report and rewrites their selection cache
/// entries. Never fails the load: a uniform assignment that cannot be initialised or run is
/// reported and the mix stays.
void check_whole_method(const Program& program, const LoadOptions& options, MethodState* state);

}  // namespace tessera::internal
