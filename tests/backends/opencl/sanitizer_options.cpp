// AddressSanitizer defaults for the OpenCL test binaries (opencl_backend_test,
// opencl_conformance_test): intercept_tls_get_addr=0 and use_sigaltstack=0 (see below).
// ASAN_OPTIONS given at run time still override these.
//
// Why: without it, LeakSanitizer's tracer crashes at exit ("Tracer caught signal 11") after some
// tests pass (OpenClMatMul.OneDOperands, OpenClLayerNorm.LastAxisAndTwoAxes, OpenClShape.Concat
// on PoCL 3.1, GCC 12's libasan, glibc 2.36). The cause is in the sanitizer runtime, not in
// Tessera or PoCL: its __tls_get_addr interceptor takes any dynamic TLS block whose address is
// 16 mod 4096 for a glibc-2.19 block with a {start, size} header in the 16 bytes before it.
// glibc has had no such header since 2.25; it mallocs the block, and ASan's 16-byte size class
// puts it at such an address by chance. With ASAN_OPTIONS=verbosity=2 the main thread shows:
//   __tls_get_addr: 0x7ffff18af700 {0x9,0x0} => 0x602000009010; tls_beg: 0x602000009010
//   __tls_get_addr: glibc >=2.19 suspected; tls={0xac1 0x800001102}
//   ... DTLS 9 at 0x000000000abf-0x000800001bc1.  Tracer caught signal 11: addr=0xac0
// Module 9 is libclang-cpp.so.15 (0x7ffff18af700 lies in its mapping), which PoCL loads to
// compile kernels; the "header" read is garbage, so the leak scan of that range faults. Which
// block lands on 16 mod 4096 depends only on the order of allocations, so the same tests crash
// every time. Known upstream as google/sanitizers#1322, fixed in LLVM 17 (the runtime asks its
// allocator for the block's bounds); GCC 12 and 13 and clang 14 (Debian 12's, which scripts/test
// builds its sanitizer passes with) still have the heuristic. With the interceptor off, LSan
// scans static TLS and stacks as before but not dynamic TLS blocks of dlopen'd libraries; every
// test then passes with leak checking on.
//
// Not suppressed, and outside Tessera too: when PoCL compiles a work-group function that is not
// in its kernel cache (~/.cache/pocl; scripts/test's Release pass fills it first), LSan reports
// 16 bytes per device, plus the LLVM passes they own, allocated at libpocl.so.2.10.0+0xc3e46 in
// PoCL's own worker thread under pocl_check_kernel_disk_cache: `new llvm::legacy::PassManager`
// (the next instruction calls its constructor), PoCL's per-device kernel compiler passes, which
// PoCL drops without deleting. Tessera never sees that object. A suppression would have to name
// libpocl.so, which would also hide OpenCL objects Tessera might fail to release.

// use_sigaltstack=0: when PoCL compiles kernels on a thread other than the main one (the startup
// backend's background init, OpenclStartup.*), LLVM inside it finds ASan's alternate signal
// stack too small for its own handlers and installs a malloc'd one (MINSIGSTKSZ + 64 KiB, 79,040
// bytes here). When that thread exits, ASan unmaps whatever alternate stack the thread has and
// aborts on the heap block: "AddressSanitizer failed to deallocate 0x134c0 (79040) bytes",
// "CHECK failed: sanitizer_posix.cpp:61 unable to unmap", in AsanThread::Destroy ->
// UnsetAlternateSignalStack. Without ASan's own alternate stack it leaves the thread's alone;
// the cost is that a stack overflow in these binaries is reported as a plain SIGSEGV.

#include "tessera/core/sanitizers.h"

#if TESSERA_ASAN
extern "C" const char* __asan_default_options() {
  return "intercept_tls_get_addr=0:use_sigaltstack=0";
}
#endif
