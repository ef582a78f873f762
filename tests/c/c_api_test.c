/* The C ABI (tessera/c/tessera.h), compiled as C11: every function, and every error path the
 * header documents. `c_api_test GROUP` runs one group (ctest runs each as a test); no argument
 * runs them all. Prints "N passed, N failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera/c/tessera.h"
#include "tests/c/test_support.h"

static int g_passed, g_failed;

static void check(int ok, const char* what, int line) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "c_api_test.c:%d: check failed: %s\n", line, what);
  }
}
#define CHECK(cond) check((cond) != 0, #cond, __LINE__)
#define CHECK_STR(a, b) check(strcmp((a), (b)) == 0, #a " == " #b, __LINE__)

static void expect_ok(tessera_status* s, const char* what, int line) {
  if (s != NULL) {
    fprintf(stderr, "c_api_test.c:%d: %s failed: %s (%s)\n", line, what, tessera_status_message(s),
            tessera_error_name(tessera_status_code(s)));
  }
  check(s == NULL, what, line);
  tessera_status_free(s);
}
#define EXPECT_OK(expr) expect_ok((expr), #expr, __LINE__)

/* `s` must be an error with `code` whose message contains `needle`. */
static void expect_error(tessera_status* s, tessera_error_code code, const char* needle,
                         const char* what, int line) {
  if (s == NULL) {
    fprintf(stderr, "c_api_test.c:%d: %s succeeded, expected %s\n", line, what,
            tessera_error_name(code));
    check(0, what, line);
    return;
  }
  int ok = tessera_status_code(s) == code && strstr(tessera_status_message(s), needle) != NULL;
  if (!ok) {
    fprintf(stderr, "c_api_test.c:%d: %s: expected %s containing \"%s\", got %s: %s\n", line, what,
            tessera_error_name(code), needle, tessera_error_name(tessera_status_code(s)),
            tessera_status_message(s));
  }
  check(ok, what, line);
  tessera_status_free(s);
}
#define EXPECT_ERROR(expr, code, needle) expect_error((expr), (code), (needle), #expr, __LINE__)

static tessera_program* load_test_program(int which) {
  size_t size = 0;
  unsigned char* bytes = ctest_program(which, &size);
  CHECK(bytes != NULL);
  tessera_program* program = NULL;
  EXPECT_OK(tessera_program_load_memory(bytes, size, &program));
  free(bytes);
  return program;
}

/* Index of `key` among delegate `d`'s options, or -1. */
static int find_option(const tessera_method* m, size_t d, const char* key,
                       tessera_delegate_option* out) {
  tessera_delegate_info info;
  EXPECT_OK(tessera_method_delegate_info(m, d, &info));
  for (size_t i = 0; i < info.num_options; ++i) {
    EXPECT_OK(tessera_method_delegate_option(m, d, i, out));
    if (strcmp(out->key, key) == 0) return (int)i;
  }
  return -1;
}

static void test_status(void) {
  CHECK(tessera_status_code(NULL) == TESSERA_OK);
  CHECK_STR(tessera_status_message(NULL), "");
  tessera_status_free(NULL);
  CHECK_STR(tessera_error_name(TESSERA_ERROR_OPTION_UNKNOWN_KEY), "OptionUnknownKey");
  CHECK_STR(tessera_error_name(TESSERA_OK), "Ok");
  CHECK_STR(tessera_error_name((tessera_error_code)0x99), "Unknown");
  CHECK(strncmp(tessera_version(), "0.2.", 4) == 0);
  CHECK(tessera_c_abi_version() == TESSERA_C_ABI_VERSION);
  CHECK_STR(tessera_dtype_name(TESSERA_DTYPE_FLOAT32), "float32");
  CHECK_STR(tessera_dtype_name(TESSERA_DTYPE_BOOL), "bool");
  CHECK_STR(tessera_dtype_name((tessera_dtype)42), "unknown");
  /* A status from a failing call carries the C++ code and message. */
  tessera_status* s = tessera_backend_count(NULL);
  CHECK(tessera_status_code(s) == TESSERA_ERROR_INVALID_ARGUMENT);
  CHECK_STR(tessera_status_message(s), "tessera_backend_count: count is NULL");
  tessera_status_free(s);
}

/* Backend libraries (tests/backend/library builds them; CMakeLists.txt gives the paths). */
static void test_backend_library(void) {
  size_t n = 99;
  EXPECT_ERROR(tessera_load_backend_library("/nonexistent/libtessera_x.so", &n),
               TESSERA_ERROR_NOT_FOUND, "No such file");
  EXPECT_ERROR(tessera_load_backend_library(NULL, &n), TESSERA_ERROR_INVALID_ARGUMENT,
               "path is NULL");
  EXPECT_ERROR(tessera_load_backend_library(CTEST_NO_ENTRY_LIBRARY, &n),
               TESSERA_ERROR_NOT_SUPPORTED, "is not a Tessera backend library");
  EXPECT_ERROR(tessera_load_backend_library(CTEST_WRONG_ABI_LIBRARY, &n),
               TESSERA_ERROR_DELEGATE_INVALID_COMPATIBILITY, "was built for backend ABI version");
  CHECK(n == 99); /* untouched on error */
  EXPECT_OK(tessera_load_backend_library(CTEST_GOOD_LIBRARY, &n));
  CHECK(n == 1);
  int available = 0;
  EXPECT_OK(tessera_backend_available("library_good", &available, NULL));
  CHECK(available == 1);
  EXPECT_OK(tessera_load_backend_library(CTEST_GOOD_LIBRARY, NULL));

  EXPECT_ERROR(tessera_load_backend_libraries("/nonexistent/dir", &n), TESSERA_ERROR_NOT_FOUND,
               "backend library directory '/nonexistent/dir'");
  EXPECT_ERROR(tessera_load_backend_libraries(NULL, &n), TESSERA_ERROR_INVALID_ARGUMENT,
               "directories is NULL");
  EXPECT_OK(tessera_load_backend_libraries(CTEST_GOOD_DIR, &n));
  CHECK(n == 0); /* already loaded above */
}

