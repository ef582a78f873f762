// ThreadPools: the pthreadpools XNNPACK delegates run on. One pool is shared by every delegate
// whose num_threads comes from the global scope (or the default); a delegate given num_threads
// at load or delegate scope gets its own. Pools are reference counted: a delegate keeps the pool
// it was initialised with until it is destroyed, so replacing the shared pool (after the global
// value changed) never affects a running delegate.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include <pthreadpool.h>

#include "tessera/core/result.h"

namespace tessera::xnnpack {

using PoolPtr = std::shared_ptr<struct pthreadpool>;

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

 private:
  mutable std::mutex mutex_;
  PoolPtr shared_;
  size_t shared_threads_ = 0;
};

/// Worker count of `pool` (1 for null).
size_t pool_threads(const PoolPtr& pool);

}  // namespace tessera::xnnpack
