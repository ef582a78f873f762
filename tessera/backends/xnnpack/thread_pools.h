// ThreadPools: the pthreadpools XNNPACK delegates run on. One pool is shared by every delegate
// whose num_threads comes from the global scope (or the default). Delegates given num_threads at
// load or delegate scope (or by a compile spec) share a pool of that size with the other
// delegates of their Method (BackendInitContext::method_instance), never with another Method's.
//
// Why one pool per Method and not one per delegate: pthreadpool's workers busy-wait for about
// a million pause instructions (tens of milliseconds on recent Xeons) after each parallel
// operator unless told to yield. With a pool per delegate, the workers of the delegate that just
// finished keep spinning on the CPUs the next delegate's pool needs, at every delegate boundary:
// ShuffleNetV2 x0.5 (8 delegates between portable kernels) ran 240 ms at 2 threads against
// 1.5 ms at 1. One pool per Method leaves the spinning worker to be the one that runs next.
//
// Pools are reference counted: a delegate keeps the pool it was initialised with until it is
// destroyed, so replacing the shared pool (after the global value changed) never affects a
// running delegate.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <pthreadpool.h>

#include "tessera/core/result.h"

namespace tessera::xnnpack {

using PoolPtr = std::shared_ptr<struct pthreadpool>;

/// The pools one Method's delegates run on. Shared (by reference) by those delegates.
class MethodPools {
 public:
  /// The Method's pool of `threads` workers, created on first use; null for 1. Thread-safe.
  Result<PoolPtr> sized(size_t threads);

  /// Records that one of the Method's delegates runs on `pool` (null: none). Thread-safe.
  void note_use(const PoolPtr& pool);

  /// Whether the Method's delegates run on more than one pool: the workers of one then idle
  /// while another's run, so each delegate sends its own to sleep when it ends.
  bool several() const { return several_.load(std::memory_order_relaxed); }

  /// The Method's own pools (those sized() created). Thread-safe.
  std::vector<PoolPtr> own() const;

 private:
  mutable std::mutex mutex_;
  std::vector<PoolPtr> sized_;     // the Method's own pools, by size
  std::vector<const void*> used_;  // every pool a delegate of the Method runs on
  std::atomic<bool> several_{false};
};

class ThreadPools {
 public:
  /// A new pool of `threads` workers (the caller included); null for 1 (XNNPACK then runs on the
  /// calling thread). MemoryAllocationFailed if pthreadpool cannot start its threads.
  static Result<PoolPtr> create(size_t threads);

  /// The shared pool of `threads` workers, creating it (and dropping this object's reference to
  /// a shared pool of another size) if needed. Thread-safe.
  Result<PoolPtr> shared(size_t threads);

  /// Forgets the shared pool; the next shared() call creates a new one. Thread-safe.
  void reset_shared();

  /// Threads of the current shared pool, or 0 if there is none.
  size_t shared_threads() const;

  /// The pools of Method `instance` (BackendInitContext::method_instance), created on first
  /// use and kept while a delegate holds them; a new object for 0 (no Method: shares nothing).
  /// Thread-safe.
  std::shared_ptr<MethodPools> method(uint64_t instance);

  /// Every live pool: the shared one and each live Method's. Thread-safe.
  std::vector<PoolPtr> all() const;

 private:
  mutable std::mutex mutex_;
  PoolPtr shared_;
  size_t shared_threads_ = 0;
  std::map<uint64_t, std::weak_ptr<MethodPools>> methods_;
};

/// Worker count of `pool` (1 for null).
size_t pool_threads(const PoolPtr& pool);

/// Sends the idle workers of `pool` to sleep now instead of letting them busy-wait for the next
/// command (one empty parallel command with PTHREADPOOL_FLAG_YIELD_WORKERS). No-op for null.
void park_workers(pthreadpool_t pool);

}  // namespace tessera::xnnpack
