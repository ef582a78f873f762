// Building a delegate's OpenCL program, through the on-disk cache of compiled binaries.
//
// A cache entry is <cache_dir>/<16 hex digits>-<16 hex digits>.clbin: a hash of the kernel source
// and the build options, then a hash of that and the device fingerprint (so no option value can
// name a path outside the directory, and whether any device has an entry for a program is known
// without asking OpenCL), in the integrity-checked layout of integrity_file.h. Whatever is wrong
// with an entry (truncated, corrupted, another format version, another device or driver, other
// source) the program is rebuilt from source with a warning; an unwritable directory is a warning
// too.
#pragma once

#include <string>

#include "tessera/backend/integrity_file.h"
#include "tessera/backends/opencl/cl_util.h"
#include "tessera/backends/opencl/devices.h"
#include "tessera/core/result.h"

namespace tessera::opencl {

enum class CacheMode : uint8_t { Off, Read, ReadWrite };

struct ProgramCacheSettings {
  std::string dir;  // "" = no cache
  CacheMode mode = CacheMode::ReadWrite;
  uint64_t max_bytes = 0;  // bound on the entries' total size after a write (0 = none)
};

/// How a program was obtained, for tests, benchmarks and logs.
struct ProgramBuildInfo {
  bool from_cache = false;   // loaded from a cache entry
  bool cache_written = false;
  std::string cache_path;    // the entry's path, "" without a cache
  double ms = 0.0;           // time to obtain the built program
};

/// The cache file a program would use.
std::string program_cache_path(const std::string& dir, const Device& device,
                               const std::string& source, const std::string& build_options);

/// Whether `dir` holds an entry for (source, build options) for some device: false means init
/// would certainly build from source. Reads the directory only (no OpenCL call).
bool has_program_cache_entry_for_any_device(const std::string& dir, const std::string& source,
                                            const std::string& build_options);

/// What a cache entry for (device, source, build options) must match: the entry's magic, the
/// device fingerprint and the hash of source and options.
IntegrityKey program_cache_key(const Device& device, const std::string& source,
                               const std::string& build_options);

/// A built program for `device`. DelegateInvalidCompatibility with the build log when the
/// source does not compile; DelegateUnavailable for other OpenCL failures.
Result<ProgramHandle> build_program(const DeviceContext& device, const std::string& source,
                                    const std::string& build_options,
                                    const ProgramCacheSettings& cache, ProgramBuildInfo* info);

}  // namespace tessera::opencl
