#include "tessera/backends/xnnpack/thread_pools.h"

#include <algorithm>

namespace tessera::xnnpack {

Result<PoolPtr> MethodPools::sized(size_t threads) {
  if (threads <= 1) return PoolPtr();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const PoolPtr& p : sized_) {
    if (pthreadpool_get_threads_count(p.get()) == threads) return p;
  }
  TESSERA_ASSIGN_OR_RETURN(PoolPtr pool, ThreadPools::create(threads));
  sized_.push_back(pool);
  return pool;
}

std::vector<PoolPtr> MethodPools::own() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sized_;
}

void MethodPools::note_use(const PoolPtr& pool) {
  if (!pool) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(used_.begin(), used_.end(), pool.get()) == used_.end()) used_.push_back(pool.get());
  several_.store(used_.size() > 1, std::memory_order_relaxed);
}

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

std::shared_ptr<MethodPools> ThreadPools::method(uint64_t instance) {
  if (instance == 0) return std::make_shared<MethodPools>();
  std::lock_guard<std::mutex> lock(mutex_);
  // Methods whose delegates are all gone leave expired entries; drop them as we go.
  for (auto it = methods_.begin(); it != methods_.end();) {
    it = it->second.expired() && it->first != instance ? methods_.erase(it) : std::next(it);
  }
  std::shared_ptr<MethodPools> pools = methods_[instance].lock();
  if (!pools) {
    pools = std::make_shared<MethodPools>();
    methods_[instance] = pools;
  }
  return pools;
}

std::vector<PoolPtr> ThreadPools::all() const {
  std::vector<std::shared_ptr<MethodPools>> methods;
  std::vector<PoolPtr> pools;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shared_) pools.push_back(shared_);
    for (const auto& [instance, weak] : methods_) {
      if (std::shared_ptr<MethodPools> m = weak.lock()) methods.push_back(std::move(m));
    }
  }
  for (const std::shared_ptr<MethodPools>& m : methods) {
    for (PoolPtr& p : m->own()) pools.push_back(std::move(p));
  }
  return pools;
}

size_t pool_threads(const PoolPtr& pool) {
  return pool ? pthreadpool_get_threads_count(pool.get()) : 1;
}

namespace {

void nothing(void*, size_t) {}

}  // namespace

void park_workers(pthreadpool_t pool) {
  if (pool == nullptr) return;
  // A range of one item per thread, so that no worker is skipped.
  pthreadpool_parallelize_1d(pool, nothing, nullptr, pthreadpool_get_threads_count(pool),
                             PTHREADPOOL_FLAG_YIELD_WORKERS);
}

}  // namespace tessera::xnnpack
