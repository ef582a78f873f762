// The XNNPACK backend's option keys, typed (see option_schema() in xnnpack_backend.cpp for
// defaults, ranges, scopes and docs; docs/options.md lists them all).
//
//   BackendOptions<2> opts;
//   TESSERA_RETURN_IF_ERROR(opts.set(xnnpack::kNumThreads, 2));
//   TESSERA_RETURN_IF_ERROR(set_option("xnnpack", opts.view()));
#pragma once

#include <cstdint>

#include "tessera/backend/option_key.h"

namespace tessera::xnnpack {

/// Worker threads; 0 = DeviceInfo::recommended_threads(). Global scope: one pool shared by the
/// delegates that do not override it; load/delegate scope (or a compile spec): one pool per
/// Method and size, shared by the Method's delegates.
inline constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
/// XNN_FLAG_YIELD_WORKERS: workers yield to the OS after each run instead of spinning.
inline constexpr OptionKey<bool> kYieldWorkers{"yield_workers"};
/// XNN_FLAG_HINT_SPARSE_INFERENCE.
inline constexpr OptionKey<bool> kSparseInference{"sparse_inference"};
/// XNN_FLAG_HINT_FP16_INFERENCE.
inline constexpr OptionKey<bool> kFp16Inference{"fp16_inference"};
/// Execute scope: report timings of this call through the execution context.
inline constexpr OptionKey<bool> kProfile{"profile"};

/// Not an option: the key of the derived value (DelegateInfo::derived) that says which pool a
/// delegate with more than one thread runs on: "process" (global or default num_threads),
/// "method" (set for the load, a delegate or by a compile spec: one pool per Method and size) or
/// "own" (no Method given), with the reason (thread_pools.h).
inline constexpr const char* kThreadPoolReport = "thread_pool";

}  // namespace tessera::xnnpack
