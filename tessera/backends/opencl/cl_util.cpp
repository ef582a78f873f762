#include "tessera/backends/opencl/cl_util.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace tessera::opencl {
namespace {
std::atomic<cl_int> g_enqueue_fault{CL_SUCCESS};
std::atomic<int> g_enqueue_fault_count{0};
}  // namespace

void set_enqueue_fault(cl_int error, int count) {
  g_enqueue_fault_count.store(error == CL_SUCCESS ? 0 : count);
  g_enqueue_fault.store(error);
}

cl_int take_enqueue_fault() {
  if (g_enqueue_fault_count.load(std::memory_order_relaxed) <= 0) return CL_SUCCESS;
  if (g_enqueue_fault_count.fetch_sub(1) <= 0) return CL_SUCCESS;
  return g_enqueue_fault.load();
}

const char* cl_error_name(cl_int code) {
  switch (code) {
#define TESSERA_CL_ERROR_CASE(name) \
  case name:                        \
    return #name;
    TESSERA_CL_ERROR_CASE(CL_SUCCESS)
    TESSERA_CL_ERROR_CASE(CL_DEVICE_NOT_FOUND)
    TESSERA_CL_ERROR_CASE(CL_DEVICE_NOT_AVAILABLE)
    TESSERA_CL_ERROR_CASE(CL_COMPILER_NOT_AVAILABLE)
    TESSERA_CL_ERROR_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TESSERA_CL_ERROR_CASE(CL_OUT_OF_RESOURCES)
    TESSERA_CL_ERROR_CASE(CL_OUT_OF_HOST_MEMORY)
    TESSERA_CL_ERROR_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
    TESSERA_CL_ERROR_CASE(CL_BUILD_PROGRAM_FAILURE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_VALUE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_DEVICE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_CONTEXT)
    TESSERA_CL_ERROR_CASE(CL_INVALID_COMMAND_QUEUE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_MEM_OBJECT)
    TESSERA_CL_ERROR_CASE(CL_INVALID_BINARY)
    TESSERA_CL_ERROR_CASE(CL_INVALID_BUILD_OPTIONS)
    TESSERA_CL_ERROR_CASE(CL_INVALID_PROGRAM)
    TESSERA_CL_ERROR_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_KERNEL_NAME)
    TESSERA_CL_ERROR_CASE(CL_INVALID_KERNEL)
    TESSERA_CL_ERROR_CASE(CL_INVALID_ARG_INDEX)
    TESSERA_CL_ERROR_CASE(CL_INVALID_ARG_VALUE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_ARG_SIZE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_KERNEL_ARGS)
    TESSERA_CL_ERROR_CASE(CL_INVALID_WORK_DIMENSION)
    TESSERA_CL_ERROR_CASE(CL_INVALID_WORK_GROUP_SIZE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_WORK_ITEM_SIZE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_EVENT)
    TESSERA_CL_ERROR_CASE(CL_INVALID_BUFFER_SIZE)
    TESSERA_CL_ERROR_CASE(CL_INVALID_PLATFORM)
#undef TESSERA_CL_ERROR_CASE
    default: {
      static thread_local char buf[32];
      std::snprintf(buf, sizeof buf, "CL_ERROR(%d)", static_cast<int>(code));
      return buf;
    }
  }
}

std::string device_string(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::vector<char> buf(size);
  if (clGetDeviceInfo(device, what, size, buf.data(), nullptr) != CL_SUCCESS) return {};
  return std::string(buf.data());
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::vector<char> buf(size);
  if (clGetPlatformInfo(platform, what, size, buf.data(), nullptr) != CL_SUCCESS) return {};
  return std::string(buf.data());
}

}  // namespace tessera::opencl
