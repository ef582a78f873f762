#include "tessera/backends/xnnpack/thread_pools.h"

namespace tessera::xnnpack {

Result<PoolPtr> ThreadPools::create(size_t threads) {
  if (threads <= 1) return PoolPtr();
  pthreadpool_t pool = pthreadpool_create(threads);
  if (pool == nullptr) {
    return Status::error(Error::MemoryAllocationFailed,
                         "xnnpack: cannot create a thread pool of %zu threads", threads);
  }
  return PoolPtr(pool, pthreadpool_destroy);
}

Result<PoolPtr> ThreadPools::shared(size_t threads) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (shared_threads_ == threads) return shared_;
  TESSERA_ASSIGN_OR_RETURN(PoolPtr pool, create(threads));
  shared_ = std::move(pool);
  shared_threads_ = threads;
  return shared_;
}

void ThreadPools::reset_shared() {
  std::lock_guard<std::mutex> lock(mutex_);
  shared_.reset();
  shared_threads_ = 0;
}

size_t ThreadPools::shared_threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shared_threads_;
}

size_t pool_threads(const PoolPtr& pool) {
  return pool ? pthreadpool_get_threads_count(pool.get()) : 1;
}

}  // namespace tessera::xnnpack
