// The OpenMP team size of a oneDNN delegate whose Method also runs another backend's CPU thread
// pool (BackendInitContext::cpu_pool_peers), e.g. a program partitioned between xnnpack and
// onednn.
//
// Such a Method runs oneDNN's primitives on the calling thread: idle libgomp workers busy-wait
// after every parallel region (GOMP_SPINCOUNT, about 300000 pause loops, milliseconds), and
// libgomp reads that setting once at process start with no way to change it at run time. A team
// of 2 next to XNNPACK's pool of 2 on 2 CPUs thus leaves a spinning OpenMP worker on the CPU the
// XNNPACK worker needs, and the reverse, at every delegate switch: ShuffleNetV2 at 2+2 threads
// ran 100x slower than at 1+1. With oneDNN on one thread, the Method's CPUs serve one pool only.
#pragma once

#include <string_view>

#include "tessera/core/span.h"

namespace tessera::onednn {

/// The team size for a delegate that asked for `requested` threads (auto already resolved):
/// `requested` when `peers` is empty, else 1. `explicit_request`: the value was set by the
/// application or program rather than left at auto; capping it logs a warning (once per
/// process) naming the peers and what to do instead, capping auto logs at info level.
int team_size_with_peers(int requested, bool explicit_request, Span<const std::string_view> peers,
                         std::string_view delegate_id);

}  // namespace tessera::onednn
