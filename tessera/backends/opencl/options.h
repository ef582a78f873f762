// The OpenCL backend's option keys, typed (see option_schema() in opencl_backend.cpp for
// defaults, ranges, scopes and docs; docs/options.md lists them all).
//
//   BackendOptions<2> opts;
//   TESSERA_RETURN_IF_ERROR(opts.set(opencl::kDeviceIndex, 1));
//   TESSERA_RETURN_IF_ERROR(set_option("opencl", opts.view()));
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/backend/option_key.h"

namespace tessera::opencl {

/// Substring of the platform name to use ("" = any). Global, init-only.
inline constexpr OptionKey<std::string_view> kPlatform{"platform"};
/// gpu | cpu | accelerator | any. Global, init-only.
inline constexpr OptionKey<EnumValue> kDeviceType{"device_type"};
/// Index among the devices that platform and device_type select; global, load or delegate.
inline constexpr OptionKey<int64_t> kDeviceIndex{"device_index"};
/// Passed to clBuildProgram (e.g. "-cl-fast-relaxed-math").
inline constexpr OptionKey<std::string_view> kBuildOptions{"build_options"};
/// Directory of compiled program binaries ("" = no cache).
inline constexpr OptionKey<std::string_view> kCacheDir{"cache_dir"};
/// off | read | readwrite.
inline constexpr OptionKey<EnumValue> kCacheMode{"cache_mode"};
/// Size bound of cache_dir's program entries in MiB (0 = none); least recently used go first.
inline constexpr OptionKey<int64_t> kCacheMaxMb{"cache_max_mb"};
/// none | rapid | normal | exhaustive: how many local work sizes to try per kernel.
inline constexpr OptionKey<EnumValue> kTuningLevel{"tuning_level"};
/// File of tuned local work sizes ("" = keep them in memory only).
inline constexpr OptionKey<std::string_view> kTuningFile{"tuning_file"};
/// Bake concrete shapes into the kernels as compile-time constants.
inline constexpr OptionKey<bool> kSpecializeShapes{"specialize_shapes"};
/// auto | generated | clblast: how Conv (group 1) and Gemm multiply. Init-time scopes.
inline constexpr OptionKey<EnumValue> kGemm{"gemm"};
/// Report per-kernel times from OpenCL events through the execution context.
inline constexpr OptionKey<bool> kKernelProfiling{"kernel_profiling"};

}  // namespace tessera::opencl
