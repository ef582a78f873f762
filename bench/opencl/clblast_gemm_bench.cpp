// CLBlast's SGEMM on the first OpenCL device, for comparison with the OpenCL backend's generated
// GEMM (Conv as im2col + GEMM): the shapes of a convolution's GEMM (M output channels, N output
// pixels, K = input channels x kernel area), row-major, with CLBlast's parameters for the device
// or the ones given on the command line (e.g. MWG=64 NWG=64 VWM=8 VWN=8: see CLBlast's Xgemm).
//
//   clblast_gemm_bench M N K [REPEATS] [PARAM=VALUE ...]
//
// Prints the first call (CLBlast compiles its kernels then), the median wall time of the others,
// the process CPU time per call (all threads; robust against other load on the machine) and the
// GFLOP/s of both.
#include <CL/cl.h>
#include <clblast.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

double cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool parse_size(const char* text, size_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > (1LL << 20)) return false;
  *out = static_cast<size_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t m = 0, n = 0, k = 0, repeats = 10;
  if (argc < 4 || !parse_size(argv[1], &m) || !parse_size(argv[2], &n) ||
      !parse_size(argv[3], &k) || (argc > 4 && !parse_size(argv[4], &repeats))) {
    std::fprintf(stderr, "usage: %s M N K [REPEATS] [PARAM=VALUE ...] (sizes 1..2^20)\n", argv[0]);
    return 2;
  }
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) != CL_SUCCESS) {
    std::fprintf(stderr, "no OpenCL device\n");
    return 1;
  }
  char name[256] = {};
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  if (argc > 5) {
    std::unordered_map<std::string, size_t> params;
    clblast::RetrieveParameters(device, "Xgemm", clblast::Precision::kSingle, params);
    for (int i = 5; i < argc; ++i) {
      const std::string kv = argv[i];
      const size_t eq = kv.find('=');
      size_t value = 0;
      if (eq == std::string::npos || !parse_size(kv.c_str() + eq + 1, &value) ||
          params.find(kv.substr(0, eq)) == params.end()) {
        std::fprintf(stderr, "bad or unknown Xgemm parameter '%s'\n", argv[i]);
        return 2;
      }
      params[kv.substr(0, eq)] = value;
    }
    if (clblast::OverrideParameters(device, "Xgemm", clblast::Precision::kSingle, params) !=
        clblast::StatusCode::kSuccess) {
      std::fprintf(stderr, "CLBlast rejected the parameters\n");
      return 2;
    }
  }
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n, 0.0f);
  cl_mem da = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, a.size() * 4, a.data(), &err);
  cl_mem db = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, b.size() * 4, b.data(), &err);
  cl_mem dc = clCreateBuffer(context, CL_MEM_READ_WRITE, c.size() * 4, nullptr, &err);
  auto gemm = [&] {
    const clblast::StatusCode s =
        clblast::Gemm(clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kNo,
                      m, n, k, 1.0f, da, 0, k, db, 0, n, 0.0f, dc, 0, n, &queue);
    clFinish(queue);
    return s;
  };
  const double first_start = now_ms();
  if (gemm() != clblast::StatusCode::kSuccess) {
    std::fprintf(stderr, "CLBlast Gemm failed\n");
    return 1;
  }
  const double first = now_ms() - first_start;
  std::vector<double> wall;
  const double cpu_start = cpu_ms();
  for (size_t r = 0; r < repeats; ++r) {
    const double t = now_ms();
    gemm();
    wall.push_back(now_ms() - t);
  }
  const double cpu_per_call = (cpu_ms() - cpu_start) / static_cast<double>(repeats);
  std::sort(wall.begin(), wall.end());
  const double median = wall[wall.size() / 2];
  const double flop =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, sizeof(float), c.data(), 0, nullptr, nullptr);
  const bool correct = c[0] == 0.125f * static_cast<float>(k);
  std::printf(
      "device %s\nM=%zu N=%zu K=%zu: first call %.1f ms; median %.3f ms (%.1f GFLOP/s); "
      "CPU %.3f ms per call (%.1f GFLOP per CPU-second); result %s\n",
      name, m, n, k, first, median, flop / median * 1e-6, cpu_per_call, flop / cpu_per_call * 1e-6,
      correct ? "ok" : "WRONG");
  clReleaseMemObject(da);
  clReleaseMemObject(db);
  clReleaseMemObject(dc);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return correct ? 0 : 1;
}
