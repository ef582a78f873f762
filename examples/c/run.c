/* tessera_c_run: load a program through the C ABI, run its first method on a ramp input, and
 * print what ran where with which options.
 *
 *   tessera_c_run MODEL.tsr [--dim NAME=VALUE] [--option BACKEND.KEY=VALUE]
 *                 [--global-option BACKEND.KEY=VALUE] [--retarget FROM=TO] [--fallback LIST]
 *                 [--select auto|fixed|measure] [--select-cache DIR] [--trace FILE.json]
 *
 * Exit status: 0 on success, 1 when Tessera reports an error (code and message on stderr),
 * 2 for a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/c/tessera.h"

/* Prints and frees `status`; returns 1 if it was an error. */
static int failed(tessera_status* status, const char* what) {
  if (status == NULL) return 0;
  fprintf(stderr, "tessera_c_run: %s: %s (%s)\n", what, tessera_status_message(status),
          tessera_error_name(tessera_status_code(status)));
  tessera_status_free(status);
  return 1;
}

/* Splits "a.b=c" (separator `sep` before '=') into three parts in `buf`; 0 if malformed. */
static int split(const char* text, char sep, char* buf, size_t size, char** a, char** b, char** c) {
  if (strlen(text) >= size) return 0;
  strcpy(buf, text);
  char* eq = strchr(buf, '=');
  if (eq == NULL) return 0;
  *eq = '\0';
  *c = eq + 1;
  *a = buf;
  if (b == NULL) return **a != '\0';
  char* dot = strrchr(buf, sep);
  if (dot == NULL || dot == buf || dot[1] == '\0') return 0;
  *dot = '\0';
  *b = dot + 1;
  return 1;
}

static int usage(const char* message) {
  fprintf(stderr,
          "tessera_c_run: %s\nusage: tessera_c_run MODEL.tsr [--dim NAME=VALUE] "
          "[--option BACKEND.KEY=VALUE] [--global-option BACKEND.KEY=VALUE] "
          "[--retarget FROM=TO] [--fallback LIST] [--select auto|fixed|measure] "
          "[--select-cache DIR] [--trace FILE.json]\n",
          message);
  return 2;
}

static int print_reports(const tessera_method* method) {
  const char* policy = NULL;
  const char* reason = NULL;
  size_t count = 0;
  if (failed(tessera_method_policy(method, &policy, &reason), "policy")) return 1;
  printf("policy %s%s%s\n", policy, reason[0] ? ": " : "", reason);
  if (failed(tessera_method_delegate_count(method, &count), "delegates")) return 1;
  for (size_t d = 0; d < count; ++d) {
    tessera_delegate_info info;
    if (failed(tessera_method_delegate_info(method, d, &info), "delegate")) return 1;
    printf("delegate %s: %zu node(s) on '%s'%s%s\n", info.id, info.num_nodes, info.backend,
           info.reason[0] ? " because: " : "", info.reason);
    for (size_t i = 0; i < info.num_options; ++i) {
      tessera_delegate_option o;
      if (failed(tessera_method_delegate_option(method, d, i, &o), "option")) return 1;
      printf("  %-24s = %-16s (%s)", o.key, o.value, o.source);
      if (o.resolved_value != NULL) printf(" -> %s (%s)", o.resolved_value, o.resolved_reason);
      printf("\n");
    }
    /* How its backend was chosen, when the load measured or read a remembered choice. */
    tessera_delegate_selection sel;
    if (failed(tessera_method_delegate_selection(method, d, &sel), "selection")) return 1;
    if (sel.summary[0] == '\0') continue;
    printf("  selection: %s%s\n", sel.summary, sel.cached ? " (remembered)" : "");
    for (size_t k = 0; k < sel.num_candidates; ++k) {
      tessera_selection_candidate c;
      if (failed(tessera_method_delegate_selection_candidate(method, d, k, &c), "candidate")) {
        return 1;
      }
      printf("    %s%s%s%s: ", c.backend, c.options[0] ? " [" : "", c.options,
             c.options[0] ? "]" : "");
      if (c.runs > 0) printf("%.4g ms over %d run(s), ", c.median_ms, c.runs);
      printf("%s%s%s\n", c.chosen ? "chosen" : (c.accepted ? "accepted" : "not accepted"),
             c.reason[0] ? ": " : "", c.reason);
    }
  }
  return 0;
}

/* --trace: where the trace of the load and the run goes; NULL without the flag. */
static const char* g_trace_path = NULL;

/* Stops the running trace and writes it to `path` as Chrome trace-event JSON (Perfetto). */
static int write_trace(const char* path) {
  /* [c-trace] */
  tessera_trace* trace = NULL;
  size_t events = 0;
  if (failed(tessera_trace_stop(&trace), "trace")) return 1;
  tessera_status* st = tessera_trace_event_count(trace, &events);
  if (st == NULL) st = tessera_trace_write_chrome_json(trace, path);
  tessera_trace_free(trace);
  if (failed(st, path)) return 1;
  printf("trace %s: %zu events\n", path, events);
  /* [c-trace] */
  return 0;
}

