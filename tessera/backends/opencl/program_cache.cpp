#include "tessera/backends/opencl/program_cache.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>

#include "tessera/backend/cache_limit.h"
#include "tessera/core/log.h"

namespace tessera::opencl {
namespace {

constexpr char kBinaryMagic[8] = {'T', 'S', 'C', 'L', 'B', 'I', 'N', '1'};

uint64_t content_key(const std::string& source, const std::string& options) {
  uint64_t h = fnv1a64(source);
  h = fnv1a64("\0", 1, h);
  return fnv1a64(options, h);
}

Result<ProgramHandle> from_source(const DeviceContext& dc, const std::string& source,
                                  const std::string& options) {
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int err = CL_SUCCESS;
  ProgramHandle program(clCreateProgramWithSource(dc.context.get(), 1, &text, &length, &err));
  if (!program || err != CL_SUCCESS) {
    return Status::error(Error::DelegateUnavailable, "opencl: clCreateProgramWithSource failed: %s",
                         cl_error_name(err));
  }
  cl_device_id dev = dc.device.id;
  err = clBuildProgram(program.get(), 1, &dev, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(program.get(), dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::vector<char> log(size + 1, '\0');
    if (size > 0) clGetProgramBuildInfo(program.get(), dev, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    return Status::error(err == CL_INVALID_BUILD_OPTIONS ? Error::InvalidArgument
                                                         : Error::DelegateInvalidCompatibility,
                         "opencl: clBuildProgram on '%s' with options '%s' failed (%s): %.300s",
                         dc.device.name.c_str(), options.c_str(), cl_error_name(err), log.data());
  }
  return program;
}

Result<ProgramHandle> from_binary(const DeviceContext& dc, const std::vector<uint8_t>& binary,
                                  const std::string& options) {
  const unsigned char* bytes = binary.data();
  const size_t length = binary.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_device_id dev = dc.device.id;
  ProgramHandle program(
      clCreateProgramWithBinary(dc.context.get(), 1, &dev, &length, &bytes, &status, &err));
  if (!program || err != CL_SUCCESS || status != CL_SUCCESS) {
    return Status::error(Error::InvalidProgram, "the driver rejected the binary (%s)",
                         cl_error_name(err != CL_SUCCESS ? err : status));
  }
  err = clBuildProgram(program.get(), 1, &dev, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    return Status::error(Error::InvalidProgram, "building the binary failed (%s)",
                         cl_error_name(err));
  }
  return program;
}

Result<std::vector<uint8_t>> program_binary(cl_program program) {
  size_t size = 0;
  cl_int err = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
  if (err != CL_SUCCESS || size == 0) {
    return Status::error(Error::NotSupported, "the driver gives no program binary (%s)",
                         cl_error_name(err));
  }
  std::vector<uint8_t> binary(size);
  unsigned char* ptr = binary.data();
  err = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr);
  if (err != CL_SUCCESS) {
    return Status::error(Error::NotSupported, "clGetProgramInfo(CL_PROGRAM_BINARIES) failed (%s)",
                         cl_error_name(err));
  }
  return binary;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

namespace {

// "<16 hex digits of the content key>-": the start of every entry of one source and options.
std::string content_prefix(const std::string& source, const std::string& build_options) {
  char prefix[24];
  std::snprintf(prefix, sizeof prefix, "%016llx-",
                static_cast<unsigned long long>(content_key(source, build_options)));
  return prefix;
}

}  // namespace

std::string program_cache_path(const std::string& dir, const Device& device,
                               const std::string& source, const std::string& build_options) {
  const uint64_t key = content_key(source, build_options);
  const uint64_t name = fnv1a64(&key, sizeof key, device.fingerprint_hash);
  char file[24];
  std::snprintf(file, sizeof file, "%016llx.clbin", static_cast<unsigned long long>(name));
  std::string path = dir;
  if (!path.empty() && path.back() != '/') path += '/';
  return path + content_prefix(source, build_options) + file;
}

bool has_program_cache_entry_for_any_device(const std::string& dir, const std::string& source,
                                            const std::string& build_options) {
  const std::string prefix = content_prefix(source, build_options);
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() > prefix.size() + 6 && name.substr(0, prefix.size()) == prefix &&
        name.substr(name.size() - 6) == ".clbin") {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

IntegrityKey program_cache_key(const Device& device, const std::string& source,
                               const std::string& build_options) {
  IntegrityKey key{};
  std::memcpy(key.magic, kBinaryMagic, sizeof key.magic);
  key.device = device.fingerprint_hash;
  key.content = content_key(source, build_options);
  return key;
}

Result<ProgramHandle> build_program(const DeviceContext& dc, const std::string& source,
                                    const std::string& build_options,
                                    const ProgramCacheSettings& cache, ProgramBuildInfo* info) {
  const auto start = std::chrono::steady_clock::now();
  ProgramBuildInfo local;
  ProgramBuildInfo& out = info ? *info : local;
  out = ProgramBuildInfo();
  const bool use_cache = !cache.dir.empty() && cache.mode != CacheMode::Off;
  const IntegrityKey key = program_cache_key(dc.device, source, build_options);
  if (use_cache) {
    out.cache_path = program_cache_path(cache.dir, dc.device, source, build_options);
    Result<std::vector<uint8_t>> entry = read_integrity_file(out.cache_path, key);
    if (entry.ok()) {
      Result<ProgramHandle> program = from_binary(dc, *entry, build_options);
      if (program.ok()) {
        touch_cache_entry(out.cache_path);  // recently used: evicted last
        out.from_cache = true;
        out.ms = ms_since(start);
        return program;
      }
      TESSERA_LOG_WARNING("opencl: cache entry '%s': %s; recompiling", out.cache_path.c_str(),
                          program.status().message());
    } else if (entry.status().code() != Error::NotFound) {
      TESSERA_LOG_WARNING("opencl: cache entry unusable: %s; recompiling",
                          entry.status().message());
    }
  }
  TESSERA_LOG_INFO(
      "opencl: building the kernels from source for device '%s' (can take seconds); %s",
      dc.device.name.c_str(),
      !use_cache ? "not cached (set opencl.cache_dir to keep the binary)"
      : cache.mode == CacheMode::ReadWrite
          ? ("the binary will be cached in '" + out.cache_path + "'").c_str()
          : "cache_mode is read, so the binary will not be cached");
  TESSERA_ASSIGN_OR_RETURN(ProgramHandle program, from_source(dc, source, build_options));
  if (use_cache && cache.mode == CacheMode::ReadWrite) {
    Result<std::vector<uint8_t>> binary = program_binary(program.get());
    if (!binary.ok()) {
      TESSERA_LOG_WARNING("opencl: not caching the program: %s", binary.status().message());
    } else {
      if (::mkdir(cache.dir.c_str(), 0755) != 0 && errno != EEXIST) {
        TESSERA_LOG_WARNING("opencl: cannot create cache_dir '%s': %s", cache.dir.c_str(),
                            std::strerror(errno));
      } else {
        Status written = write_integrity_file(out.cache_path, key, *binary);
        if (!written.is_ok()) {
          TESSERA_LOG_WARNING("opencl: cache not written: %s", written.message());
        } else {
          out.cache_written = true;
          if (cache.max_bytes != 0) {
            const CacheTrim trim = trim_cache_dir(cache.dir, ".clbin", cache.max_bytes);
            if (trim.removed > 0 || trim.failed > 0) {
              TESSERA_LOG_INFO(
                  "opencl: cache_dir '%s' above cache_max_mb: removed %zu least "
                  "recently used entries (%zu could not be), %llu bytes left",
                  cache.dir.c_str(), trim.removed, trim.failed,
                  static_cast<unsigned long long>(trim.bytes_after));
            }
          }
        }
      }
    }
  }
  out.ms = ms_since(start);
  return program;
}

}  // namespace tessera::opencl
