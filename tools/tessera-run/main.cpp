// tessera-run: load a program, run a method on .npy inputs (or deterministic ones), report
// outputs, latency and what each delegate ran on.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "tessera/backend/backend_library.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/profile_buffer.h"
#include "tessera/backend/registry.h"
#include "tessera/c/tessera.h"
#include "tessera/core/log.h"
#include "tessera/core/trace.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tools/common/installed_backends.h"
#include "tools/common/json_output.h"
#include "tools/common/npy.h"
#include "tools/common/terminal.h"
#include "tools/tessera-run/run_report.h"

namespace tessera::tools {
namespace {

// Reports an error on stderr and, with --json, as {"error": ...} on stdout; returns exit status 1.
int report_error(Error code, const std::string& message, bool json) {
  std::fprintf(stderr, "tessera-run: %s (%s)\n", message.c_str(), error_name(code));
  if (json) print_json(error_json(error_name(code), message));
  return 1;
}

int report_error(const Status& st, const char* context, bool json) {
  return report_error(st.code(), std::string(context) + ": " + st.message(), json);
}

// A usage error: exit status 2, and with --json as {"error": {"code": "UsageError", ...}}.
int report_usage_error(const std::string& message, bool json) {
  if (json) print_json(error_json(kUsageErrorCode, message));
  return 2;
}

// `text` as one shell word: unchanged if it needs no quoting, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-./+=:,@%", c) != nullptr;
  });
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// For a program file that does not load and is named .onnx: what to do instead (the
// tessera-compile command that makes a program of it); else "".
std::string onnx_model_hint(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (ext != ".onnx") return "";
  const std::string program =
      shell_word(std::filesystem::path(path).replace_extension(".tsr").string());
  return "'" + path + "' is an ONNX model; tessera-run runs Tessera programs. Compile it first:\n" +
         "  tessera-compile " + shell_word(path) + " -o " + program + "\n" +
         "(tessera-compile asks for --dim NAME=MIN:MAX for each symbolic dim), then run " + program;
}

void fill_deterministic(ScalarType dtype, int64_t numel, std::mt19937& rng, std::vector<uint8_t>* data) {
  data->resize(static_cast<size_t>(numel) * element_size(dtype));
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (int64_t i = 0; i < numel; ++i) {
    switch (dtype) {
      case ScalarType::Float32: reinterpret_cast<float*>(data->data())[i] = real(rng); break;
      case ScalarType::Float16: reinterpret_cast<uint16_t*>(data->data())[i] = float_to_half(real(rng)); break;
      case ScalarType::Int64: reinterpret_cast<int64_t*>(data->data())[i] = static_cast<int64_t>(rng() % 10); break;
      case ScalarType::Int32: reinterpret_cast<int32_t*>(data->data())[i] = static_cast<int32_t>(rng() % 10); break;
      case ScalarType::Int8:
      case ScalarType::UInt8: (*data)[i] = static_cast<uint8_t>(rng() % 10); break;
      case ScalarType::Bool: (*data)[i] = static_cast<uint8_t>(rng() % 2); break;
    }
  }
}

// --profile: turn on the execute-scope profiling switch ("profile" or "kernel_profiling") of
// every backend that runs a delegate of the method, or will once a startup backend hands the
// delegate over (--startup-backend), unless the command line already sets it.
Status add_profile_switches(const Method& method, ExecuteOptions* execute) {
  std::vector<std::string> names;
  for (size_t d = 0; d < method.num_delegates(); ++d) {
    const DelegateInfo& info = method.delegate_info(d);
    for (const char* name : {info.backend, info.startup.target}) {
      if (name[0] != '\0' && std::find(names.begin(), names.end(), name) == names.end()) {
        names.emplace_back(name);
      }
    }
  }
  for (const std::string& name : names) {
    auto b = get_backend(name);
    if (!b.ok()) continue;
    for (const OptionSpec& s : (*b)->option_schema()) {
      const std::string_view key = s.key;
      if (s.type != OptionType::Bool || !s.allows(OptionLevel::Execute)) continue;
      if (key != "profile" && key != "kernel_profiling") continue;
      bool set = false;
      for (const BackendOption& o : execute->get_options(name)) set = set || o.key() == key;
      if (set) continue;
      BackendOption option;
      TESSERA_RETURN_IF_ERROR(option.set_key(key));
      TESSERA_RETURN_IF_ERROR(option.set_value<bool>(true));
      TESSERA_RETURN_IF_ERROR(option.set_origin("--profile"));
      TESSERA_RETURN_IF_ERROR(execute->set_options(name, Span<const BackendOption>(&option, 1)));
    }
  }
  return Status::ok();
}

