#include "tessera/backends/onednn/threading.h"

#include <atomic>
#include <string>

#include "tessera/core/log.h"

namespace tessera::onednn {

int team_size_with_peers(int requested, bool explicit_request, Span<const std::string_view> peers,
                         std::string_view delegate_id) {
  if (peers.empty() || requested <= 1) return requested;
  std::string names;
  for (std::string_view p : peers) {
    if (!names.empty()) names += ", ";
    names += p;
  }
  static std::atomic<bool> warned{false};
  if (explicit_request && !warned.exchange(true)) {
    TESSERA_LOG_WARNING(
        "onednn: delegate '%.*s': num_threads=%d runs on 1 thread: its method also runs the "
        "thread pool of %s, and idle OpenMP workers busy-wait after each primitive, starving "
        "that pool's workers (to give oneDNN the threads, run the method on onednn alone, e.g. "
        "--retarget xnnpack=onednn); further delegates are not reported",
        static_cast<int>(delegate_id.size()), delegate_id.data(), requested, names.c_str());
  } else {
    // Debug only: a mixed program logs this for each of its (often dozens of) oneDNN delegates,
    // and --explain-options and DelegateInfo already carry it as the derived value's reason.
    TESSERA_LOG_DEBUG(
        "onednn: delegate '%.*s': 1 thread instead of %d: its method also runs the "
        "thread pool of %s",
        static_cast<int>(delegate_id.size()), delegate_id.data(), requested, names.c_str());
  }
  return 1;
}

}  // namespace tessera::onednn
