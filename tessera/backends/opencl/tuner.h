// Local work size tuning, in the manner of Arm Compute Library's OpenCL tuner: for each kernel
// and its global size, try candidate local sizes, keep the fastest, and remember it in a tuning
// file (integrity-checked like the program cache: a broken, foreign or other-version file is
// ignored with a warning and rewritten).
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/backend/integrity_file.h"
#include "tessera/backends/opencl/devices.h"
#include "tessera/core/status.h"

namespace tessera::opencl {

enum class TuningLevel : uint8_t { None, Rapid, Normal, Exhaustive };

/// Tuned local sizes by tuning key (0 = let the driver choose).
using TuningTable = std::unordered_map<uint64_t, uint32_t>;

/// Local sizes to try at `level` (0 = the driver's choice), at most `max_local`.
std::vector<size_t> tuning_candidates(TuningLevel level, size_t max_local);

/// What a tuning file for `device` must match (its magic and the device fingerprint).
IntegrityKey tuning_file_key(const Device& device);

/// Reads `path` into `table` (entries already there win). A missing file is silent; any other
/// problem is logged with TESSERA_LOG_WARNING and the file's entries are ignored. Returns how
/// many entries were read.
size_t load_tuning_file(const std::string& path, const Device& device, TuningTable* table);

/// Merges `table` into `path` (whatever valid entries it holds are kept) and writes it
/// atomically. Serialised within the process. AccessFailed when it cannot be written.
Status save_tuning_file(const std::string& path, const Device& device, const TuningTable& table);

/// Runs `kernel` over `global` work items with each candidate local size and returns the
/// fastest (the global size is rounded up to a multiple of it). `queue` must be idle.
uint32_t tune_kernel(cl_command_queue queue, cl_kernel kernel, cl_device_id device,
                     size_t global, const std::vector<size_t>& candidates, int repeats);

/// `global` rounded up to a multiple of `local` (unchanged for 0).
inline size_t round_global(size_t global, size_t local) {
  return local == 0 ? global : (global + local - 1) / local * local;
}

}  // namespace tessera::opencl
