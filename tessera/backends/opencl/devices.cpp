#include "tessera/backends/opencl/devices.h"

#include <cstdio>

#include "tessera/backend/integrity_file.h"

namespace tessera::opencl {
namespace {

std::vector<cl_platform_id> platforms() {
  cl_uint n = 0;
  if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::vector<cl_platform_id> ids(n);
  if (clGetPlatformIDs(n, ids.data(), nullptr) != CL_SUCCESS) return {};
  return ids;
}

std::vector<cl_device_id> devices_of(cl_platform_id platform, cl_device_type type) {
  cl_uint n = 0;
  if (clGetDeviceIDs(platform, type, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::vector<cl_device_id> ids(n);
  if (clGetDeviceIDs(platform, type, n, ids.data(), nullptr) != CL_SUCCESS) return {};
  return ids;
}

const char* type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

}  // namespace

bool any_opencl_device() {
  static const bool found = [] {
    for (cl_platform_id p : platforms()) {
      if (!devices_of(p, CL_DEVICE_TYPE_ALL).empty()) return true;
    }
    return false;
  }();
  return found;
}

Result<std::shared_ptr<DeviceSet>> DeviceSet::discover(std::string_view platform,
                                                       std::string_view device_type) {
  cl_device_type want = CL_DEVICE_TYPE_ALL;
  if (device_type == "gpu") want = CL_DEVICE_TYPE_GPU;
  if (device_type == "cpu") want = CL_DEVICE_TYPE_CPU;
  if (device_type == "accelerator") want = CL_DEVICE_TYPE_ACCELERATOR;

  auto set = std::make_shared<DeviceSet>();
  set->platform_ = std::string(platform);
  set->type_ = std::string(device_type);
  std::string seen;
  for (cl_platform_id p : platforms()) {
    const std::string pname = platform_string(p, CL_PLATFORM_NAME);
    if (!seen.empty()) seen += ", ";
    seen += "'" + pname + "'";
    if (!platform.empty() && pname.find(platform) == std::string::npos) continue;
    for (cl_device_id d : devices_of(p, want)) {
      Device dev;
      dev.platform = p;
      dev.id = d;
      dev.name = device_string(d, CL_DEVICE_NAME);
      dev.platform_name = pname;
      cl_device_type t = 0;
      clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof t, &t, nullptr);
      dev.type = type_name(t);
      clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev.max_work_group_size,
                      &dev.max_work_group_size, nullptr);
      if (dev.max_work_group_size == 0) dev.max_work_group_size = 1;
      dev.fingerprint = dev.name + "|" + device_string(d, CL_DEVICE_VENDOR) + "|" +
                        device_string(d, CL_DEVICE_VERSION) + "|" +
                        device_string(d, CL_DRIVER_VERSION) + "|" + pname + "|" +
                        platform_string(p, CL_PLATFORM_VERSION);
      dev.fingerprint_hash = fnv1a64(dev.fingerprint);
      set->devices_.push_back(std::move(dev));
    }
  }
  if (set->devices_.empty()) {
    return Status::error(Error::DelegateUnavailable,
                         "opencl: no %s device on a platform matching '%.*s' (platforms: %s)",
                         device_type == "any" ? "OpenCL" : std::string(device_type).c_str(),
                         static_cast<int>(platform.size()), platform.data(),
                         seen.empty() ? "none found by the ICD loader" : seen.c_str());
  }
  set->contexts_.resize(set->devices_.size());
  return set;
}

Result<std::shared_ptr<DeviceContext>> DeviceSet::context(int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= devices_.size()) {
    return Status::error(Error::InvalidArgument,
                         "opencl: device_index %lld is out of range: %zu device(s) match "
                         "platform '%s' and device_type '%s' (%s)",
                         static_cast<long long>(index), devices_.size(), platform_.c_str(),
                         type_.c_str(), describe().c_str());
  }
  const size_t i = static_cast<size_t>(index);
  std::lock_guard<std::mutex> lock(mutex_);
  if (contexts_[i]) return contexts_[i];
  auto ctx = std::make_shared<DeviceContext>();
  ctx->device = devices_[i];
  const cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(devices_[i].platform), 0};
  cl_int err = CL_SUCCESS;
  cl_context c = clCreateContext(props, 1, &devices_[i].id, nullptr, nullptr, &err);
  if (c == nullptr || err != CL_SUCCESS) {
    return Status::error(Error::DelegateUnavailable, "opencl: clCreateContext for '%s' failed: %s",
                         devices_[i].name.c_str(), cl_error_name(err));
  }
  ctx->context = ContextHandle(c);
  contexts_[i] = ctx;
  return ctx;
}

std::string DeviceSet::describe() const {
  std::string s;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (i) s += "; ";
    s += std::to_string(i) + ": " + devices_[i].name + " (" + devices_[i].type + ", " +
         devices_[i].platform_name + ")";
  }
  return s;
}

}  // namespace tessera::opencl
