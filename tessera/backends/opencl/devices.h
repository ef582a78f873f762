// Device selection for the OpenCL backend: the devices a platform substring and a device type
// select (in platform order, then the driver's device order), and one shared cl_context per
// device, created on first use and kept while any delegate uses it.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backends/opencl/cl_util.h"
#include "tessera/core/result.h"

namespace tessera::opencl {

/// One OpenCL device and what identifies its compiled code.
struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name;
  std::string platform_name;
  const char* type = "other";  // "gpu", "cpu", "accelerator", "other"
  /// Device, vendor, driver and platform versions: a binary built for one fingerprint is only
  /// loaded on a device with the same one.
  std::string fingerprint;
  uint64_t fingerprint_hash = 0;
  size_t max_work_group_size = 1;
};

/// A device with its shared context. Thread-safe (OpenCL contexts are).
struct DeviceContext {
  Device device;
  ContextHandle context;
};

/// The devices selected by `platform` (substring of the platform name, "" = any) and
/// `device_type` ("gpu", "cpu", "accelerator", "any").
class DeviceSet {
 public:
  /// Enumerates through the ICD loader. DelegateUnavailable when nothing matches (the message
  /// lists what exists).
  static Result<std::shared_ptr<DeviceSet>> discover(std::string_view platform,
                                                     std::string_view device_type);

  const std::string& platform_filter() const { return platform_; }
  const std::string& type_filter() const { return type_; }
  size_t size() const { return devices_.size(); }
  const Device& device(size_t i) const { return devices_[i]; }

  /// The shared context of device `index`, created on first use. InvalidArgument for an index
  /// out of range (the message lists the devices); DelegateUnavailable if clCreateContext fails.
  Result<std::shared_ptr<DeviceContext>> context(int64_t index);

  /// "0: <name> (<type>, <platform>); 1: ..." for messages.
  std::string describe() const;

 private:
  std::string platform_, type_;
  std::vector<Device> devices_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<DeviceContext>> contexts_;
};

/// Whether the ICD loader finds at least one device of any type (probed once).
bool any_opencl_device();

}  // namespace tessera::opencl
