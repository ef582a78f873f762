// Small OpenCL helpers: error names and owning handles for contexts, queues, programs, kernels
// and buffers (released in the destructor, movable, not copyable).
#pragma once

#include <CL/cl.h>

#include <string>
#include <utility>

namespace tessera::opencl {

/// "CL_OUT_OF_RESOURCES" for -5, "CL_ERROR(-1234)" for unknown codes (static storage).
const char* cl_error_name(cl_int code);

/// Fault injection (tests and reliability drills), for every thread: the next `count` kernel
/// enqueues of delegates' execute fail with `error` (such as CL_OUT_OF_RESOURCES) as if
/// clEnqueueNDRangeKernel had returned it. 0 turns it off.
void set_enqueue_fault(cl_int error, int count);
/// CL_SUCCESS, or the injected error once per count (called before each kernel enqueue).
cl_int take_enqueue_fault();

/// An owned OpenCL object released with `Release`.
template <typename T, cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ClHandle(ClHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  ~ClHandle() { reset(); }

  void reset() {
    if (handle_ != nullptr) Release(handle_);
    handle_ = nullptr;
  }
  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T handle_ = nullptr;
};

using ContextHandle = ClHandle<cl_context, clReleaseContext>;
using QueueHandle = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ProgramHandle = ClHandle<cl_program, clReleaseProgram>;
using KernelHandle = ClHandle<cl_kernel, clReleaseKernel>;
using MemHandle = ClHandle<cl_mem, clReleaseMemObject>;

/// A string-valued device or platform property ("" on error).
std::string device_string(cl_device_id device, cl_device_info what);
std::string platform_string(cl_platform_id platform, cl_platform_info what);

}  // namespace tessera::opencl
