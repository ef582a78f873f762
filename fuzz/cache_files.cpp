// Fuzz target: the readers of the files the OpenCL backend persists, which share the integrity
// layout of tessera/backend/integrity_file.h: a program cache entry (read_integrity_file with
// the key program_cache_key gives, and read_integrity_file_into of the same file) and a tuning file
// (load_tuning_file, whose records are parsed after the integrity checks). They read paths, so each
// input is written to a file first.
//
// The first input byte chooses the reader and how much of the 48-byte header the target repairs
// before writing: with the size and checksum (or the whole header) made right, the fuzzer gets
// past the checks a random file fails and reaches the payload parsing.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "tessera/backend/integrity_file.h"
#include "tessera/backends/opencl/devices.h"
#include "tessera/backends/opencl/program_cache.h"
#include "tessera/backends/opencl/tuner.h"
#include "tessera/core/log.h"

namespace {

std::string& scratch_dir() {
  static std::string dir;
  return dir;
}

void remove_scratch() {
  const std::string command = "rm -rf '" + scratch_dir() + "'";
  (void)std::system(command.c_str());
}

tessera::opencl::Device fake_device() {
  tessera::opencl::Device device;
  device.name = "fuzz device";
  device.fingerprint = "fuzz device|1.0|fuzz driver";
  device.fingerprint_hash = tessera::fnv1a64(device.fingerprint);
  return device;
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

// Makes the header's size and checksum match the payload; with `whole`, also the magic, the
// format version and the keys the reader will ask for.
void repair(std::vector<uint8_t>* file, const tessera::IntegrityKey& key, bool whole) {
  if (file->size() < tessera::kIntegrityHeaderSize) file->resize(tessera::kIntegrityHeaderSize);
  uint8_t* h = file->data();
  const uint64_t size = file->size() - tessera::kIntegrityHeaderSize;
  const uint64_t checksum = tessera::hash64(h + tessera::kIntegrityHeaderSize, size);
  std::memcpy(h + 32, &size, 8);
  std::memcpy(h + 40, &checksum, 8);
  if (whole) {
    std::memcpy(h, key.magic, 8);
    std::memcpy(h + 8, &tessera::kIntegrityFormatVersion, 4);
    std::memcpy(h + 16, &key.device, 8);
    std::memcpy(h + 24, &key.content, 8);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tessera::set_log_sink([](tessera::LogLevel, const char*, void*) {});
  const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : std::getenv("TMPDIR");
  char dir[256];
  std::snprintf(dir, sizeof dir, "%s/tessera-fuzz-cache-%ld", base ? base : "/tmp",
                static_cast<long>(::getpid()));
  if (::mkdir(dir, 0700) != 0) {
    std::perror(dir);
    std::abort();
  }
  scratch_dir() = dir;
  std::atexit(remove_scratch);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::vector<uint8_t> file(data + 1, data + size);
  static const tessera::opencl::Device device = fake_device();
  static const std::string source = "__kernel void k(__global float* x) { x[0] = 1.0f; }";
  static const std::string build_options = "-cl-fast-relaxed-math";

  const bool tuning = (mode & 1) != 0;
  const tessera::IntegrityKey key =
      tuning ? tessera::opencl::tuning_file_key(device)
             : tessera::opencl::program_cache_key(device, source, build_options);
  if ((mode & 6) != 0) repair(&file, key, (mode & 4) != 0);

  if (tuning) {
    const std::string path = scratch_dir() + "/tuning.bin";
    if (!write_file(path, file)) std::abort();
    tessera::opencl::TuningTable table;
    table.emplace(1, 64);  // entries already there win over the file's
    const size_t read = tessera::opencl::load_tuning_file(path, device, &table);
    if (read > table.size()) std::abort();
  } else {
    static const std::string path =
        tessera::opencl::program_cache_path(scratch_dir(), device, source, build_options);
    if (!write_file(path, file)) std::abort();
    tessera::Result<std::vector<uint8_t>> entry = tessera::read_integrity_file(path, key);
    if (entry.ok() && entry->size() + tessera::kIntegrityHeaderSize != file.size()) std::abort();
    // The same file read into memory of the payload's size (read_integrity_file_into, as
    // oneDNN's weight cache reads): the same verdict and, when good, the same bytes.
    std::vector<uint8_t> into(file.size() > tessera::kIntegrityHeaderSize
                                  ? file.size() - tessera::kIntegrityHeaderSize
                                  : 0);
    const tessera::Status read =
        tessera::read_integrity_file_into(path, key, into.data(), into.size());
    if (read.is_ok() != entry.ok()) std::abort();
    if (read.is_ok() && into != *entry) std::abort();
  }
  return 0;
}