/* Parses the flags into `options` (and global options); 0, or the exit status. */
static int parse_flags(int argc, char** argv, tessera_load_options* options) {
  char buf[512];
  char *a, *b, *c;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage("a flag needs a value");
    const char* flag = argv[i];
    const char* value = argv[i + 1];
    tessera_status* st = NULL;
    if (strcmp(flag, "--dim") == 0) {
      if (!split(value, '.', buf, sizeof buf, &a, NULL, &c)) return usage("--dim takes NAME=VALUE");
      st = tessera_load_options_set_dim(options, a, strtoll(c, NULL, 10));
    } else if (strcmp(flag, "--option") == 0) {
      if (!split(value, '.', buf, sizeof buf, &a, &b, &c)) {
        return usage("--option takes BACKEND.KEY=VALUE");
      }
      st = strchr(a, '#') ? tessera_load_options_set_delegate_option(options, a, b, c)
                          : tessera_load_options_set_option(options, a, b, c);
    } else if (strcmp(flag, "--global-option") == 0) {
      if (!split(value, '.', buf, sizeof buf, &a, &b, &c)) {
        return usage("--global-option takes BACKEND.KEY=VALUE");
      }
      st = tessera_set_global_option(a, b, c);
    } else if (strcmp(flag, "--retarget") == 0) {
      if (!split(value, '.', buf, sizeof buf, &a, NULL, &c))
        return usage("--retarget takes FROM=TO");
      st = tessera_load_options_add_retarget(options, a, c);
    } else if (strcmp(flag, "--fallback") == 0) {
      st = tessera_load_options_set_fallback(options, value);
    } else if (strcmp(flag, "--select") == 0) {
      st = tessera_load_options_set_selection(options, value);
    } else if (strcmp(flag, "--select-cache") == 0) {
      st = tessera_load_options_set_selection_cache_dir(options, value);
    } else if (strcmp(flag, "--trace") == 0) {
      /* From here on the runtime records what it does: the load and the run. */
      if (g_trace_path == NULL) st = tessera_trace_start();
      g_trace_path = value;
    } else {
      snprintf(buf, sizeof buf, "unknown flag '%s'", flag);
      return usage(buf);
    }
    if (failed(st, flag)) return 1;
  }
  return 0;
}

/* Fills every input (a ramp for float32, zeros otherwise), executes, prints the outputs. */
static int run(tessera_method* method) {
  /* [c-run] */
  size_t inputs = 0, outputs = 0;
  if (failed(tessera_method_input_count(method, &inputs), "inputs")) return 1;
  for (size_t i = 0; i < inputs; ++i) {
    tessera_tensor_info info;
    void* data = NULL;
    size_t nbytes = 0;
    if (failed(tessera_method_input_info(method, i, &info), "input")) return 1;
    /* Zero copy: fill the method's own input buffer in place. */
    if (failed(tessera_method_input_buffer(method, i, &data, &nbytes), "input buffer")) return 1;
    memset(data, 0, nbytes);
    if (info.dtype == TESSERA_DTYPE_FLOAT32) {
      float* x = data;
      for (size_t k = 0; k < nbytes / sizeof(float); ++k) x[k] = (float)k * 0.25f - 1.0f;
    }
    printf("input  %s: %s [", info.name, tessera_dtype_name(info.dtype));
    for (size_t d = 0; d < info.rank; ++d) printf("%s%lld", d ? ", " : "", (long long)info.dims[d]);
    printf("]\n");
  }
  if (failed(tessera_method_execute(method, NULL), "execute")) return 1;
  if (failed(tessera_method_output_count(method, &outputs), "outputs")) return 1;
  for (size_t i = 0; i < outputs; ++i) {
    tessera_tensor_info info;
    const void* data = NULL;
    size_t nbytes = 0;
    if (failed(tessera_method_output_info(method, i, &info), "output")) return 1;
    if (failed(tessera_method_output(method, i, &data, &nbytes), "output data")) return 1;
    printf("output %s: %s, %zu bytes:", info.name, tessera_dtype_name(info.dtype), nbytes);
    if (info.dtype == TESSERA_DTYPE_FLOAT32) {
      const float* y = data;
      for (size_t k = 0; k < nbytes / sizeof(float) && k < 8; ++k) printf(" %g", y[k]);
    }
    printf("\n");
  }
  /* [c-run] */
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return usage("no program file given");
  /* [c-load] */
  tessera_load_options* options = NULL;
  tessera_program* program = NULL;
  tessera_method* method = NULL;
  const char* name = NULL;
  if (failed(tessera_load_options_create(&options), "load options")) return 1;
  int status = parse_flags(argc, argv, options);
  if (status == 0 && failed(tessera_program_load_file(argv[1], &program), argv[1])) status = 1;
  if (status == 0 && failed(tessera_program_method_name(program, 0, &name), "method")) status = 1;
  if (status == 0 && failed(tessera_method_load(program, name, options, &method), name)) status = 1;
  tessera_load_options_free(options); /* read during the load only */
  /* [c-load] */
  if (status == 0) status = run(method);
  if (status == 0) status = print_reports(method);
  if (g_trace_path != NULL && tessera_trace_running() && write_trace(g_trace_path) != 0) {
    status = 1;
  }
  tessera_method_free(method); /* before the program it came from */
  tessera_program_free(program);
  return status;
}
