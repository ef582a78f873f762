/* What the C API test needs from C++: a backend with a schema of every option type and scope,
 * and small programs built with ProgramBuilder (tests/testing/test_programs.h). */
#ifndef TESSERA_TESTS_C_TEST_SUPPORT_H_
#define TESSERA_TESTS_C_TEST_SUPPORT_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Registers backend "ctest" once: options threads (int 0..64, 0 = auto, derived as 1),
 * mode (enum fast|exact), label (string of at most 8), scale (double 0..10), device (enum
 * cpu|gpu, init-only) at global/load/delegate scope, and profile (bool, execute only). Its
 * delegates copy their input to their output. Also registers "ctest_failing", whose every
 * execute fails (DelegateExecutionFailed). Returns 0 on success. */
int ctest_register_backend(void);

/* The bytes of a test program in `*size` bytes, malloc'ed (free with free()):
 * 0: forward(x: float32[batch, 4]) = relu(x + bias) * scale, batch symbolic in [1, 8];
 * 1: forward(x: float32[2, 4]) through delegates ctest#0 then ctest#1 (each a copy);
 * 2: forward(x: float32[2, 4]) through delegate ctest_failing#0;
 * 3: the same, recorded as selectable between ctest_failing and ctest. */
unsigned char* ctest_program(int which, size_t* size);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESTS_C_TEST_SUPPORT_H_ */
