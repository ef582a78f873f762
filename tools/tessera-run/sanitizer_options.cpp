// AddressSanitizer defaults for tessera-run in sanitizer builds (nothing in other builds):
// intercept_tls_get_addr=0. ASAN_OPTIONS given at run time still override it.
//
// Why: tessera-run loads the backend libraries with dlopen, so their thread-local variables (and
// those of the libraries they pull in, such as libgomp under oneDNN) are dynamic TLS blocks. Once
// a worker thread holds one (oneDNN running a delegate on two OpenMP threads), LeakSanitizer's
// tracer crashes at exit ("Tracer caught signal 11", a DTLS range such as
// 0x0002000009c8-0x002600001aca): GCC 12's sanitizer runtime guesses a dynamic TLS block's bounds
// from a glibc-2.19 header that glibc no longer writes (google/sanitizers#1322, fixed in LLVM 17).
// tests/backends/opencl/sanitizer_options.cpp explains the same crash in detail. With the
// interceptor off, LeakSanitizer still scans stacks and static TLS; only dynamic TLS blocks of
// dlopen'd libraries go unscanned.

#include "tessera/core/sanitizers.h"

#if TESSERA_ASAN
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
#endif
