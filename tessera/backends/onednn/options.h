// The oneDNN backend's option keys, typed (defaults, ranges, scopes and docs are in the schema in
// onednn_backend.cpp; docs/options.md lists them all).
//
//   BackendOptions<1> opts;
//   TESSERA_RETURN_IF_ERROR(opts.set(onednn::kMaxCpuIsa, EnumValue{"avx2"}));
//   TESSERA_RETURN_IF_ERROR(set_option("onednn", opts.view()));  // before the first load
#pragma once

#include <cstdint>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_type.h"

namespace tessera::onednn {

/// Global, init-only: the highest ISA oneDNN may dispatch to (dnnl::set_max_cpu_isa), applied at
/// the backend's first init. get_option reports the effective ISA once the backend initialised.
inline constexpr OptionKey<EnumValue> kMaxCpuIsa{"max_cpu_isa"};
/// OpenMP team size for the delegate's primitives; 0 = DeviceInfo::recommended_threads().
inline constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
/// fp32, bf16 (native bf16 required) or auto (bf16 only where AMX bf16 tiles are present, else
/// fp32).
inline constexpr OptionKey<EnumValue> kPrecision{"precision"};
/// auto, direct or winograd: how 3x3 stride-1 convolutions are computed (see the schema).
inline constexpr OptionKey<EnumValue> kConvAlgorithm{"conv_algorithm"};
/// Directory of Winograd-transformed weights ("" = none), and how it is used (off, read,
/// readwrite); see the schema.
inline constexpr OptionKey<std::string_view> kCacheDir{"cache_dir"};
inline constexpr OptionKey<EnumValue> kCacheMode{"cache_mode"};
/// Size bound of cache_dir's entries in MiB (0 = none); least recently used go first.
inline constexpr OptionKey<int64_t> kCacheMaxMb{"cache_max_mb"};
/// Global: oneDNN's primitive cache capacity (dnnl::set_primitive_cache_capacity).
inline constexpr OptionKey<int64_t> kPrimitiveCacheCapacity{"primitive_cache_capacity"};
/// Execute scope: report per-primitive times of this call through the execution context.
inline constexpr OptionKey<bool> kProfile{"profile"};

}  // namespace tessera::onednn