static void test_backends(void) {
  size_t count = 0;
  EXPECT_OK(tessera_backend_count(&count));
  CHECK(count >= 2); /* portable and ctest at least */
  int found = 0;
  for (size_t i = 0; i < count; ++i) {
    const char* name = NULL;
    EXPECT_OK(tessera_backend_name(i, &name));
    found += strcmp(name, "ctest") == 0 || strcmp(name, "portable") == 0;
  }
  CHECK(found == 2);
  const char* name = NULL;
  EXPECT_ERROR(tessera_backend_name(count, &name), TESSERA_ERROR_NOT_FOUND, "out of range");
  EXPECT_ERROR(tessera_backend_name(0, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "name is NULL");

  int available = 0;
  const char* reason = NULL;
  EXPECT_OK(tessera_backend_available("ctest", &available, &reason));
  CHECK(available == 1);
  CHECK_STR(reason, "");
  EXPECT_OK(tessera_backend_available("portable", &available, NULL));
  CHECK(available == 1);
  EXPECT_ERROR(tessera_backend_available("ctset", &available, NULL),
               TESSERA_ERROR_OPTION_UNKNOWN_BACKEND, "did you mean 'ctest'");
  EXPECT_ERROR(tessera_backend_available(NULL, &available, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "backend is NULL");
  EXPECT_ERROR(tessera_backend_available("ctest", NULL, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "available is NULL");

  EXPECT_OK(tessera_backend_option_count("ctest", &count));
  CHECK(count == 6);
  EXPECT_ERROR(tessera_backend_option_count("nope", &count), TESSERA_ERROR_OPTION_UNKNOWN_BACKEND,
               "nope");
  EXPECT_ERROR(tessera_backend_option_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_backend_option_count("ctest", NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  tessera_option_spec spec;
  EXPECT_OK(tessera_backend_option_spec("ctest", 0, &spec));
  CHECK_STR(spec.key, "threads");
  CHECK(spec.type == TESSERA_OPTION_INT);
  CHECK_STR(spec.default_value, "0");
  CHECK(spec.min_int == 0 && spec.max_int == 64);
  CHECK(spec.scopes == (TESSERA_SCOPE_GLOBAL | TESSERA_SCOPE_LOAD | TESSERA_SCOPE_DELEGATE));
  CHECK(spec.init_only == 0);
  CHECK_STR(spec.doc, "Worker threads; 0 = auto");
  EXPECT_OK(tessera_backend_option_spec("ctest", 1, &spec));
  CHECK(spec.type == TESSERA_OPTION_ENUM);
  CHECK(spec.num_choices == 2);
  CHECK_STR(spec.choices[0], "fast");
  CHECK_STR(spec.choices[1], "exact");
  CHECK_STR(spec.default_value, "fast");
  EXPECT_OK(tessera_backend_option_spec("ctest", 2, &spec));
  CHECK(spec.type == TESSERA_OPTION_STRING && spec.max_length == 8);
  EXPECT_OK(tessera_backend_option_spec("ctest", 3, &spec));
  CHECK(spec.type == TESSERA_OPTION_DOUBLE && spec.min_double == 0.0 && spec.max_double == 10.0);
  EXPECT_OK(tessera_backend_option_spec("ctest", 4, &spec));
  CHECK_STR(spec.key, "device");
  CHECK(spec.init_only == 1);
  EXPECT_OK(tessera_backend_option_spec("ctest", 5, &spec));
  CHECK(spec.type == TESSERA_OPTION_BOOL && spec.scopes == TESSERA_SCOPE_EXECUTE);
  CHECK_STR(spec.default_value, "false");
  EXPECT_ERROR(tessera_backend_option_spec("ctest", 6, &spec), TESSERA_ERROR_NOT_FOUND,
               "option 6 out of range");
  EXPECT_ERROR(tessera_backend_option_spec("ctset", 0, &spec), TESSERA_ERROR_OPTION_UNKNOWN_BACKEND,
               "ctset");
  EXPECT_ERROR(tessera_backend_option_spec(NULL, 0, &spec), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_backend_option_spec("ctest", 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
}

/* The validation errors every option setter shares, through `set` at a scope that accepts
 * threads, mode, label and scale but not profile. */
typedef tessera_status* (*setter)(void* target, const char* backend, const char* key,
                                  const char* value);

static void check_option_errors(setter set, void* target) {
  EXPECT_ERROR(set(target, "ctest", "thread", "1"), TESSERA_ERROR_OPTION_UNKNOWN_KEY,
               "did you mean 'threads'");
  EXPECT_ERROR(set(target, "ctest", "threads", "four"), TESSERA_ERROR_OPTION_TYPE_MISMATCH,
               "threads");
  EXPECT_ERROR(set(target, "ctest", "threads", "65"), TESSERA_ERROR_OPTION_OUT_OF_RANGE, "65");
  EXPECT_ERROR(set(target, "ctest", "mode", "slow"), TESSERA_ERROR_OPTION_INVALID_CHOICE, "fast");
  EXPECT_ERROR(set(target, "ctest", "label", "123456789"), TESSERA_ERROR_OPTION_TOO_LONG, "label");
  EXPECT_ERROR(set(target, "ctest", "scale", "11.5"), TESSERA_ERROR_OPTION_OUT_OF_RANGE, "scale");
  EXPECT_ERROR(set(target, "ctest", "profile", "true"), TESSERA_ERROR_OPTION_WRONG_SCOPE,
               "execute");
  EXPECT_ERROR(set(target, "ctset", "threads", "1"), TESSERA_ERROR_OPTION_UNKNOWN_BACKEND,
               "did you mean 'ctest'");
  EXPECT_ERROR(set(target, NULL, "threads", "1"), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(set(target, "ctest", NULL, "1"), TESSERA_ERROR_INVALID_ARGUMENT, "key is NULL");
  EXPECT_ERROR(set(target, "ctest", "threads", NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "value is NULL");
}

static tessera_status* set_global(void* unused, const char* backend, const char* key,
                                  const char* value) {
  (void)unused;
  return tessera_set_global_option(backend, key, value);
}

static tessera_status* set_load(void* options, const char* backend, const char* key,
                                const char* value) {
  return tessera_load_options_set_option((tessera_load_options*)options, backend, key, value);
}

static tessera_status* set_delegate(void* options, const char* backend, const char* key,
                                    const char* value) {
  /* "ctest" -> "ctest#0"; NULL stays NULL to reach the NULL check. */
  char id[64];
  if (backend != NULL) snprintf(id, sizeof id, "%s#0", backend);
  return tessera_load_options_set_delegate_option((tessera_load_options*)options,
                                                  backend ? id : NULL, key, value);
}

static void test_global_options(void) {
  char buf[32];
  EXPECT_OK(tessera_set_global_option("ctest", "threads", "4"));
  EXPECT_OK(tessera_get_global_option("ctest", "threads", buf, sizeof buf));
  CHECK_STR(buf, "4");
  EXPECT_OK(tessera_set_global_option("ctest", "scale", "2.5"));
  EXPECT_OK(tessera_get_global_option("ctest", "scale", buf, sizeof buf));
  CHECK_STR(buf, "2.5");
  EXPECT_OK(tessera_get_global_option("ctest", "mode", buf, sizeof buf));
  CHECK_STR(buf, "fast"); /* the default */
  EXPECT_ERROR(tessera_get_global_option("ctest", "threads", buf, 1),
               TESSERA_ERROR_INVALID_ARGUMENT, "needs 2 bytes");
  EXPECT_ERROR(tessera_get_global_option("ctest", "thread", buf, sizeof buf),
               TESSERA_ERROR_OPTION_UNKNOWN_KEY, "threads");
  EXPECT_ERROR(tessera_get_global_option("ctset", "threads", buf, sizeof buf),
               TESSERA_ERROR_OPTION_UNKNOWN_BACKEND, "ctset");
  EXPECT_ERROR(tessera_get_global_option(NULL, "threads", buf, sizeof buf),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_get_global_option("ctest", NULL, buf, sizeof buf),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_get_global_option("ctest", "threads", NULL, 4),
               TESSERA_ERROR_INVALID_ARGUMENT, "buffer is NULL");
  check_option_errors(set_global, NULL);
  /* A failed set changed nothing. */
  EXPECT_OK(tessera_get_global_option("ctest", "threads", buf, sizeof buf));
  CHECK_STR(buf, "4");

  EXPECT_OK(tessera_reset_global_options("ctest"));
  EXPECT_OK(tessera_get_global_option("ctest", "threads", buf, sizeof buf));
  CHECK_STR(buf, "0");
  EXPECT_ERROR(tessera_reset_global_options("ctset"), TESSERA_ERROR_OPTION_UNKNOWN_BACKEND,
               "ctset");
  EXPECT_ERROR(tessera_reset_global_options(NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
}

static void test_device_info(void) {
  char* json = NULL;
  EXPECT_OK(tessera_device_info_json(0, &json));
  CHECK(json != NULL && json[0] == '{' && strstr(json, "\"cpus\"") != NULL);
  tessera_string_free(json);
  tessera_string_free(NULL);
  EXPECT_ERROR(tessera_device_info_json(0, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "json is NULL");
}

static void test_program(void) {
  size_t size = 0;
  unsigned char* bytes = ctest_program(1, &size);
  CHECK(bytes != NULL && size > 64);
  tessera_program* program = NULL;

  /* From a file. */
  char path[] = "/tmp/tessera_c_api_test_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, bytes, size) == (ssize_t)size);
  close(fd);
  EXPECT_OK(tessera_program_load_file(path, &program));
  size_t count = 0;
  EXPECT_OK(tessera_program_method_count(program, &count));
  CHECK(count == 1);
  const char* name = NULL;
  EXPECT_OK(tessera_program_method_name(program, 0, &name));
  CHECK_STR(name, "forward");
  EXPECT_ERROR(tessera_program_method_name(program, 1, &name), TESSERA_ERROR_NOT_FOUND,
               "method 1 out of range");
  EXPECT_ERROR(tessera_program_method_name(program, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_program_method_name(NULL, 0, &name), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_program_method_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_program_method_count(program, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  tessera_program_free(program);
  tessera_program_free(NULL);

  /* A file that is not a program; a truncated one. */
  fd = open(path, O_WRONLY | O_TRUNC);
  CHECK(fd >= 0);
  CHECK(write(fd, "not a program, not at all, definitely not one", 45) == 45);
  close(fd);
  program = NULL;
  EXPECT_ERROR(tessera_program_load_file(path, &program), TESSERA_ERROR_INVALID_PROGRAM, "");
  CHECK(program == NULL);
  unlink(path);
  EXPECT_ERROR(tessera_program_load_file(path, &program), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_program_load_file(NULL, &program), TESSERA_ERROR_INVALID_ARGUMENT,
               "path is NULL");
  EXPECT_ERROR(tessera_program_load_file(path, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "program is NULL");

  /* From memory: the bytes are copied, so they may go at once. */
  unsigned char* copy = malloc(size);
  memcpy(copy, bytes, size);
  EXPECT_OK(tessera_program_load_memory(copy, size, &program));
  memset(copy, 0, size);
  free(copy);
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", NULL, &method));
  tessera_method_free(method);
  tessera_program_free(program);

  tessera_status* s = tessera_program_load_memory(bytes, size / 2, &program);
  CHECK(tessera_status_code(s) == TESSERA_ERROR_TRUNCATED ||
        tessera_status_code(s) == TESSERA_ERROR_INVALID_PROGRAM);
  tessera_status_free(s);
  EXPECT_ERROR(tessera_program_load_memory("garbage garbage garbage garbage", 31, &program),
               TESSERA_ERROR_INVALID_PROGRAM, "");
  EXPECT_ERROR(tessera_program_load_memory(bytes, 0, &program), TESSERA_ERROR_INVALID_ARGUMENT,
               "size is 0");
  EXPECT_ERROR(tessera_program_load_memory(NULL, size, &program), TESSERA_ERROR_INVALID_ARGUMENT,
               "data is NULL");
  EXPECT_ERROR(tessera_program_load_memory(bytes, size, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "program is NULL");
  free(bytes);
}

static void test_load_options(void) {
  tessera_load_options* options = NULL;
  EXPECT_ERROR(tessera_load_options_create(NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_set_option(options, "ctest", "threads", "2"));
  check_option_errors(set_load, options);
  EXPECT_ERROR(tessera_load_options_set_option(NULL, "ctest", "threads", "2"),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");

  EXPECT_OK(tessera_load_options_set_delegate_option(options, "ctest#1", "label", "b"));
  check_option_errors(set_delegate, options);
  EXPECT_ERROR(tessera_load_options_set_delegate_option(options, "ctest", "label", "b"),
               TESSERA_ERROR_INVALID_ARGUMENT, "not a delegate id");
  EXPECT_ERROR(tessera_load_options_set_delegate_option(NULL, "ctest#0", "label", "b"),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");

  /* Lenient: unknown backends and keys are skipped; other errors stay errors. */
  EXPECT_OK(tessera_load_options_set_lenient(options, 1));
  EXPECT_OK(tessera_load_options_set_option(options, "ctest", "thread", "1"));
  EXPECT_OK(tessera_load_options_set_option(options, "newer_backend", "threads", "1"));
  EXPECT_OK(tessera_load_options_set_delegate_option(options, "ctest#0", "thread", "1"));
  EXPECT_ERROR(tessera_load_options_set_option(options, "ctest", "threads", "65"),
               TESSERA_ERROR_OPTION_OUT_OF_RANGE, "65");
  EXPECT_OK(tessera_load_options_set_lenient(options, 0));
  EXPECT_ERROR(tessera_load_options_set_option(options, "ctest", "thread", "1"),
               TESSERA_ERROR_OPTION_UNKNOWN_KEY, "threads");
  EXPECT_ERROR(tessera_load_options_set_lenient(NULL, 1), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  EXPECT_OK(tessera_load_options_set_dim(options, "batch", 3));
  EXPECT_ERROR(tessera_load_options_set_dim(options, "batch", 4), TESSERA_ERROR_INVALID_ARGUMENT,
               "batch");
  EXPECT_ERROR(tessera_load_options_set_dim(options, "", 4), TESSERA_ERROR_INVALID_ARGUMENT, "");
  EXPECT_ERROR(tessera_load_options_set_dim(options, NULL, 4), TESSERA_ERROR_INVALID_ARGUMENT,
               "name is NULL");
  EXPECT_ERROR(tessera_load_options_set_dim(NULL, "batch", 4), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");

  const int64_t shape[2] = {3, 4};
  const int64_t negative[2] = {-1, 4};
  const int64_t too_many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_OK(tessera_load_options_set_input_shape(options, "x", shape, 2));
  EXPECT_ERROR(tessera_load_options_set_input_shape(options, "y", negative, 2),
               TESSERA_ERROR_INVALID_ARGUMENT, "");
  EXPECT_ERROR(tessera_load_options_set_input_shape(options, "z", too_many, 9),
               TESSERA_ERROR_INVALID_ARGUMENT, "");
  EXPECT_ERROR(tessera_load_options_set_input_shape(options, "x", shape, 2),
               TESSERA_ERROR_INVALID_ARGUMENT, "");
  EXPECT_ERROR(tessera_load_options_set_input_shape(options, "w", NULL, 2),
               TESSERA_ERROR_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_ERROR(tessera_load_options_set_input_shape(options, NULL, shape, 2),
               TESSERA_ERROR_INVALID_ARGUMENT, "name is NULL");
  EXPECT_ERROR(tessera_load_options_set_input_shape(NULL, "x", shape, 2),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  EXPECT_OK(tessera_load_options_add_retarget(options, "ctest", "portable"));
  EXPECT_ERROR(tessera_load_options_add_retarget(options, "ctest", "portable"),
               TESSERA_ERROR_INVALID_ARGUMENT, "retargeted twice");
  EXPECT_ERROR(tessera_load_options_add_retarget(options, NULL, "portable"),
               TESSERA_ERROR_INVALID_ARGUMENT, "from is NULL");
  EXPECT_ERROR(tessera_load_options_add_retarget(options, "a", NULL),
               TESSERA_ERROR_INVALID_ARGUMENT, "to is NULL");
  EXPECT_ERROR(tessera_load_options_add_retarget(NULL, "a", "b"), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");

  EXPECT_OK(tessera_load_options_set_fallback(options, "ctest,portable"));
  EXPECT_ERROR(tessera_load_options_set_fallback(options, "ctest,ctest"),
               TESSERA_ERROR_INVALID_ARGUMENT, "appears twice");
  EXPECT_ERROR(tessera_load_options_set_fallback(options, "ctest,"), TESSERA_ERROR_INVALID_ARGUMENT,
               "ends with a comma");
  EXPECT_ERROR(tessera_load_options_set_fallback(options, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "chain is NULL");
  EXPECT_ERROR(tessera_load_options_set_fallback(NULL, "a"), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");

  EXPECT_OK(tessera_load_options_set_policy(options, "power_saver"));
  EXPECT_ERROR(tessera_load_options_set_policy(options, "fastest"), TESSERA_ERROR_INVALID_ARGUMENT,
               "latency");
  EXPECT_ERROR(tessera_load_options_set_policy(options, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "policy is NULL");
  EXPECT_ERROR(tessera_load_options_set_policy(NULL, "auto"), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  tessera_load_options_free(options);
  tessera_load_options_free(NULL);
}

static void test_execute_options(void) {
  tessera_execute_options* options = NULL;
  EXPECT_ERROR(tessera_execute_options_create(NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_OK(tessera_execute_options_create(&options));
  EXPECT_OK(tessera_execute_options_set_option(options, "ctest", "profile", "true"));
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctest", "threads", "1"),
               TESSERA_ERROR_OPTION_WRONG_SCOPE, "threads");
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctest", "profil", "true"),
               TESSERA_ERROR_OPTION_UNKNOWN_KEY, "did you mean 'profile'");
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctest", "profile", "maybe"),
               TESSERA_ERROR_OPTION_TYPE_MISMATCH, "profile");
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctset", "profile", "true"),
               TESSERA_ERROR_OPTION_UNKNOWN_BACKEND, "ctest");
  EXPECT_ERROR(tessera_execute_options_set_option(NULL, "ctest", "profile", "true"),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_execute_options_set_option(options, NULL, "profile", "true"),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctest", NULL, "true"),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_execute_options_set_option(options, "ctest", "profile", NULL),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  tessera_execute_options_free(options);
  tessera_execute_options_free(NULL);
}

/* relu(x + bias) * scale, as tests/testing/test_programs.h computes it. */
static void reference(const float* x, float* y, int rows) {
  const float bias[4] = {-1.0f, 0.5f, 2.0f, -3.0f};
  const float scale[4] = {2.0f, 2.0f, 0.5f, 1.0f};
  for (int i = 0; i < rows * 4; ++i) {
    float v = x[i] + bias[i % 4];
    y[i] = (v > 0 ? v : 0) * scale[i % 4];
  }
}

static void test_method(void) {
  tessera_program* program = load_test_program(0);
  tessera_load_options* options = NULL;
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_set_dim(options, "batch", 3));
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));

  int64_t batch = 0;
  EXPECT_OK(tessera_method_symbol_value(method, "batch", &batch));
  CHECK(batch == 3);
  EXPECT_ERROR(tessera_method_symbol_value(method, "height", &batch), TESSERA_ERROR_NOT_FOUND,
               "height");
  EXPECT_ERROR(tessera_method_symbol_value(method, NULL, &batch), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_symbol_value(method, "batch", NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_symbol_value(NULL, "batch", &batch), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");

  const char* policy = NULL;
  const char* why = NULL;
  EXPECT_OK(tessera_method_policy(method, &policy, &why));
  CHECK(policy != NULL && why != NULL); /* no delegates: no policy was decided */
  EXPECT_OK(tessera_method_policy(method, &policy, NULL));
  EXPECT_ERROR(tessera_method_policy(method, NULL, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_policy(NULL, &policy, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  size_t count = 0;
  EXPECT_OK(tessera_method_input_count(method, &count));
  CHECK(count == 1);
  EXPECT_OK(tessera_method_output_count(method, &count));
  CHECK(count == 1);
  EXPECT_OK(tessera_method_delegate_count(method, &count));
  CHECK(count == 0);
  EXPECT_ERROR(tessera_method_input_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_input_count(method, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_output_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_output_count(method, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  tessera_tensor_info info;
  EXPECT_OK(tessera_method_input_info(method, 0, &info));
  CHECK_STR(info.name, "x");
  CHECK(info.dtype == TESSERA_DTYPE_FLOAT32);
  CHECK(info.rank == 2 && info.dims[0] == 3 && info.dims[1] == 4);
  CHECK(info.nbytes == 3 * 4 * sizeof(float));
  EXPECT_OK(tessera_method_output_info(method, 0, &info));
  CHECK_STR(info.name, "y");
  CHECK(info.rank == 2 && info.dims[0] == 3 && info.dims[1] == 4);
  EXPECT_ERROR(tessera_method_input_info(method, 1, &info), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_output_info(method, 1, &info), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_input_info(method, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_output_info(NULL, 0, &info), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  /* Copying input. */
  float x[12], want[12], got[12];
  for (int i = 0; i < 12; ++i) x[i] = (float)(i - 5) * 0.75f;
  reference(x, want, 3);
  const int64_t dims[2] = {3, 4};
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_copy_output(method, 0, got, sizeof got));
  CHECK(memcmp(got, want, sizeof want) == 0);
  const void* out = NULL;
  size_t nbytes = 0;
  EXPECT_OK(tessera_method_output(method, 0, &out, &nbytes));
  CHECK(nbytes == sizeof want && memcmp(out, want, sizeof want) == 0);

  /* Zero copy: write into the method's own buffer. */
  void* in = NULL;
  EXPECT_OK(tessera_method_input_buffer(method, 0, &in, &nbytes));
  CHECK(nbytes == sizeof x);
  for (int i = 0; i < 12; ++i) x[i] = (float)i;
  memcpy(in, x, sizeof x);
  reference(x, want, 3);
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_copy_output(method, 0, got, sizeof got));
  CHECK(memcmp(got, want, sizeof want) == 0);

  /* Input errors. */
  const int64_t wrong[2] = {2, 4};
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_INT32, dims, 2, x, sizeof x),
               TESSERA_ERROR_INVALID_TYPE, "float32");
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, wrong, 2, x, 32),
               TESSERA_ERROR_SHAPE_MISMATCH, "[3, 4]");
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, 4),
               TESSERA_ERROR_INVALID_ARGUMENT, "48 bytes");
  EXPECT_ERROR(tessera_method_set_input(method, 0, (tessera_dtype)42, dims, 2, x, sizeof x),
               TESSERA_ERROR_INVALID_TYPE, "42");
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, nine, 9, x, 4),
               TESSERA_ERROR_INVALID_ARGUMENT, "rank 9");
  const int64_t negative[2] = {-3, 4};
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, negative, 2, x, 0),
               TESSERA_ERROR_INVALID_ARGUMENT, "negative");
  EXPECT_ERROR(tessera_method_set_input(method, 1, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x),
               TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, NULL, 2, x, sizeof x),
               TESSERA_ERROR_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_ERROR(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, NULL, 0),
               TESSERA_ERROR_INVALID_ARGUMENT, "data is NULL");
  EXPECT_ERROR(tessera_method_set_input(NULL, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_input_buffer(method, 1, &in, &nbytes), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_input_buffer(method, 0, NULL, &nbytes),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_input_buffer(method, 0, &in, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_input_buffer(NULL, 0, &in, &nbytes), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");

  /* Output errors. */
  EXPECT_ERROR(tessera_method_copy_output(method, 0, got, 8), TESSERA_ERROR_INVALID_ARGUMENT,
               "48 bytes");
  EXPECT_ERROR(tessera_method_copy_output(method, 1, got, sizeof got), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_copy_output(method, 0, NULL, sizeof got),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_copy_output(NULL, 0, got, sizeof got), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_output(method, 1, &out, &nbytes), TESSERA_ERROR_NOT_FOUND, "");
  EXPECT_ERROR(tessera_method_output(method, 0, NULL, &nbytes), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_output(method, 0, &out, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_output(NULL, 0, &out, &nbytes), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_execute(NULL, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  tessera_method_free(method);
  tessera_method_free(NULL);
  tessera_load_options_free(options);

  /* The dim from an input shape; a dim out of the program's bounds; unknown method. */
  EXPECT_OK(tessera_load_options_create(&options));
  const int64_t five[2] = {5, 4};
  EXPECT_OK(tessera_load_options_set_input_shape(options, "x", five, 2));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_symbol_value(method, "batch", &batch));
  CHECK(batch == 5);
  tessera_method_free(method);
  tessera_load_options_free(options);
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_set_dim(options, "batch", 9));
  method = NULL;
  EXPECT_ERROR(tessera_method_load(program, "forward", options, &method),
               TESSERA_ERROR_INVALID_ARGUMENT, "[1, 8]");
  CHECK(method == NULL);
  tessera_load_options_free(options);
  EXPECT_ERROR(tessera_method_load(program, "backward", NULL, &method), TESSERA_ERROR_NOT_FOUND,
               "backward");
  EXPECT_ERROR(tessera_method_load(NULL, "forward", NULL, &method), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_load(program, NULL, NULL, &method), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_load(program, "forward", NULL, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  tessera_program_free(program);
}

static void test_delegates(void) {
  tessera_program* program = load_test_program(1);
  EXPECT_OK(tessera_reset_global_options("ctest"));
  /* Global (init-only accepted before the first load), load per backend, per delegate. */
  EXPECT_OK(tessera_set_global_option("ctest", "device", "gpu"));
  EXPECT_OK(tessera_set_global_option("ctest", "scale", "3"));
  tessera_load_options* options = NULL;
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_set_option(options, "ctest", "threads", "2"));
  EXPECT_OK(tessera_load_options_set_delegate_option(options, "ctest#1", "label", "second"));
  EXPECT_OK(tessera_load_options_set_delegate_option(options, "ctest#1", "mode", "exact"));
  EXPECT_OK(tessera_load_options_set_policy(options, "power_saver"));
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  tessera_load_options_free(options);
  const char* policy = NULL;
  const char* why = NULL;
  EXPECT_OK(tessera_method_policy(method, &policy, &why));
  CHECK_STR(policy, "power_saver");
  CHECK(strstr(why, "power_saver") != NULL);

  size_t count = 0;
  EXPECT_OK(tessera_method_delegate_count(method, &count));
  CHECK(count == 2);
  tessera_delegate_info info;
  EXPECT_OK(tessera_method_delegate_info(method, 1, &info));
  CHECK_STR(info.id, "ctest#1");
  CHECK_STR(info.backend, "ctest");
  CHECK_STR(info.requested_backend, "ctest");
  CHECK_STR(info.reason, "");
  CHECK(info.num_nodes == 1);
  CHECK(info.num_options == 6);
  tessera_delegate_option o;
  CHECK(find_option(method, 1, "threads", &o) >= 0);
  CHECK_STR(o.value, "2");
  CHECK_STR(o.source, "load");
  CHECK(o.resolved_value == NULL); /* set explicitly: nothing derived */
  CHECK(find_option(method, 1, "label", &o) >= 0);
  CHECK_STR(o.value, "\"second\"");
  CHECK_STR(o.source, "delegate");
  CHECK_STR(o.origin, "");
  CHECK(find_option(method, 1, "mode", &o) >= 0);
  CHECK_STR(o.value, "exact");
  CHECK(find_option(method, 0, "mode", &o) >= 0);
  CHECK_STR(o.value, "fast");
  CHECK_STR(o.source, "default");
  CHECK(find_option(method, 0, "device", &o) >= 0);
  CHECK_STR(o.value, "gpu");
  CHECK_STR(o.source, "global");
  CHECK(find_option(method, 0, "scale", &o) >= 0);
  CHECK_STR(o.value, "3");
  EXPECT_ERROR(tessera_method_delegate_info(method, 2, &info), TESSERA_ERROR_NOT_FOUND,
               "delegate 2 out of range");
  EXPECT_ERROR(tessera_method_delegate_info(method, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_delegate_info(NULL, 0, &info), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_delegate_option(method, 0, 6, &o), TESSERA_ERROR_NOT_FOUND,
               "'ctest#0' has 6");
  EXPECT_ERROR(tessera_method_delegate_option(method, 2, 0, &o), TESSERA_ERROR_NOT_FOUND,
               "delegate 2");
  EXPECT_ERROR(tessera_method_delegate_option(method, 0, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_delegate_option(NULL, 0, 0, &o), TESSERA_ERROR_INVALID_ARGUMENT,
               "NULL");
  EXPECT_ERROR(tessera_method_delegate_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_method_delegate_count(method, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  /* The init-only option is locked now; the same value is still accepted. */
  EXPECT_ERROR(tessera_set_global_option("ctest", "device", "cpu"), TESSERA_ERROR_INVALID_STATE,
               "device");
  EXPECT_OK(tessera_set_global_option("ctest", "device", "gpu"));

  /* Execute with per-call options; the chain copies its input. */
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0};
  const int64_t dims[2] = {2, 4};
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  tessera_execute_options* exec = NULL;
  EXPECT_OK(tessera_execute_options_create(&exec));
  EXPECT_OK(tessera_execute_options_set_option(exec, "ctest", "profile", "true"));
  EXPECT_OK(tessera_method_execute(method, exec));
  EXPECT_OK(tessera_method_copy_output(method, 0, y, sizeof y));
  CHECK(memcmp(x, y, sizeof x) == 0);
  tessera_execute_options_free(exec);
  /* Options for a backend that runs no delegate of this method. */
  EXPECT_OK(tessera_execute_options_create(&exec));
  EXPECT_OK(tessera_execute_options_set_option(exec, "portable", "profile", "true"));
  tessera_status* s = tessera_method_execute(method, exec);
  CHECK(s != NULL && strstr(tessera_status_message(s), "portable") != NULL);
  tessera_status_free(s);
  tessera_execute_options_free(exec);
  tessera_method_free(method);

  /* Without options: threads stays at its default, and the backend reports what it derived. */
  EXPECT_OK(tessera_method_load(program, "forward", NULL, &method));
  CHECK(find_option(method, 0, "threads", &o) >= 0);
  CHECK_STR(o.value, "0");
  CHECK_STR(o.source, "default");
  CHECK(o.resolved_value != NULL && strcmp(o.resolved_value, "1") == 0);
  CHECK(o.resolved_reason != NULL && strstr(o.resolved_reason, "auto") != NULL);
  tessera_method_free(method);

  /* Retargeting: the program's ctest delegates run on the portable kernels, and say so. */
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_add_retarget(options, "ctest", "portable"));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "portable");
  CHECK_STR(info.requested_backend, "ctest");
  CHECK(strstr(info.reason, "retarget") != NULL);
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_copy_output(method, 0, y, sizeof y));
  CHECK(memcmp(x, y, sizeof x) == 0); /* relu of positive values */
  tessera_method_free(method);
  tessera_load_options_free(options);

  /* Fallback: a retarget to a backend that does not exist falls back along the chain. */
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_OK(tessera_load_options_add_retarget(options, "ctest", "missing"));
  method = NULL;
  s = tessera_method_load(program, "forward", options, &method);
  CHECK(s != NULL && strstr(tessera_status_message(s), "missing") != NULL);
  tessera_status_free(s);
  CHECK(method == NULL);
  EXPECT_OK(tessera_load_options_set_fallback(options, "portable"));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "portable");
  CHECK(strstr(info.reason, "missing") != NULL);
  tessera_method_free(method);
  tessera_load_options_free(options);

  /* A startup backend: the ctest backend inits warm (nothing to build), so it is not used. */
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_ERROR(tessera_load_options_set_startup_backend(
                   options, "a-backend-name-far-longer-than-thirty-one-characters"),
               TESSERA_ERROR_INVALID_ARGUMENT, "startup backend name");
  EXPECT_ERROR(tessera_load_options_set_startup_backend(options, NULL),
               TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_OK(tessera_load_options_set_startup_backend(options, "nope"));
  method = NULL;
  EXPECT_ERROR(tessera_method_load(program, "forward", options, &method),
               TESSERA_ERROR_OPTION_UNKNOWN_BACKEND, "startup backend");
  EXPECT_OK(tessera_load_options_set_startup_backend(options, "portable"));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  tessera_delegate_startup startup;
  EXPECT_OK(tessera_method_delegate_startup(method, 0, &startup));
  CHECK_STR(startup.backend, "");
  CHECK(strstr(startup.reason, "not used") != NULL);
  CHECK(startup.switched_at_execute == -1);
  int done = 0;
  EXPECT_OK(tessera_method_wait_for_startup(method, 0, &done));
  CHECK(done == 1);
  EXPECT_ERROR(tessera_method_delegate_startup(method, 2, &startup), TESSERA_ERROR_NOT_FOUND,
               "delegate 2");
  tessera_method_free(method);
  tessera_load_options_free(options);

  tessera_program_free(program);
}

static void test_execute_failure(void) {
  tessera_program* program = load_test_program(2);
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8] = {0};
  const int64_t dims[2] = {2, 4};
  tessera_load_options* options = NULL;
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_ERROR(tessera_load_options_set_on_execute_failure(options, "retry"),
               TESSERA_ERROR_INVALID_ARGUMENT, "fallback");
  EXPECT_ERROR(tessera_load_options_set_on_execute_failure(options, NULL),
               TESSERA_ERROR_INVALID_ARGUMENT, "mode is NULL");
  EXPECT_ERROR(tessera_load_options_set_on_execute_failure(NULL, "fail"),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");
  EXPECT_OK(tessera_load_options_set_fallback(options, "ctest"));

  /* "fail" (the default): the error reaches the caller and the delegate stays. */
  EXPECT_OK(tessera_load_options_set_on_execute_failure(options, "fail"));
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  EXPECT_ERROR(tessera_method_execute(method, NULL), TESSERA_ERROR_DELEGATE_EXECUTION_FAILED,
               "injected execute failure");
  tessera_delegate_info info;
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "ctest_failing");
  CHECK(info.execute_fallbacks == 0);
  CHECK_STR(info.execute_fallback_reason, "");
  tessera_method_free(method);

  /* "fallback": the delegate moves to ctest and runs again in the same call. */
  EXPECT_OK(tessera_load_options_set_on_execute_failure(options, "fallback"));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_copy_output(method, 0, y, sizeof y));
  CHECK(memcmp(x, y, sizeof x) == 0);
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "ctest");
  CHECK_STR(info.requested_backend, "ctest_failing");
  CHECK(info.execute_fallbacks == 1);
  CHECK(strstr(info.execute_fallback_reason, "injected execute failure") != NULL);
  CHECK(strstr(info.execute_fallback_reason, "ctest") != NULL);
  /* It stays on ctest. */
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK(info.execute_fallbacks == 1);
  tessera_method_free(method);
  tessera_load_options_free(options);
  tessera_program_free(program);
}

/* Removes `dir` and the files in it (no subdirectories). */
static void remove_directory(const char* dir) {
  DIR* d = opendir(dir);
  CHECK(d != NULL);
  if (d == NULL) return;
  struct dirent* e;
  char path[512];
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    CHECK(unlink(path) == 0);
  }
  closedir(d);
  CHECK(rmdir(dir) == 0);
}

static void test_selection(void) {
  tessera_load_options* options = NULL;
  EXPECT_OK(tessera_load_options_create(&options));
  EXPECT_ERROR(tessera_load_options_set_selection(options, "fastest"),
               TESSERA_ERROR_INVALID_ARGUMENT, "auto, fixed or measure");
  EXPECT_ERROR(tessera_load_options_set_selection(options, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "mode is NULL");
  EXPECT_ERROR(tessera_load_options_set_selection(NULL, "auto"), TESSERA_ERROR_INVALID_ARGUMENT,
               "options is NULL");
  EXPECT_ERROR(tessera_load_options_set_selection_tolerance(options, -1e-4),
               TESSERA_ERROR_INVALID_ARGUMENT, "selection tolerance -0.0001 must be a finite");
  EXPECT_ERROR(tessera_load_options_set_selection_tolerance(options, INFINITY),
               TESSERA_ERROR_INVALID_ARGUMENT, "finite number >= 0");
  EXPECT_ERROR(tessera_load_options_set_selection_budget_ms(options, NAN),
               TESSERA_ERROR_INVALID_ARGUMENT, "selection budget");
  /* Negative: only the auto value. */
  EXPECT_ERROR(tessera_load_options_set_selection_budget_ms(options, -2),
               TESSERA_ERROR_INVALID_ARGUMENT,
               "selection budget -2 ms must be a finite number >= 0, or auto (-1)");
  EXPECT_OK(tessera_load_options_set_selection_budget_ms(options, TESSERA_SELECTION_BUDGET_AUTO));
  EXPECT_ERROR(tessera_load_options_set_selection_cache_max_kb(options, -1),
               TESSERA_ERROR_INVALID_ARGUMENT,
               "selection cache bound -1 KiB must be 0 (none) to 1073741824 KiB");
  EXPECT_ERROR(tessera_load_options_set_selection_cache_max_kb(options, ((int64_t)1 << 30) + 1),
               TESSERA_ERROR_INVALID_ARGUMENT, "selection cache bound 1073741825 KiB");
  EXPECT_ERROR(tessera_load_options_set_selection_cache_max_kb(NULL, 1),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");
  EXPECT_OK(tessera_load_options_set_selection_cache_max_kb(options, 0));
  EXPECT_OK(tessera_load_options_set_selection_cache_max_kb(options, 64));
  EXPECT_ERROR(tessera_load_options_set_selection_runs_per_load(options, 0),
               TESSERA_ERROR_INVALID_ARGUMENT,
               "selection runs per load 0 must be 1 to 1099511627776");
  EXPECT_ERROR(tessera_load_options_set_selection_runs_per_load(options, ((int64_t)1 << 40) + 1),
               TESSERA_ERROR_INVALID_ARGUMENT, "selection runs per load 1099511627777");
  EXPECT_ERROR(tessera_load_options_set_selection_runs_per_load(NULL, 100),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");
  EXPECT_OK(tessera_load_options_set_selection_runs_per_load(options, 1));
  EXPECT_OK(tessera_load_options_set_selection_runs_per_load(options, (int64_t)1 << 40));
  EXPECT_ERROR(tessera_load_options_set_selection_cache_dir(NULL, ""),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");
  EXPECT_ERROR(tessera_load_options_set_selection_lower_precision(NULL, 1),
               TESSERA_ERROR_INVALID_ARGUMENT, "options is NULL");

  char dir[] = "/tmp/tessera_c_selection_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  EXPECT_OK(tessera_load_options_set_selection(options, "measure"));
  EXPECT_OK(tessera_load_options_set_selection_cache_dir(options, dir));
  EXPECT_OK(tessera_load_options_set_selection_tolerance(options, 1e-3));
  EXPECT_OK(tessera_load_options_set_selection_budget_ms(options, 100));
  EXPECT_OK(tessera_load_options_set_selection_runs_per_load(options, 1000));
  EXPECT_OK(tessera_load_options_set_selection_lower_precision(options, 1));
  /* Not "auto": its threads would follow how busy the machine is at each load. */
  EXPECT_OK(tessera_load_options_set_policy(options, "latency"));

  /* Delegate ctest_failing#0 may run on ctest_failing or ctest: measuring rejects the first
   * (its run fails) and chooses the second. */
  tessera_program* program = load_test_program(3);
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  tessera_delegate_info info;
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "ctest");
  CHECK_STR(info.requested_backend, "ctest_failing");
  tessera_delegate_selection selection;
  EXPECT_OK(tessera_method_delegate_selection(method, 0, &selection));
  CHECK_STR(selection.mode, "measure");
  CHECK(selection.cached == 0);
  CHECK(selection.disturbed_measurements >= 0);
  const int measured_clean = selection.disturbed_measurements == 0;
  CHECK(strstr(selection.summary, "ctest") != NULL);
  CHECK(selection.num_candidates == 2);
  int chosen = 0, rejected = 0;
  for (size_t i = 0; i < selection.num_candidates; ++i) {
    tessera_selection_candidate c;
    EXPECT_OK(tessera_method_delegate_selection_candidate(method, 0, i, &c));
    if (strcmp(c.backend, "ctest") == 0) {
      CHECK(c.accepted && c.chosen);
      CHECK(c.runs > 0 && c.median_ms >= 0 && c.init_ms >= 0 && c.alone_init_ms >= 0);
      CHECK_STR(c.options, "");
      ++chosen;
    } else {
      CHECK_STR(c.backend, "ctest_failing");
      CHECK(!c.accepted && !c.chosen);
      CHECK(strstr(c.reason, "injected execute failure") != NULL);
      ++rejected;
    }
  }
  CHECK(chosen == 1 && rejected == 1);
  tessera_selection_candidate c;
  EXPECT_ERROR(tessera_method_delegate_selection_candidate(method, 0, 2, &c),
               TESSERA_ERROR_NOT_FOUND, "selection candidate 2");
  EXPECT_ERROR(tessera_method_delegate_selection_candidate(method, 1, 0, &c),
               TESSERA_ERROR_NOT_FOUND, "delegate 1");
  EXPECT_ERROR(tessera_method_delegate_selection(method, 1, &selection), TESSERA_ERROR_NOT_FOUND,
               "delegate 1");
  EXPECT_ERROR(tessera_method_delegate_selection(method, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "info is NULL");
  tessera_method_free(method);

  /* "auto" reads the choice "measure" remembered in that directory. (A measurement whose every
   * timed run was disturbed, another process having the CPU, is measured once more first.) */
  EXPECT_OK(tessera_load_options_set_selection(options, "auto"));
  int cached = 0;
  for (int attempt = 0; attempt < 3 && !cached; ++attempt) {
    EXPECT_OK(tessera_method_load(program, "forward", options, &method));
    EXPECT_OK(tessera_method_delegate_selection(method, 0, &selection));
    cached = selection.cached;
    if (attempt == 0 && measured_clean) CHECK(cached);
    EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
    CHECK_STR(info.backend, "ctest");
    tessera_method_free(method);
  }
  CHECK(cached == 1);

  /* "fixed", or "auto" with the cache disabled, runs the program's backend. */
  EXPECT_OK(tessera_load_options_set_selection_cache_dir(options, ""));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_delegate_selection(method, 0, &selection));
  CHECK_STR(selection.mode, "fixed");
  CHECK(strstr(selection.summary, "disabled") != NULL);
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "ctest_failing");
  tessera_method_free(method);
  EXPECT_OK(tessera_load_options_set_selection_cache_dir(options, dir));
  EXPECT_OK(tessera_load_options_set_selection(options, "fixed"));
  EXPECT_OK(tessera_method_load(program, "forward", options, &method));
  EXPECT_OK(tessera_method_delegate_info(method, 0, &info));
  CHECK_STR(info.backend, "ctest_failing");
  tessera_method_free(method);
  /* NULL restores the default directory. */
  EXPECT_OK(tessera_load_options_set_selection_cache_dir(options, NULL));

  tessera_load_options_free(options);
  tessera_program_free(program);
  remove_directory(dir);
}

static int count_events(const tessera_trace* trace, const char* category, const char* name) {
  size_t count = 0;
  EXPECT_OK(tessera_trace_event_count(trace, &count));
  int found = 0;
  for (size_t i = 0; i < count; ++i) {
    tessera_trace_event e;
    EXPECT_OK(tessera_trace_get_event(trace, i, &e));
    if (strcmp(e.category, category) == 0 && (name == NULL || strcmp(e.name, name) == 0)) {
      ++found;
    }
  }
  return found;
}

static void test_traces(void) {
  tessera_trace* trace = NULL;
  CHECK(tessera_trace_running() == 0);
  EXPECT_ERROR(tessera_trace_stop(&trace), TESSERA_ERROR_INVALID_STATE, "");
  CHECK(trace == NULL);
  EXPECT_OK(tessera_trace_start());
  CHECK(tessera_trace_running() == 1);
  EXPECT_ERROR(tessera_trace_start(), TESSERA_ERROR_INVALID_STATE, "");
  EXPECT_ERROR(tessera_trace_stop(NULL), TESSERA_ERROR_INVALID_ARGUMENT, "trace is NULL");
  CHECK(tessera_trace_running() == 1); /* a failed stop leaves it running */

  tessera_program* program = load_test_program(1);
  tessera_method* method = NULL;
  EXPECT_OK(tessera_method_load(program, "forward", NULL, &method));
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const int64_t dims[2] = {2, 4};
  EXPECT_OK(tessera_method_set_input(method, 0, TESSERA_DTYPE_FLOAT32, dims, 2, x, sizeof x));
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_method_execute(method, NULL));
  EXPECT_OK(tessera_trace_stop(&trace));
  CHECK(tessera_trace_running() == 0);
  tessera_method_free(method);
  tessera_program_free(program);

  /* Spans of the loads, the two executes and each delegate call, with thread ids. */
  size_t count = 0;
  EXPECT_OK(tessera_trace_event_count(trace, &count));
  CHECK(count > 0);
  CHECK(count_events(trace, "load", NULL) >= 2);
  CHECK(count_events(trace, "execute", NULL) == 2);
  CHECK(count_events(trace, "delegate", "ctest#0") == 2);
  CHECK(count_events(trace, "delegate", "ctest#1") == 2);
  tessera_trace_event e;
  EXPECT_OK(tessera_trace_get_event(trace, 0, &e));
  CHECK(e.tid != 0 && e.dur_us >= 0 && e.start_us >= 0 && e.detail != NULL);
  EXPECT_ERROR(tessera_trace_get_event(trace, count, &e), TESSERA_ERROR_NOT_FOUND, "out of range");
  EXPECT_ERROR(tessera_trace_get_event(trace, 0, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_trace_get_event(NULL, 0, &e), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_trace_event_count(NULL, &count), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_trace_event_count(trace, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");

  /* Chrome trace-event JSON, as a string and as a file with the same text. */
  char* json = NULL;
  EXPECT_OK(tessera_trace_chrome_json(trace, &json));
  CHECK(json != NULL && strstr(json, "\"traceEvents\"") != NULL);
  CHECK(json != NULL && strstr(json, "\"ctest#1\"") != NULL);
  EXPECT_ERROR(tessera_trace_chrome_json(trace, NULL), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  EXPECT_ERROR(tessera_trace_chrome_json(NULL, &json), TESSERA_ERROR_INVALID_ARGUMENT, "NULL");
  char dir[] = "/tmp/tessera_c_trace_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  EXPECT_OK(tessera_trace_write_chrome_json(trace, path));
  FILE* f = fopen(path, "rb");
  CHECK(f != NULL);
  if (f != NULL && json != NULL) {
    size_t size = strlen(json);
    char* text = malloc(size + 1);
    size_t read = fread(text, 1, size + 1, f);
    CHECK(read == size && memcmp(text, json, size) == 0);
    free(text);
    fclose(f);
  }
  unlink(path);
  rmdir(dir);
  tessera_string_free(json);
  EXPECT_ERROR(tessera_trace_write_chrome_json(trace, "/nonexistent/dir/trace.json"),
               TESSERA_ERROR_ACCESS_FAILED, "/nonexistent/dir/trace.json");
  EXPECT_ERROR(tessera_trace_write_chrome_json(trace, NULL), TESSERA_ERROR_INVALID_ARGUMENT,
               "path is NULL");
  EXPECT_ERROR(tessera_trace_write_chrome_json(NULL, path), TESSERA_ERROR_INVALID_ARGUMENT,
               "trace is NULL");
  tessera_trace_free(trace);
  tessera_trace_free(NULL);
}

typedef struct {
  const char* name;
  void (*run)(void);
} group;

int main(int argc, char** argv) {
  static const group kGroups[] = {
      {"status", test_status},
      {"backends", test_backends},
      {"backend_library", test_backend_library},
      {"global_options", test_global_options},
      {"device_info", test_device_info},
      {"program", test_program},
      {"load_options", test_load_options},
      {"execute_options", test_execute_options},
      {"method", test_method},
      {"delegates", test_delegates},
      {"execute_failure", test_execute_failure},
      {"selection", test_selection},
      {"traces", test_traces},
  };
  if (ctest_register_backend() != 0) {
    fprintf(stderr, "c_api_test: could not register the test backend\n");
    return 1;
  }
  int ran = 0;
  for (size_t i = 0; i < sizeof kGroups / sizeof kGroups[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], kGroups[i].name) != 0) continue;
    kGroups[i].run();
    ++ran;
  }
  if (ran == 0) {
    fprintf(stderr, "c_api_test: no group '%s'\n", argv[1]);
    return 2;
  }
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