// Per event name (in order of first report): total milliseconds over the timed iterations.
struct ProfileRow {
  std::string name;
  double total_ms = 0;
  size_t count = 0;
};

void accumulate(const ProfileBuffer& buffer, std::vector<ProfileRow>* rows) {
  // Events repeat per call with the same names in the same order; the same name twice in one
  // call (two delegates' "input conversion") is kept apart by its position among equals.
  std::vector<size_t> seen;
  for (const ProfileEvent& e : buffer.events()) {
    size_t occurrence = 0;
    for (size_t i : seen) occurrence += (*rows)[i].name == e.name;
    size_t found = rows->size();
    size_t k = 0;
    for (size_t i = 0; i < rows->size(); ++i) {
      if ((*rows)[i].name == e.name && k++ == occurrence) {
        found = i;
        break;
      }
    }
    if (found == rows->size()) rows->push_back(ProfileRow{e.name, 0, 0});
    (*rows)[found].total_ms += e.ms;
    ++(*rows)[found].count;
    seen.push_back(found);
  }
}

std::string file_name_for(std::string_view name, size_t index) {
  std::string out = name.empty() ? "output_" + std::to_string(index) : std::string(name);
  for (char& c : out) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  }
  if (out.empty() || out[0] == '.') out = "output_" + std::to_string(index);
  return out + ".npy";
}

// --list-backends: every registered backend, whether it is available here and where it came
// from; then the installed libraries that did not load.
void print_backends(const InstalledBackends& installed, bool json) {
  Json backends = Json::array();
  for (const std::string& name : registered_backends()) {
    Json entry = {{"name", name}, {"available", false}, {"reason", ""}};
    if (auto backend = get_backend(name); backend.ok()) {
      entry["available"] = (*backend)->is_available();
      if (!(*backend)->is_available()) entry["reason"] = (*backend)->unavailable_reason();
    }
    std::string library = installed.library_of(name);
    entry["library"] = name == "portable" ? Json("libtessera")
                       : library.empty()  ? Json(nullptr)
                                          : Json(library);
    backends.push_back(std::move(entry));
  }
  if (json) {
    print_json({{"backends", backends},
                {"backend_directory", installed.directory},
                {"not_loaded", installed.problems}});
    return;
  }
  for (const Json& b : backends) {
    const std::string name = b["name"];
    std::string state = b["available"] ? "available" : "not available: " + std::string(b["reason"]);
    std::string from =
        b["library"].is_null() ? "linked in, or TESSERA_BACKEND_PATH" : std::string(b["library"]);
    std::printf("%-10s %s (%s)\n", name.c_str(), state.c_str(), from.c_str());
  }
  if (installed.directory.empty()) {
    std::printf("(libtessera is linked statically: no backend libraries to load)\n");
  }
  for (const std::string& problem : installed.problems) {
    std::printf("not loaded: %s\n", problem.c_str());
  }
}

// One --serve command line: {"cmd": "run", "warmup": W, "iterations": N} or {"cmd": "quit"}.
struct ServeCommand {
  bool quit = false;
  int warmup = 0, iterations = 0;
};

// A non-negative integer field of a command, at most `max`; absent gives `fallback` (or an error
// when fallback < 0).
Result<int> serve_count(const Json& command, const char* key, int fallback, int max) {
  auto it = command.find(key);
  if (it == command.end()) {
    if (fallback >= 0) return fallback;
    return Status::error(Error::InvalidArgument, "\"%s\" is required", key);
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > max) {
    return Status::error(Error::InvalidArgument, "\"%s\" must be an integer from 0 to %d, not %s",
                         key, max, it->dump().c_str());
  }
  return static_cast<int>(it->get<int64_t>());
}

