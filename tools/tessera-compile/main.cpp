// tessera-compile: ONNX model -> Tessera program (.tsr).
//
//   tessera-compile MODEL.onnx -o OUT.tsr [--backends LIST] [--dim NAME=MIN:MAX]...
//                   [--spec BACKEND.KEY=VALUE]... [--json]
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/backend/registry.h"
#include "tessera/c/tessera.h"
#include "tessera/compiler/backend_targets.h"
#include "tessera/compiler/compiler.h"
#include "tessera/compiler/graph_dump.h"
#include "tools/common/installed_backends.h"
#include "tools/common/json_output.h"

namespace {

using tessera::Status;
namespace tc = tessera::compiler;
namespace tt = tessera::tools;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

// Reports an error on stderr and, with --json, as {"error": ...} on stdout; returns exit status 1.
int fail(const Status& status, bool json) {
  std::fprintf(stderr, "tessera-compile: error: %s\n", status.message()[0] ? status.message()
                                                                            : tessera::error_name(status.code()));
  if (json) tt::print_json(tt::error_json(status));
  return 1;
}

// A usage error: exit status 2, and with --json as {"error": {"code": "UsageError", ...}}.
int usage_error(const std::string& message, bool json) {
  if (json) tt::print_json(tt::error_json(tt::kUsageErrorCode, message));
  return 2;
}

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(n));
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compiles an ONNX model (opsets 11 to 17) into a Tessera program."};
  std::string model, output, backends_text;
  std::vector<std::string> dims, specs;
  bool json = false, print_graph = false, list_backends = false, quiet = false, no_fold_bn = false, no_fusion = false,
       no_patterns = false;
  auto* model_opt = app.add_option("model", model, "ONNX model file");
  auto* output_opt = app.add_option("-o,--output", output, "program file to write (.tsr)");
  app.add_flag("--list-backends", list_backends,
               "print the delegate backends found (the libraries installed beside libtessera, and "
               "TESSERA_BACKEND_PATH), one a line, and exit");
  app.add_option("--backends", backends_text,
                 "delegate backends in order of preference, comma-separated; 'portable' alone "
                 "means kernels only (default: onednn, then xnnpack on x86, xnnpack first "
                 "elsewhere; then any other CPU backend, then portable; the program is then "
                 "selectable: tessera-run measures which backend "
                 "runs each delegate fastest once per machine, see --select; naming backends pins "
                 "them)");
  app.add_option("--dim", dims, "bounds of a symbolic dim: NAME=MIN:MAX (e.g. batch=1:8)");
  app.add_option("--spec", specs, "compile spec for a backend's delegates: BACKEND.KEY=VALUE");
  app.add_flag("--json", json,
               "print a JSON summary on stdout (one line); errors too, as {\"error\": {\"code\", "
               "\"message\"}}");
  app.add_flag("--print-graph", print_graph, "print the optimised graph (ops, shapes, attributes) on stdout");
  app.add_flag("-q,--quiet", quiet, "no progress or summary on stderr");
  app.add_flag("--no-fold-batchnorm", no_fold_bn, "keep BatchNormalization nodes");
  app.add_flag("--no-fuse-activations", no_fusion, "keep Relu/Clip as separate nodes");
  app.add_flag("--no-fuse-patterns", no_patterns,
               "keep Gelu, LayerNormalization and channel shuffles spelled out as exported");
  app.set_version_flag("--version", std::string("tessera-compile ") + tessera_version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error (CLI11's message names the flag) exits 2.
    if (app.exit(e) == 0) return 0;
    // The parse stopped before it may have seen --json: look for it.
    const bool wants_json = std::any_of(
        argv + 1, argv + argc, [](const char* a) { return std::strcmp(a, "--json") == 0; });
    return usage_error(e.what(), wants_json);
  }
  // The backend libraries installed beside libtessera: the partitioner's candidates.
  const tt::InstalledBackends installed = tt::load_installed_backends();
  tt::print_backend_problems("tessera-compile", installed);
  if (list_backends) {
    for (const std::string& name : tessera::registered_backends()) {
      if (name != "portable") std::printf("%s\n", name.c_str());
    }
    return 0;
  }
  if (model_opt->count() == 0 || output_opt->count() == 0) {
    const char* message = "a model and -o OUT.tsr are required (see --help)";
    std::fprintf(stderr, "tessera-compile: error: %s\n", message);
    return usage_error(message, json);
  }

  tc::CompileOptions options;
  options.passes.fold_batch_norms = !no_fold_bn;
  options.passes.lower_batch_norms = !no_fold_bn;
  options.passes.fuse_activations = !no_fusion;
  options.passes.fuse_patterns = !no_patterns;
  for (const std::string& d : dims) {
    auto bound = tc::parse_dim_bound(d);
    if (!bound.ok()) return fail(bound.status(), json);
    options.import.dims.push_back(std::move(bound).value());
  }
  for (const std::string& s : specs) {
    auto spec = tc::parse_compile_spec(s);
    if (!spec.ok()) return fail(spec.status(), json);
    options.specs.push_back(std::move(spec).value());
  }
  auto targets = tc::registry_backend_targets(split_list(backends_text));
  if (!targets.ok()) return fail(targets.status(), json);
  options.backends = std::move(targets).value();
  // Without --backends the program is selectable: delegates record which backends could run
  // them, and tessera-run's default selection (auto) measures among them once per machine.
  options.selectable = backends_text.empty();

  const bool tty = !quiet && isatty(STDERR_FILENO);
  const auto start = std::chrono::steady_clock::now();
  if (tty) {
    options.progress = [&](std::string_view stage) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r\033[Ktessera-compile: %.*s... (%.1fs)", static_cast<int>(stage.size()),
                   stage.data(), t);
      std::fflush(stderr);
    };
  }
  auto compiled = tc::compile_onnx_file(model, options);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!compiled.ok()) return fail(compiled.status(), json);
  if (tty) std::fprintf(stderr, "tessera-compile: writing %s...", output.c_str());
  Status written = compiled->program.write(output);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!written.is_ok()) return fail(written, json);

  const tc::CompileReport& r = compiled->report;
  if (print_graph) std::fputs(tc::graph_to_string(compiled->graph).c_str(), stdout);
  if (json) {
    tessera::Result<tt::Json> report = tt::parse_json(tc::report_to_json(r));
    if (!report.ok()) return fail(report.status(), json);
    tt::print_json(*report);
  }
  if (!quiet) {
    std::string by_backend;
    for (const auto& [backend, ops] : r.ops_by_backend) {
      int n = 0;
      for (const auto& [op, count] : ops) n += count;
      by_backend += (by_backend.empty() ? "" : ", ") + backend + " " + std::to_string(n);
    }
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr,
                 "tessera-compile: wrote %s in %.1fs: %d ops (%s), %zu delegate(s), arena %s "
                 "(tensors total %s), constants %s\n",
                 output.c_str(), t, r.graph_nodes, by_backend.empty() ? "none" : by_backend.c_str(),
                 r.delegates.size(), human_bytes(r.arena_bytes).c_str(), human_bytes(r.unplanned_bytes).c_str(),
                 human_bytes(r.constants_bytes).c_str());
  }
  return 0;
}
