// The ArmNN backend's option keys, typed (defaults, ranges, scopes and docs are in the schema in
// armnn_backend.cpp; docs/options.md lists them all).
//
//   BackendOptions<2> opts;
//   TESSERA_RETURN_IF_ERROR(opts.set(armnn_backend::kTuningLevel, int64_t{2}));
//   TESSERA_RETURN_IF_ERROR(set_option("armnn", opts.view()));  // before the first load
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/backend/option_key.h"

namespace tessera::armnn_backend {

/// Global or load: ordered ArmNN backend ids ("GpuAcc,CpuAcc,CpuRef"), or "auto".
inline constexpr OptionKey<std::string_view> kBackends{"backends"};

// Global, init-only: they build the IRuntime::CreationOptions of the runtime created at the
// backend's first init.
/// GpuAcc "TuningLevel" (0 = use the tuning file only, 1 rapid, 2 normal, 3 exhaustive).
inline constexpr OptionKey<int64_t> kTuningLevel{"tuning_level"};
/// GpuAcc "TuningFile".
inline constexpr OptionKey<std::string_view> kTuningFile{"tuning_file"};
/// GpuAcc "KernelProfilingEnabled".
inline constexpr OptionKey<bool> kKernelProfiling{"kernel_profiling"};
/// Typed pass-through of further ArmNN backend options: "<BackendId>.<Name>=<value>" entries
/// separated by ';' (backend_ids.h lists the names and types accepted). One entry can also be
/// set by itself, typed, with the key "backend_option.<BackendId>.<Name>" (a string key:
/// `opts.set_int("backend_option.GpuAcc.TuningLevel", 2)`); it is merged into this list.
inline constexpr OptionKey<std::string_view> kBackendOption{"backend_option"};

// Load or delegate: ArmNN optimizer options of one network.
inline constexpr OptionKey<bool> kFastMath{"fast_math"};
inline constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
inline constexpr OptionKey<bool> kProfiling{"profiling"};
inline constexpr OptionKey<bool> kReduceFp32ToFp16{"reduce_fp32_to_fp16"};
inline constexpr OptionKey<bool> kReduceFp32ToBf16{"reduce_fp32_to_bf16"};

}  // namespace tessera::armnn_backend