Result<ServeCommand> parse_serve_command(const std::string& line) {
  Result<Json> parsed = parse_json(line);
  if (!parsed.ok()) return Status::error(Error::InvalidArgument, "%s", parsed.status().message());
  const Json& command = *parsed;
  if (!command.is_object() || !command.contains("cmd") || !command["cmd"].is_string()) {
    return Status::error(Error::InvalidArgument,
                         "a command is a JSON object with a string \"cmd\" (\"run\" or \"quit\")");
  }
  const std::string cmd = command["cmd"];
  ServeCommand out;
  if (cmd == "quit") {
    out.quit = true;
    return out;
  }
  if (cmd != "run") {
    return Status::error(Error::InvalidArgument, "unknown command \"%s\" (known: run, quit)",
                         cmd.c_str());
  }
  Result<int> warmup = serve_count(command, "warmup", 0, 1000000);
  if (!warmup.ok()) return warmup.status();
  Result<int> iterations = serve_count(command, "iterations", -1, 1000000);
  if (!iterations.ok()) return iterations.status();
  if (*iterations < 1) {
    return Status::error(Error::InvalidArgument, "\"iterations\" must be at least 1");
  }
  out.warmup = *warmup;
  out.iterations = *iterations;
  return out;
}

// --serve: answers the commands on stdin until "quit" or the end of input (exit status 0). An
// execute that fails ends it with the error reply and exit status 1: the method's state is not
// known to be usable after it.
template <typename TimedRuns>
int serve_commands(TimedRuns& timed_runs) {
  std::string line;
  size_t line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<ServeCommand> command = parse_serve_command(line);
    if (!command.ok()) {
      print_json(error_json(
          error_name(command.status().code()),
          "command on line " + std::to_string(line_number) + ": " + command.status().message()));
      continue;
    }
    if (command->quit) return 0;
    std::vector<double> times;
    if (Status st = timed_runs(command->warmup, command->iterations, &times); !st.is_ok()) {
      return report_error(st, "execute", /*json=*/true);
    }
    print_json(Json{{"times_ms", times}});
  }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"Run a Tessera program"};
  std::string program_path, method_name = "forward", output_dir;
  std::vector<std::string> inputs;
  int iterations = 1, warmup = 0;
  bool json = false, profile = false;
  std::string trace_path;
  // Required unless --list-options, which needs no program.
  app.add_option("program", program_path,
                 "Program file (.tsr; tessera-compile makes one from an .onnx model)");
  app.add_option("--method", method_name, "Method to run")->capture_default_str();
  app.add_option("--input", inputs,
                 "NAME=FILE.npy (or INDEX=FILE.npy); repeatable. A float64 array is converted to "
                 "the input's dtype, with a note on stderr. Inputs not given get deterministic "
                 "pseudo-random values");
  app.add_option("--output-dir", output_dir,
                 "Write each output as NAME.npy here (default: none written)");
  app.add_option("--iterations", iterations,
                 "Timed executions. The default, 1 with no --warmup, times a single cold run "
                 "(first-call costs included; the report says so): for steady-state latency use "
                 "e.g. --warmup 3 --iterations 20")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", warmup, "Untimed executions before the timed ones")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--json", json,
               "Print one JSON object on stdout instead of text; errors too, as {\"error\": "
               "{\"code\", \"message\"}}");
  app.add_option("--trace", trace_path,
                 "Write a Chrome trace-event JSON file (opens in Perfetto): program and method "
                 "load, each delegate's init, each execute and delegate call, and with "
                 "--profile each operator or kernel the backends report");
  app.add_flag("--profile", profile,
               "Turn on each backend's execute-scope profiling and print the mean time of every "
               "reported event (operator, primitive or kernel) over the timed iterations");
  std::vector<std::string> backend_libraries;
  app.add_option("--backend-library", backend_libraries,
                 "Load a backend library (libtessera_<name>.so, or your own) before anything "
                 "else; repeatable. The libraries installed beside libtessera are loaded at "
                 "start, and TESSERA_BACKEND_PATH lists more directories to load them all from");
  bool serve = false;
  app.add_flag("--serve", serve,
               "After the report (--json), keep the method loaded and answer commands on stdin, "
               "one JSON object a line: {\"cmd\": \"run\", \"warmup\": W, \"iterations\": N} "
               "prints {\"times_ms\": [...]} (one entry per timed run); {\"cmd\": \"quit\"} or "
               "the end of input exits. A bad command gets {\"error\": ...} and the next is read. "
               "For benchmark harnesses that alternate engines without reloading");
  bool list_backends = false;
  app.add_flag("--list-backends", list_backends,
               "List the backends: each one's availability on this machine and the library it "
               "was loaded from, and the installed backend libraries that did not load");
  RunOptionsCli option_cli;
  option_cli.add_to(app);
  app.set_version_flag("--version", std::string("tessera-run ") + tessera_version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error (CLI11's message names the flag) exits 2.
    if (app.exit(e) == 0) return 0;
    // The parse stopped before it may have seen --json: look for it.
    const bool wants_json = std::any_of(
        argv + 1, argv + argc, [](const char* a) { return std::strcmp(a, "--json") == 0; });
    return report_usage_error(e.what(), wants_json);
  }
  auto fail = [json](const Status& st, const char* context) {
    return report_error(st, context, json);
  };

  for (const std::string& path : backend_libraries) {
    auto loaded = load_backend_library(path);
    if (!loaded.ok()) return fail(loaded.status(), "--backend-library");
  }
  // Then the installed ones (a --backend-library of the same name wins: it is reported).
  const InstalledBackends installed = load_installed_backends();
  print_backend_problems("tessera-run", installed);
  if (list_backends) {
    print_backends(installed, json);
    return 0;
  }
  RunOptionsState options_state;
  if (Status st = option_cli.apply(&options_state); !st.is_ok()) return fail(st, "options");
  if (option_cli.list_options) {
    if (json) {
      print_json(option_schemas_json());
    } else {
      print_option_schemas(stdout, terminal_width(STDOUT_FILENO));
    }
    return 0;
  }
  if (option_cli.device_info) {
    const DeviceInfo& device = DeviceInfo::get();
    if (!json) {
      std::printf("%s\n", device.describe(/*with_opencl=*/true).c_str());
      return 0;
    }
    Result<Json> report = parse_json(device.to_json(/*with_opencl=*/true));
    if (!report.ok()) return fail(report.status(), "--device-info");
    print_json(*report);
    return 0;
  }
  if (serve && (!json || profile || !trace_path.empty())) {
    const char* message = !json ? "--serve needs --json (the report and the replies are JSON lines)"
                                : "--serve cannot be combined with --profile or --trace";
    std::fprintf(stderr, "tessera-run: %s\n", message);
    return report_usage_error(message, json);
  }
  if (program_path.empty()) {
    const char* message =
        "a program file is required (only --list-options and --device-info run without one)";
    std::fprintf(stderr, "tessera-run: %s\nRun with --help for more information.\n", message);
    return report_usage_error(message, json);
  }

  if (!trace_path.empty()) {
    if (Status st = Trace::start(); !st.is_ok()) return fail(st, "--trace");
  }
  auto t_load0 = std::chrono::steady_clock::now();
  auto loader = MmapDataLoader::from(program_path.c_str());
  if (!loader.ok()) return fail(loader.status(), "load");
  auto program = Program::load(&*loader);
  if (!program.ok()) {
    if (std::string hint = onnx_model_hint(program_path); !hint.empty()) {
      return report_error(Error::InvalidProgram, hint, json);
    }
    return fail(program.status(), program_path.c_str());
  }
  auto t_inputs0 = std::chrono::steady_clock::now();

  // Input files, read before the load: their shapes give the symbolic dims they fix.
  struct InputFile {
    size_t index;
    std::string path;
    NpyArray array;
  };
  std::vector<InputFile> input_files;
  if (const fb::Method* m = program->find_method(method_name); m != nullptr && !inputs.empty()) {
    const size_t num_inputs = m->inputs() ? m->inputs()->size() : 0;
    auto input_name = [&](size_t i) -> std::string {
      const fb::Value* v = m->values()->Get(m->inputs()->Get(static_cast<uint32_t>(i)));
      return v->name() ? v->name()->str() : std::string();
    };
    for (const std::string& spec : inputs) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) {
        return fail(
            Status::error(Error::InvalidArgument, "'%s' is not NAME=FILE.npy", spec.c_str()),
            "--input");
      }
      std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
      size_t index = num_inputs;
      for (size_t i = 0; i < num_inputs; ++i) {
        if (input_name(i) == name) index = i;
      }
      if (index == num_inputs && std::all_of(name.begin(), name.end(), ::isdigit) &&
          name.size() < 10) {
        index = std::stoul(name);
      }
      if (index >= num_inputs) {
        std::string names;
        for (size_t i = 0; i < num_inputs; ++i) names += (i ? ", '" : "'") + input_name(i) + "'";
        return fail(Status::error(Error::NotFound, "method '%s' has no input '%s' (inputs: %s)",
                                  method_name.c_str(), name.c_str(), names.c_str()),
                    "--input");
      }
      const auto dtype = static_cast<ScalarType>(
          m->values()->Get(m->inputs()->Get(static_cast<uint32_t>(index)))->dtype());
      std::string note;
      auto array = read_npy_as(path, dtype, &note);
      if (!array.ok()) return fail(array.status(), "--input");
      if (!note.empty())
        std::fprintf(stderr, "tessera-run: note: input '%s': %s\n", input_name(index).c_str(),
                     note.c_str());
      Status st = options_state.load_.set_input_shape(index, array->shape);
      if (!st.is_ok()) return fail(st, path.c_str());
      input_files.push_back(InputFile{index, path, std::move(*array)});
    }
  }
  auto t_method0 = std::chrono::steady_clock::now();
  auto method = program->load_method(method_name, nullptr, options_state.load_options());
  if (!method.ok()) return fail(method.status(), "load_method");
  // Program and method load, without the time reading the input files.
  double load_ms = std::chrono::duration<double, std::milli>(
                       t_inputs0 - t_load0 + std::chrono::steady_clock::now() - t_method0)
                       .count();
  if (profile) {
    if (Status st = add_profile_switches(*method, &options_state.execute_); !st.is_ok()) return fail(st, "--profile");
  }

  // Inputs: the files, then deterministic values for the rest.
  std::mt19937 rng(0);
  std::vector<bool> given(method->inputs_size(), false);
  for (InputFile& f : input_files) {
    Tensor t(f.array.dtype, f.array.shape, f.array.data.data());
    if (Status st = method->set_input(f.index, t); !st.is_ok()) return fail(st, f.path.c_str());
    given[f.index] = true;
  }
  for (size_t i = 0; i < method->inputs_size(); ++i) {
    if (given[i]) continue;
    Tensor* in = *method->input(i);
    std::vector<uint8_t> data;
    fill_deterministic(in->dtype(), in->numel(), rng, &data);
    Tensor t(in->dtype(), in->sizes(), data.data());
    if (Status st = method->set_input(i, t); !st.is_ok()) return fail(st, "input");
  }

  // Run: `warmup` untimed executions, then `count` timed ones appended to `out`.
  std::vector<ProfileEvent> profile_storage(profile ? 8192 : 0);
  ProfileBuffer profile_buffer(Span<ProfileEvent>(profile_storage.data(), profile_storage.size()));
  std::vector<ProfileRow> profile_rows;
  size_t profile_dropped = 0;
  auto timed_runs = [&](int untimed, int count, std::vector<double>* out) -> Status {
    for (int i = 0; i < untimed; ++i) {
      TESSERA_RETURN_IF_ERROR(method->execute(options_state.execute_options()));
    }
    out->reserve(out->size() + static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      profile_buffer.clear();
      auto t0 = std::chrono::steady_clock::now();
      Status st =
          method->execute(options_state.execute_options(), profile ? &profile_buffer : nullptr);
      auto t1 = std::chrono::steady_clock::now();
      TESSERA_RETURN_IF_ERROR(st);
      out->push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      if (profile) {
        accumulate(profile_buffer, &profile_rows);
        profile_dropped += profile_buffer.dropped();
      }
    }
    return Status::ok();
  };
  std::vector<double> times;
  if (Status st = timed_runs(warmup, iterations, &times); !st.is_ok()) return fail(st, "execute");
  size_t trace_events = 0;
  if (!trace_path.empty()) {
    Result<std::vector<TraceEvent>> events = Trace::stop();
    if (!events.ok()) return fail(events.status(), "--trace");
    if (Status st = Trace::write_chrome_json(*events, trace_path); !st.is_ok()) {
      return fail(st, "--trace");
    }
    trace_events = events->size();
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);

  // Outputs.
  struct OutInfo {
    std::string name, dtype, file;
    std::vector<int64_t> shape;
  };
  std::vector<OutInfo> outs;
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) return fail(Status::error(Error::AccessFailed, "cannot create '%s': %s", output_dir.c_str(), ec.message().c_str()), "--output-dir");
  }
  for (size_t i = 0; i < method->outputs_size(); ++i) {
    const Tensor* t = *method->get_output(i);
    OutInfo info;
    info.name = std::string(method->output_name(i));
    info.dtype = scalar_type_name(t->dtype());
    info.shape.assign(t->sizes().begin(), t->sizes().end());
    if (!output_dir.empty()) {
      info.file = (std::filesystem::path(output_dir) / file_name_for(info.name, i)).string();
      NpyArray a;
      a.dtype = t->dtype();
      a.shape = info.shape;
      a.data.assign(static_cast<const uint8_t*>(t->data()), static_cast<const uint8_t*>(t->data()) + t->nbytes());
      if (Status st = write_npy(info.file, a); !st.is_ok()) return fail(st, "--output-dir");
    }
    outs.push_back(std::move(info));
  }

  if (json) {
    Json report = Json::object();
    report["program"] = program_path;
    report["method"] = method_name;
    report["load_ms"] = load_ms;
    report["latency_ms"] = {{"min", sorted.front()},    {"median", median}, {"max", sorted.back()},
                            {"iterations", iterations}, {"warmup", warmup}, {"cold", warmup == 0}};
    Json outputs = Json::array();
    for (const OutInfo& o : outs) {
      outputs.push_back({{"name", o.name},
                         {"dtype", o.dtype},
                         {"shape", o.shape},
                         {"file", o.file.empty() ? Json(nullptr) : Json(o.file)}});
    }
    report["outputs"] = std::move(outputs);
    report["policy"] = policy_json(*method);
    report["delegates"] = delegates_json(*method, options_state.execute_options());
    if (profile) {
      Json rows = Json::array();
      for (const ProfileRow& r : profile_rows) {
        rows.push_back(
            {{"name", r.name}, {"mean_ms", r.total_ms / iterations}, {"calls", r.count}});
      }
      report["profile"] = std::move(rows);
      report["profile_events_dropped"] = profile_dropped;
    }
    if (!trace_path.empty()) report["trace"] = {{"file", trace_path}, {"events", trace_events}};
    if (serve) report["serving"] = true;
    print_json(report);
    if (serve) return serve_commands(timed_runs);
  } else {
    std::printf("program  %s\nmethod   %s (%zu instructions, arena %zu bytes)\nload     %.3f ms\n",
                program_path.c_str(), method_name.c_str(), method->num_instructions(),
                method->arena_bytes(), load_ms);
    if (option_cli.explain_options || method->num_delegates() > 0) {
      if (method->num_delegates() > 0) print_policy(*method, stdout);
      print_delegates(*method, option_cli.explain_options, stdout, options_state.execute_options());
    }
    for (const OutInfo& o : outs) {
      std::printf("output   %s %s [", o.name.c_str(), o.dtype.c_str());
      for (size_t i = 0; i < o.shape.size(); ++i) std::printf(i ? ", %lld" : "%lld", static_cast<long long>(o.shape[i]));
      std::printf("]%s%s\n", o.file.empty() ? "" : " -> ", o.file.c_str());
    }
    if (iterations == 1 && warmup == 0) {
      std::printf(
          "latency  %.3f ms, one cold run (first-call costs included; for steady state "
          "use e.g. --warmup 3 --iterations 20)\n",
          sorted.front());
    } else {
      std::printf("latency  min %.3f ms, median %.3f ms, max %.3f ms over %d iteration(s)",
                  sorted.front(), median, sorted.back(), iterations);
      if (warmup > 0) {
        std::printf(" after %d warm-up run(s)\n", warmup);
      } else {
        std::printf(", the first of them cold (no --warmup)\n");
      }
    }
    if (!trace_path.empty()) {
      std::printf("trace    %s (%zu events; open in Perfetto)\n", trace_path.c_str(), trace_events);
    }
    if (profile) {
      double sum = 0;
      for (const ProfileRow& r : profile_rows) sum += r.total_ms;
      std::printf("profile  %zu event(s) per call, mean over %d call(s); %.3f ms reported of %.3f ms mean latency\n",
                  profile_rows.size(), iterations, sum / iterations,
                  [&] { double t = 0; for (double x : times) t += x; return t / iterations; }());
      for (const ProfileRow& r : profile_rows) {
        std::printf("  %9.4f ms %5.1f%%  %s\n", r.total_ms / iterations, sum > 0 ? 100.0 * r.total_ms / sum : 0.0,
                    r.name.c_str());
      }
      if (profile_dropped) std::printf("  (%zu event(s) dropped: buffer full)\n", profile_dropped);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera::tools

int main(int argc, char** argv) { return tessera::tools::run(argc, argv); }
