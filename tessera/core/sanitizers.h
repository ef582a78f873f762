#pragma once
// Whether this translation unit is compiled with AddressSanitizer or ThreadSanitizer, for GCC
// (which defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__) and clang (which, up to version
// 14 at least, answers only __has_feature). TESSERA_ASAN and TESSERA_TSAN are 1 or 0.

#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_ASAN 1
#endif
#endif
#ifndef TESSERA_ASAN
#define TESSERA_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN 1
#endif
#endif
#ifndef TESSERA_TSAN
#define TESSERA_TSAN 0
#endif
