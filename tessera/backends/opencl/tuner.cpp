#include "tessera/backends/opencl/tuner.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>

#include "tessera/core/log.h"

namespace tessera::opencl {
namespace {

constexpr char kTuningMagic[8] = {'T', 'S', 'C', 'L', 'T', 'U', 'N', '1'};
constexpr size_t kRecordSize = 16;  // key u64, local u32, reserved u32

std::mutex& file_mutex() {
  static std::mutex m;
  return m;
}

// Parses records; false if the payload is not a whole number of them.
bool parse(const std::vector<uint8_t>& payload, TuningTable* table, size_t* count) {
  if (payload.size() % kRecordSize != 0) return false;
  for (size_t off = 0; off < payload.size(); off += kRecordSize) {
    uint64_t key;
    uint32_t local;
    std::memcpy(&key, payload.data() + off, 8);
    std::memcpy(&local, payload.data() + off + 8, 4);
    if (table->emplace(key, local).second) ++*count;
  }
  return true;
}

size_t load_locked(const std::string& path, const Device& device, TuningTable* table, bool warn) {
  Result<std::vector<uint8_t>> payload = read_integrity_file(path, tuning_file_key(device));
  if (!payload.ok()) {
    if (warn && payload.status().code() != Error::NotFound) {
      TESSERA_LOG_WARNING("opencl: tuning file ignored: %s", payload.status().message());
    }
    return 0;
  }
  size_t count = 0;
  if (!parse(*payload, table, &count) && warn) {
    TESSERA_LOG_WARNING("opencl: tuning file '%s' has a partial record; ignored", path.c_str());
  }
  return count;
}

}  // namespace

IntegrityKey tuning_file_key(const Device& device) {
  IntegrityKey key{};
  std::memcpy(key.magic, kTuningMagic, sizeof key.magic);
  key.device = device.fingerprint_hash;
  key.content = 0;
  return key;
}

std::vector<size_t> tuning_candidates(TuningLevel level, size_t max_local) {
  std::vector<size_t> all;
  switch (level) {
    case TuningLevel::None:
      all = {0};
      break;
    case TuningLevel::Rapid:
      all = {0, 16, 64, 256};
      break;
    case TuningLevel::Normal:
      all = {0, 4, 8, 16, 32, 64, 128, 256};
      break;
    case TuningLevel::Exhaustive:
      all.push_back(0);
      for (size_t l = 1; l <= 4096; l *= 2) all.push_back(l);
      break;
  }
  std::vector<size_t> out;
  for (size_t l : all) {
    if (l <= max_local) out.push_back(l);
  }
  return out;
}

size_t load_tuning_file(const std::string& path, const Device& device, TuningTable* table) {
  std::lock_guard<std::mutex> lock(file_mutex());
  return load_locked(path, device, table, true);
}

Status save_tuning_file(const std::string& path, const Device& device, const TuningTable& table) {
  std::lock_guard<std::mutex> lock(file_mutex());
  TuningTable merged = table;
  load_locked(path, device, &merged, false);
  std::vector<uint8_t> payload(merged.size() * kRecordSize, 0);
  size_t off = 0;
  for (const auto& [key, local] : merged) {
    std::memcpy(payload.data() + off, &key, 8);
    std::memcpy(payload.data() + off + 8, &local, 4);
    off += kRecordSize;
  }
  return write_integrity_file(path, tuning_file_key(device), payload);
}

uint32_t tune_kernel(cl_command_queue queue, cl_kernel kernel, cl_device_id device,
                     size_t global, const std::vector<size_t>& candidates, int repeats) {
  size_t kernel_max = 0;
  clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_max,
                           &kernel_max, nullptr);
  double best = std::numeric_limits<double>::infinity();
  uint32_t best_local = 0;
  for (size_t local : candidates) {
    if (kernel_max != 0 && local > kernel_max) continue;
    const size_t g = round_global(global, local);
    const size_t* lp = local == 0 ? nullptr : &local;
    // The first launch may compile the work-group function: untimed.
    if (clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &g, lp, 0, nullptr, nullptr) !=
            CL_SUCCESS ||
        clFinish(queue) != CL_SUCCESS) {
      continue;
    }
    double fastest = std::numeric_limits<double>::infinity();
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &g, lp, 0, nullptr, nullptr);
      clFinish(queue);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (ms < fastest) fastest = ms;
    }
    if (fastest < best) {
      best = fastest;
      best_local = static_cast<uint32_t>(local);
    }
  }
  return best_local;
}

}  // namespace tessera::opencl
