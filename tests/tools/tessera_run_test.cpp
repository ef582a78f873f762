// tessera-run as a user sees it: outputs, JSON, .npy in and out, option flags, and errors on
// stderr with a non-zero exit code (never a crash).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/backend/registry.h"
#include "tests/testing/test_programs.h"
#include "tools/common/npy.h"

namespace tessera {
namespace {

struct RunResult {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class TesseraRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // ctest runs each test in its own process, in parallel: one directory per process.
    dir_ = ::testing::TempDir() + "/tessera_run_test_" + std::to_string(::getpid());
    std::system(("mkdir -p " + dir_).c_str());
    ASSERT_TRUE(testing::add_relu_mul_program().write(dir_ + "/kernels.tsr").is_ok());
    ASSERT_TRUE(testing::add_relu_mul_program(true).write(dir_ + "/symbolic.tsr").is_ok());
    ASSERT_TRUE(testing::delegate_chain_program({"portable"}).write(dir_ + "/delegate.tsr").is_ok());
    // 2 MiB of activations: not a small method, so the policy's threads stand.
    ASSERT_TRUE(testing::delegate_chain_program({"xnnpack", "onednn"}, {}, {512, 1024})
                    .write(dir_ + "/cpu_backends.tsr")
                    .is_ok());
    // The same, as tessera-compile writes it without --backends: each delegate may run on
    // either backend (selection=auto measures once, then remembers).
    ir::ProgramBuilder selectable = testing::delegate_chain_program({"xnnpack", "onednn"}, {}, {512, 1024});
    for (ir::DelegateDesc& d : selectable.methods()[0].delegates) d.candidates = {"xnnpack", "onednn"};
    ASSERT_TRUE(selectable.write(dir_ + "/selectable.tsr").is_ok());
    // An input file: x = float32[2, 4].
    tools::NpyArray x;
    x.dtype = ScalarType::Float32;
    x.shape = {2, 4};
    x.data.assign(sizeof(float) * 8, 0);
    ASSERT_TRUE(tools::write_npy(dir_ + "/x.npy", x).is_ok());
  }

  RunResult run(const std::string& args, const std::string& env = "") {
    std::string out = dir_ + "/stdout.txt", err = dir_ + "/stderr.txt";
    std::string cmd = env + " " TESSERA_RUN_PATH " " + args + " > " + out + " 2> " + err;
    int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static std::string dir_;
};
std::string TesseraRun::dir_;

// The line of `text` that starts with `prefix`, or "".
std::string line_of(const std::string& text, const std::string& prefix) {
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return "";
  size_t end = text.find('\n', at + 1);
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

TEST_F(TesseraRun, PrintsOutputsAndLatency) {
  RunResult r = run(dir_ + "/kernels.tsr --iterations 5 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "output   y float32 [2, 4]");
  EXPECT_CONTAINS(r.out, "over 5 iteration(s)");
}

// stdout with --json: exactly one JSON object on one line.
nlohmann::json parse_one_line(const std::string& out) {
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  return nlohmann::json::parse(out);
}

// The entry for option `key` of the report's first delegate, or null.
nlohmann::json option_of(const nlohmann::json& report, const std::string& key) {
  for (const auto& o : report["delegates"][0]["options"]) {
    if (o["key"] == key) return o;
  }
  return nullptr;
}

// The same key names (the Python package, bench/ and tests/models read them) and types.
TEST_F(TesseraRun, JsonReport) {
  RunResult r = run(dir_ + "/delegate.tsr --json --iterations 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = parse_one_line(r.out);
  EXPECT_EQ(j["program"], dir_ + "/delegate.tsr");
  EXPECT_EQ(j["method"], "forward");
  EXPECT_GE(j["load_ms"].get<double>(), 0.0);
  const auto& latency = j["latency_ms"];
  EXPECT_LE(latency["min"].get<double>(), latency["median"].get<double>());
  EXPECT_LE(latency["median"].get<double>(), latency["max"].get<double>());
  EXPECT_EQ(latency["iterations"], 3);
  EXPECT_EQ(latency["warmup"], 0);
  EXPECT_EQ(latency["cold"], true);
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0],
            nlohmann::json::parse(
                R"({"name": "v0", "dtype": "float32", "shape": [2, 4], "file": null})"));
  for (const char* key : {"requested", "effective", "reason", "threads", "threads_reason",
                          "yield_workers", "expensive_load_transforms"}) {
    EXPECT_TRUE(j["policy"].contains(key)) << key;
  }
  ASSERT_EQ(j["delegates"].size(), 1u);
  const auto& d = j["delegates"][0];
  EXPECT_EQ(d["id"], "portable#0");
  EXPECT_EQ(d["backend"], "portable");
  EXPECT_EQ(d["requested_backend"], "portable");
  EXPECT_EQ(d["nodes"], 1);
  EXPECT_TRUE(d["reason"].is_string());
  EXPECT_EQ(d["selection"]["mode"], "fixed");
  // Why it was not measured (selection auto, the default: one backend recorded, none to choose).
  EXPECT_CONTAINS(d["selection"]["summary"].get<std::string>(),
                  "fixed: the program records no other backend for it");
  EXPECT_EQ(d["selection"]["cached"], false);
  EXPECT_TRUE(d["selection"]["candidates"].is_array());
  EXPECT_EQ(d["options"][0],
            nlohmann::json::parse(
                R"({"key": "profile", "value": "false", "source": "default", "origin": null})"));
  EXPECT_EQ(d["derived"], nlohmann::json::array());
  EXPECT_FALSE(j.contains("profile"));
  EXPECT_FALSE(j.contains("trace"));

  RunResult warm = run(dir_ + "/delegate.tsr --json --warmup 2");
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  EXPECT_EQ(parse_one_line(warm.out)["latency_ms"]["cold"], false);
}

// --serve: the report, then one reply a command line; a bad command gets a specific error and
// the next one is still served; "quit" ends it (what follows is not read), and so does the end
// of input.
TEST_F(TesseraRun, ServeAnswersRunCommandsUntilQuit) {
  {
    std::ofstream commands(dir_ + "/serve.txt");
    commands << R"({"cmd": "run", "warmup": 1, "iterations": 3}
not json
{"cmd": "run"}
{"cmd": "run", "iterations": 0}
{"cmd": "run", "iterations": 2.5}
{"cmd": "stop"}

{"cmd": "run", "iterations": 2}
{"cmd": "quit"}
{"cmd": "run", "iterations": 4}
)";
  }
  RunResult r = run(dir_ + "/delegate.tsr --json --serve < " + dir_ + "/serve.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\n', at);
    ASSERT_NE(end, std::string::npos) << r.out;
    lines.push_back(nlohmann::json::parse(r.out.substr(at, end - at)));
    at = end + 1;
  }
  ASSERT_EQ(lines.size(), 8u) << r.out;
  EXPECT_EQ(lines[0]["serving"], true);
  EXPECT_EQ(lines[0]["latency_ms"]["iterations"], 1);
  ASSERT_EQ(lines[1]["times_ms"].size(), 3u);
  for (const auto& t : lines[1]["times_ms"]) EXPECT_GT(t.get<double>(), 0.0);
  EXPECT_CONTAINS(lines[2]["error"]["message"].get<std::string>(), "command on line 2: ");
  EXPECT_EQ(lines[2]["error"]["code"], "InvalidArgument");
  EXPECT_CONTAINS(lines[3]["error"]["message"].get<std::string>(),
                  "command on line 3: \"iterations\" is required");
  EXPECT_CONTAINS(lines[4]["error"]["message"].get<std::string>(),
                  "\"iterations\" must be at least 1");
  EXPECT_CONTAINS(lines[5]["error"]["message"].get<std::string>(),
                  "\"iterations\" must be an integer from 0 to 1000000, not 2.5");
  EXPECT_CONTAINS(lines[6]["error"]["message"].get<std::string>(),
                  "unknown command \"stop\" (known: run, quit)");
  EXPECT_EQ(lines[7]["times_ms"].size(), 2u);

  // The end of input ends it as "quit" does.
  RunResult eof = run(dir_ + "/delegate.tsr --json --serve < /dev/null");
  ASSERT_EQ(eof.exit_code, 0) << eof.err;
  EXPECT_EQ(parse_one_line(eof.out)["serving"], true);
}

// --serve answers in JSON lines and returns no profile or trace of its runs: asked otherwise, a
// usage error before anything loads.
TEST_F(TesseraRun, ServeRefusesTextOutputProfileAndTrace) {
  RunResult text = run(dir_ + "/delegate.tsr --serve < /dev/null");
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_CONTAINS(text.err, "--serve needs --json");
  EXPECT_EQ(text.out, "");
  RunResult profile = run(dir_ + "/delegate.tsr --json --serve --profile < /dev/null");
  EXPECT_EQ(profile.exit_code, 2);
  EXPECT_CONTAINS(parse_one_line(profile.out)["error"]["message"].get<std::string>(),
                  "--serve cannot be combined with --profile or --trace");
  RunResult trace =
      run(dir_ + "/delegate.tsr --json --serve --trace " + dir_ + "/t.json < /dev/null");
  EXPECT_EQ(trace.exit_code, 2);
}

// One iteration with no warm-up (the default) times a cold run, and the report says so.
TEST_F(TesseraRun, SingleTimedRunIsLabelledCold) {
  RunResult cold = run(dir_ + "/kernels.tsr");
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  EXPECT_CONTAINS(cold.out,
                  " ms, one cold run (first-call costs included; for steady state use e.g. "
                  "--warmup 3 --iterations 20)");
  RunResult several = run(dir_ + "/kernels.tsr --iterations 2");
  EXPECT_CONTAINS(several.out, "over 2 iteration(s), the first of them cold (no --warmup)");
  RunResult warm = run(dir_ + "/kernels.tsr --iterations 2 --warmup 1");
  EXPECT_CONTAINS(warm.out, "over 2 iteration(s) after 1 warm-up run(s)");
}

TEST_F(TesseraRun, HelpShowsDefaults) {
  RunResult help = run("--help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_CONTAINS(line_of(help.out, "  --method"), "forward");
  EXPECT_CONTAINS(line_of(help.out, "  --iterations"), "=1");
  EXPECT_CONTAINS(line_of(help.out, "  --warmup"), "=0");
  EXPECT_CONTAINS(help.out, "times a single cold run");
  EXPECT_CONTAINS(help.out, "auto (default)");  // --policy
}

// With --json, every error is also one JSON object on stdout: runtime errors (exit 1) and usage
// errors (exit 2, even when the parse stopped before --json).
TEST_F(TesseraRun, JsonErrors) {
  struct Case {
    std::string args;
    int exit_code;
    std::string code, message;
  };
  const Case cases[] = {
      {"/nonexistent.tsr --json", 1, "NotFound", "cannot open program '/nonexistent.tsr'"},
      {dir_ + "/kernels.tsr --json --method backward", 1, "NotFound", "no method 'backward'"},
      {dir_ + "/kernels.tsr --json --input x=/nonexistent.npy", 1, "NotFound",
       "--input: cannot open '/nonexistent.npy'"},
      {dir_ + "/delegate.tsr --json --execute-option portable.profil=true", 1, "",
       "did you mean 'profile'?"},
      {dir_ + "/kernels.tsr --json --no-such-flag", 2, "UsageError", "--no-such-flag"},
      {dir_ + "/kernels.tsr --iterations 0 --json", 2, "UsageError", "--iterations"},
      {"--json", 2, "UsageError", "a program file is required"},
  };
  for (const Case& c : cases) {
    RunResult r = run(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.err;
    EXPECT_CONTAINS(r.err, c.message);  // stderr keeps the text
    const auto j = parse_one_line(r.out);
    ASSERT_EQ(j.size(), 1u) << r.out;
    ASSERT_EQ(j["error"].size(), 2u) << r.out;
    if (!c.code.empty()) {
      EXPECT_EQ(j["error"]["code"], c.code) << c.args;
    } else {
      EXPECT_TRUE(j["error"]["code"].is_string()) << r.out;
    }
    EXPECT_CONTAINS(j["error"]["message"].get<std::string>(), c.message);
  }
  // Without --json stdout stays empty.
  RunResult text = run("/nonexistent.tsr");
  EXPECT_EQ(text.out, "");
}

TEST_F(TesseraRun, OnnxModelSaysToCompileItFirst) {
  std::ofstream(dir_ + "/my model.onnx") << "\x08\x07\x12\x04onnx";
  RunResult r = run("'" + dir_ + "/my model.onnx'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err,
                  "is an ONNX model; tessera-run runs Tessera programs. Compile it first:\n"
                  "  tessera-compile '" +
                      dir_ + "/my model.onnx' -o '" + dir_ + "/my model.tsr'\n");
  EXPECT_CONTAINS(r.err, "then run '" + dir_ + "/my model.tsr'");
  // A program is a program whatever its name.
  std::system(("cp " + dir_ + "/kernels.tsr " + dir_ + "/named.onnx").c_str());
  RunResult named = run(dir_ + "/named.onnx");
  EXPECT_EQ(named.exit_code, 0) << named.err;
}

// NumPy saves float64 by default: converted to the input's dtype, with a note.
TEST_F(TesseraRun, Float64InputIsConvertedWithANote) {
  const double values[8] = {0.5, -1, 3, 4, -2, 0, 1, 2};
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 4), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(header.size());
  file += '\0';
  file += header;
  file.append(reinterpret_cast<const char*>(values), sizeof values);
  std::ofstream(dir_ + "/x64.npy", std::ios::binary) << file;
  RunResult r =
      run(dir_ + "/kernels.tsr --input x=" + dir_ + "/x64.npy --output-dir " + dir_ + "/out64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.err,
                  "tessera-run: note: input 'x': " + dir_ +
                      "/x64.npy is float64; converted to float32 (rounded); save it as float32 "
                      "to skip the conversion");
  auto y = tools::read_npy(dir_ + "/out64/y.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  float in[8], want[8];
  for (int i = 0; i < 8; ++i) in[i] = static_cast<float>(values[i]);
  testing::add_relu_mul_reference(in, want, 2);
  for (int i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(reinterpret_cast<const float*>(y->data.data())[i], want[i]);
}

TEST_F(TesseraRun, TraceFileOpensAsChromeTraceJson) {
  const std::string trace = dir_ + "/trace.json";
  RunResult r = run(dir_ + "/cpu_backends.tsr --iterations 2 --warmup 1 --json --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["trace"]["file"], trace);
  const auto doc = nlohmann::json::parse(slurp(trace));
  int executes = 0, calls = 0, inits = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    executes += e["cat"] == "execute";
    calls += e["cat"] == "delegate";
    inits += e["cat"] == "init";
  }
  EXPECT_EQ(executes, 3);  // the warm-up run too
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(inits, 2);
  EXPECT_EQ(report["trace"]["events"].get<int>(), static_cast<int>(doc["traceEvents"].size()) - 2);

  RunResult bad = run(dir_ + "/cpu_backends.tsr --trace /nonexistent-dir/t.json");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_CONTAINS(bad.err, "/nonexistent-dir/t.json");
}

TEST_F(TesseraRun, SelectMeasureReportsItsCandidates) {
  RunResult r = run(dir_ +
                    "/cpu_backends.tsr --json --select measure --select-cache '' "
                    "--select-candidates xnnpack,onednn,portable");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  for (const auto& d : report["delegates"]) {
    const auto& sel = d["selection"];
    EXPECT_EQ(sel["mode"], "measure");
    EXPECT_CONTAINS(sel["summary"].get<std::string>(), d["backend"].get<std::string>());
    EXPECT_EQ(sel["cached"], false);
    // Each backend as resolved (options {}), and option values tried on top of it.
    std::set<std::string> plain;
    for (const auto& c : sel["candidates"]) {
      if (c["options"].empty()) plain.insert(c["backend"].get<std::string>());
    }
    EXPECT_EQ(plain, (std::set<std::string>{"xnnpack", "onednn", "portable"})) << sel.dump();
    int chosen = 0;
    for (const auto& c : sel["candidates"]) {
      if (c["chosen"] == true) {
        ++chosen;
        EXPECT_EQ(c["backend"], d["backend"]);
        EXPECT_EQ(c["accepted"], true);
        EXPECT_GT(c["runs"].get<int>(), 0);
      }
    }
    EXPECT_EQ(chosen, 1);
  }
  RunResult fixed = run(dir_ + "/cpu_backends.tsr --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(nlohmann::json::parse(fixed.out)["delegates"][0]["selection"]["mode"], "fixed");

  RunResult bad = run(dir_ + "/cpu_backends.tsr --select fastest");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_CONTAINS(bad.err, "auto, fixed or measure");

  // The budget: auto or a number of ms, nothing else.
  RunResult budget_auto = run(dir_ +
                              "/cpu_backends.tsr --json --iterations 1 --select measure "
                              "--select-cache '' --select-budget-ms auto");
  ASSERT_EQ(budget_auto.exit_code, 0) << budget_auto.err;
  EXPECT_EQ(nlohmann::json::parse(budget_auto.out)["delegates"][0]["selection"]["mode"], "measure");
  for (const char* value : {"fast", "-5", "10ms", "inf"}) {
    RunResult bad_budget =
        run(dir_ + "/cpu_backends.tsr --select measure --select-budget-ms " + value);
    EXPECT_NE(bad_budget.exit_code, 0) << value;
    EXPECT_CONTAINS(bad_budget.err, std::string("--select-budget-ms: '") + value +
                                        "' is neither auto nor a number of ms >= 0");
  }
  // The cache's size bound: KiB from 0 (none).
  for (const char* value : {"-1", "1073741825", "big"}) {
    RunResult bad_bound = run(dir_ + "/cpu_backends.tsr --select-cache-max-kb " + value);
    EXPECT_NE(bad_bound.exit_code, 0) << value;
    EXPECT_CONTAINS(bad_bound.err, "--select-cache-max-kb");
  }
  RunResult bounded = run(dir_ + "/cpu_backends.tsr --json --iterations 1 --select-cache-max-kb 0");
  EXPECT_EQ(bounded.exit_code, 0) << bounded.err;
  // The runs the application makes per load: from 1.
  for (const char* value : {"0", "-3", "1099511627777", "many"}) {
    RunResult bad_runs = run(dir_ + "/cpu_backends.tsr --select-runs-per-load " + value);
    EXPECT_NE(bad_runs.exit_code, 0) << value;
    EXPECT_CONTAINS(bad_runs.err, "--select-runs-per-load");
  }
  RunResult per_load = run(dir_ +
                           "/cpu_backends.tsr --json --iterations 1 --select measure "
                           "--select-cache '' --select-runs-per-load 100000");
  ASSERT_EQ(per_load.exit_code, 0) << per_load.err;
  EXPECT_EQ(nlohmann::json::parse(per_load.out)["delegates"][0]["selection"]["mode"], "measure");
}

// A fixture machine (tests/backend/machines) that DeviceInfo reads through TESSERA_SYSFS_ROOT:
// its policy and thread count do not follow the load of the machine the test runs on.
std::string machine_env(const char* name) {
  return std::string("TESSERA_SYSFS_ROOT=") + TESSERA_MACHINES_DIR + "/" + name;
}

TEST_F(TesseraRun, XnnpackAndOnednnInitialiseTogetherWhenTheirThreadsFit) {
  // On the two-CPU fixture machine: one thread each fits, two each do not. The real backends'
  // inits side by side (under the sanitizers too), with outputs checked against the reference.
  for (const int threads : {1, 2}) {
    const std::string t = std::to_string(threads);
    RunResult r = run(dir_ +
                          "/cpu_backends.tsr --json --iterations 1 --select measure "
                          "--select-cache '' --select-candidates xnnpack,onednn --option "
                          "xnnpack.num_threads=" +
                          t + " --option onednn.num_threads=" + t,
                      machine_env("amd_vm"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto report = nlohmann::json::parse(r.out);
    ASSERT_FALSE(report["delegates"].empty());
    for (const auto& d : report["delegates"]) {
      const std::string summary = d["selection"]["summary"].get<std::string>();
      EXPECT_EQ(summary.find("initialised at once") != std::string::npos, threads == 1)
          << summary;
      int accepted = 0;
      for (const auto& c : d["selection"]["candidates"]) {
        if (!c["options"].empty()) continue;
        EXPECT_EQ(c["accepted"], true) << c.dump();
        EXPECT_GT(c["init_ms"].get<double>(), 0.0) << c.dump();
        ++accepted;
      }
      EXPECT_EQ(accepted, 2) << d.dump();
    }
  }
}

TEST_F(TesseraRun, AutoSelectionMeasuresOnceThenReadsTheSelectionCache) {
  const std::string cache = dir_ + "/selection-cache";
  std::system(("rm -rf " + cache).c_str());
  const std::string args = dir_ + "/selectable.tsr --json --iterations 1 --select-cache " + cache;
  // The selection key holds the policy, which on a real machine follows how busy its CPUs are
  // (threads for the free ones): on a fixture machine it stays the same from run to run.
  const std::string machine = machine_env("amd_vm");
  RunResult first = run(args, machine);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto a = nlohmann::json::parse(first.out);
  // On a machine busy enough that every timed run of a candidate was disturbed, the next load
  // measures once more (and its measurement stands, disturbed or not).
  auto disturbed_once = [](const nlohmann::json& r) {
    for (const auto& d : r["delegates"]) {
      if (d["selection"]["disturbed_measurements"] == 1) return true;
    }
    return false;
  };
  // That load measures only the delegates whose entry says so; the others it reads.
  const nlohmann::json before_retry = a;
  const bool retried = disturbed_once(a);
  if (retried) {
    first = run(args, machine);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    a = nlohmann::json::parse(first.out);
    EXPECT_FALSE(disturbed_once(a)) << first.out;
  }
  auto measured_here = [&](size_t i) {
    return !retried || before_retry["delegates"][i]["selection"]["disturbed_measurements"] == 1;
  };
  RunResult second = run(args, machine);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto b = nlohmann::json::parse(second.out);
  ASSERT_EQ(a["delegates"].size(), 2u);
  ASSERT_EQ(b["delegates"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& measured = a["delegates"][i];
    const auto& remembered = b["delegates"][i];
    EXPECT_EQ(measured["selection"]["mode"], "measure");
    EXPECT_EQ(measured["selection"]["cached"], !measured_here(i));
    EXPECT_EQ(remembered["selection"]["cached"], true);
    EXPECT_EQ(remembered["backend"], measured["backend"]);  // the remembered choice runs
    // and what it was made from
    EXPECT_EQ(remembered["selection"]["candidates"], measured["selection"]["candidates"]);
    for (const auto& c : measured["selection"]["candidates"]) {
      EXPECT_TRUE(c["init_ms"].is_number()) << c.dump();
      EXPECT_TRUE(c["disturbed_runs"].is_number_integer()) << c.dump();
    }
    // The whole-method check (null when the per-delegate choices agreed), remembered too.
    ASSERT_TRUE(measured["selection"].contains("method"));
    EXPECT_EQ(remembered["selection"]["method"], measured["selection"]["method"]);
  }
  RunResult explain = run(
      dir_ + "/selectable.tsr --explain-options --iterations 1 --select-cache " + cache, machine);
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_CONTAINS(explain.out + explain.err, "remembered: read from the selection cache");
  if (a["delegates"][0]["selection"]["method"].is_object()) {
    EXPECT_CONTAINS(explain.out, "whole method: mixed ");
  }

  // The pinned program (compiled with --backends) is not measured under auto.
  RunResult pinned =
      run(dir_ + "/cpu_backends.tsr --json --iterations 1 --select-cache " + cache, machine);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(nlohmann::json::parse(pinned.out)["delegates"][0]["selection"]["mode"], "fixed");
}

TEST_F(TesseraRun, NpyInputAndOutputFiles) {
  tools::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {2, 4};
  float values[8] = {0.5f, -1, 3, 4, -2, 0, 1, 2};
  x.data.assign(reinterpret_cast<uint8_t*>(values), reinterpret_cast<uint8_t*>(values) + sizeof values);
  ASSERT_TRUE(tools::write_npy(dir_ + "/x.npy", x).is_ok());
  RunResult r = run(dir_ + "/kernels.tsr --input x=" + dir_ + "/x.npy --output-dir " + dir_ + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto y = tools::read_npy(dir_ + "/out/y.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  ASSERT_EQ(y->shape, (std::vector<int64_t>{2, 4}));
  float want[8];
  testing::add_relu_mul_reference(values, want, 2);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(reinterpret_cast<const float*>(y->data.data())[i], want[i]);
}

TEST_F(TesseraRun, DeterministicDefaultInputs) {
  RunResult a = run(dir_ + "/kernels.tsr --output-dir " + dir_ + "/det_a");
  RunResult b = run(dir_ + "/kernels.tsr --output-dir " + dir_ + "/det_b");
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0);
  EXPECT_EQ(slurp(dir_ + "/det_a/y.npy"), slurp(dir_ + "/det_b/y.npy"));
}

TEST_F(TesseraRun, SymbolicDims) {
  RunResult missing = run(dir_ + "/symbolic.tsr");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.err, "symbolic dim 'batch' needs a value between 1 and 8");
  RunResult ok = run(dir_ + "/symbolic.tsr --dim batch=3");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_CONTAINS(ok.out, "output   y float32 [3, 4]");
  RunResult bad = run(dir_ + "/symbolic.tsr --dim batch=x");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.err, "--dim 'batch=x' is not NAME=INTEGER");
}

// An --input file's shape gives the symbolic dims it fixes; --dim may agree but not contradict.
TEST_F(TesseraRun, DimsFromTheInputFiles) {
  RunResult inferred = run(dir_ + "/symbolic.tsr --input x=" + dir_ + "/x.npy");  // [2, 4]
  ASSERT_EQ(inferred.exit_code, 0) << inferred.err;
  EXPECT_CONTAINS(inferred.out, "output   y float32 [2, 4]");
  RunResult by_index = run(dir_ + "/symbolic.tsr --input 0=" + dir_ + "/x.npy --dim batch=2");
  ASSERT_EQ(by_index.exit_code, 0) << by_index.err;
  EXPECT_CONTAINS(by_index.out, "output   y float32 [2, 4]");

  RunResult contradiction = run(dir_ + "/symbolic.tsr --dim batch=1 --input x=" + dir_ + "/x.npy");
  EXPECT_EQ(contradiction.exit_code, 1);
  EXPECT_CONTAINS(contradiction.err,
                  "symbolic dim 'batch' is set to 1 (LoadOptions::set_dim; tessera-run --dim "
                  "batch=1), but input 'x' has shape [2, 4], whose dim 0 makes it 2");

  tools::NpyArray big;
  big.dtype = ScalarType::Float32;
  big.shape = {9, 4};
  big.data.assign(sizeof(float) * 36, 0);
  ASSERT_TRUE(tools::write_npy(dir_ + "/x9.npy", big).is_ok());
  RunResult bounds = run(dir_ + "/symbolic.tsr --input x=" + dir_ + "/x9.npy");
  EXPECT_EQ(bounds.exit_code, 1);
  EXPECT_CONTAINS(bounds.err,
                  "symbolic dim 'batch' = 9 (dim 0 of input 'x', shape [9, 4]) is outside the "
                  "bounds [1, 8] the program was compiled for");

  tools::NpyArray deep;
  deep.dtype = ScalarType::Float32;
  deep.shape = {2, 4, 1};
  deep.data.assign(sizeof(float) * 8, 0);
  ASSERT_TRUE(tools::write_npy(dir_ + "/x3.npy", deep).is_ok());
  RunResult rank = run(dir_ + "/kernels.tsr --input x=" + dir_ + "/x3.npy");
  EXPECT_EQ(rank.exit_code, 1);
  EXPECT_CONTAINS(rank.err,
                  "input 'x' has rank 2 in the program ([2, 4]); the given shape [2, 4, 1] has "
                  "rank 3");
}

TEST_F(TesseraRun, ErrorsAreClearAndNeverCrash) {
  struct Case {
    std::string args, env, expect;
  };
  const Case cases[] = {
      {"/nonexistent.tsr", "", "cannot open program '/nonexistent.tsr'"},
      {dir_ + "/x.npy", "", "not a Tessera program"},
      {dir_ + "/kernels.tsr --method backward", "", "no method 'backward' in the program (it has 'forward')"},
      {dir_ + "/kernels.tsr --input z=" + dir_ + "/x.npy", "", "method 'forward' has no input 'z' (inputs: 'x')"},
      {dir_ + "/kernels.tsr --input x=/nonexistent.npy", "", "cannot open '/nonexistent.npy'"},
      {dir_ + "/kernels.tsr --input x=" + dir_ + "/kernels.tsr", "", "not a .npy file"},
      {dir_ + "/delegate.tsr --execute-option portable.profil=true", "", "did you mean 'profile'?"},
      {dir_ + "/delegate.tsr --option portable.profile=true", "", "profile"},
      {dir_ + "/delegate.tsr --option nosuch.key=1", "", "nosuch"},
      {dir_ + "/delegate.tsr --retarget portable=nosuch", "", "nosuch"},
      {dir_ + "/delegate.tsr --fallback portable,nosuch", "", "nosuch"},
      {dir_ + "/delegate.tsr", "TESSERA_OPTIONS='portable.profile=maybe'", "TESSERA_OPTIONS:1:"},
  };
  for (const Case& c : cases) {
    RunResult r = run(c.args, c.env);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
    EXPECT_CONTAINS(r.err, c.expect);
    EXPECT_CONTAINS(r.err, "tessera-run: ");
  }
}

TEST_F(TesseraRun, OptionsFileErrorsNameTheLine) {
  std::ofstream(dir_ + "/bad.toml") << "[execute.portable]\nprofile = 3\n";
  RunResult r = run(dir_ + "/delegate.tsr --options-file " + dir_ + "/bad.toml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "bad.toml:2:");
  std::ofstream(dir_ + "/good.toml") << "[execute.portable]\nprofile = true\n";
  RunResult ok = run(dir_ + "/delegate.tsr --options-file " + dir_ + "/good.toml");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// --list-options wraps to $COLUMNS (or the terminal): no line is wider, each option's details
// and doc start in one aligned column.
TEST_F(TesseraRun, ListOptionsFitsTheTerminal) {
  RunResult r = run("--list-options", "COLUMNS=60");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t start = 0;
  while (start < r.out.size()) {
    size_t end = r.out.find('\n', start);
    const std::string line = r.out.substr(start, end - start);
    EXPECT_LE(line.size(), 60u) << line;
    start = end + 1;
  }
  const std::string profile = line_of(r.out, "  profile ");
  ASSERT_FALSE(profile.empty()) << r.out;
  EXPECT_CONTAINS(profile, "bool, default false; scopes: ");
  RunResult json = run("--list-options --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = parse_one_line(json.out);
  bool portable = false;
  for (const auto& b : j["backends"]) {
    EXPECT_TRUE(b["available"].is_boolean());
    EXPECT_EQ(b["unavailable_reason"].is_null(), b["available"].get<bool>());
    if (b["name"] != "portable") continue;
    portable = true;
    ASSERT_FALSE(b["options"].empty());
    const auto& o = b["options"][0];
    EXPECT_EQ(o["key"], "profile");
    EXPECT_EQ(o["type"], "bool");
    EXPECT_EQ(o["default"], "false");
    EXPECT_EQ(o["scopes"], nlohmann::json::parse(R"(["execute"])")) << o;
    EXPECT_EQ(o["init_only"], false);
    EXPECT_TRUE(o["doc"].is_string());
  }
  EXPECT_TRUE(portable) << json.out;
}

TEST_F(TesseraRun, ListAndExplainOptions) {
  RunResult list = run(dir_ + "/kernels.tsr --list-options");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_CONTAINS(list.out, "portable");
  EXPECT_CONTAINS(list.out, "profile");
  RunResult explain = run(dir_ + "/delegate.tsr --explain-options --execute-option portable.profile=true");
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_CONTAINS(explain.out, "delegate portable#0: 1 node(s) on 'portable'");
  EXPECT_CONTAINS(explain.out, "(execute (--execute-option))");
  RunResult retarget = run(dir_ + "/delegate.tsr --explain-options --retarget portable=portable");
  EXPECT_EQ(retarget.exit_code, 0) << retarget.err;
}

// Each option's source names the front end that set it: the variable, the file and line, or the
// flag; the JSON entries carry it as "origin".
TEST_F(TesseraRun, ExplainNamesTheFrontEndOfEachOption) {
  RunResult list = run("--list-options");
  if (list.out.find("\nxnnpack\n") == std::string::npos) GTEST_SKIP() << "xnnpack not available";
  ASSERT_TRUE(testing::delegate_chain_program({"xnnpack"}).write(dir_ + "/xnnpack.tsr").is_ok());
  std::ofstream(dir_ + "/origins.toml") << "[global.xnnpack]\n"
                                           "sparse_inference = false\n"
                                           "[load.xnnpack]\n"
                                           "yield_workers = true\n"
                                           "[execute.xnnpack]\n"
                                           "profile = false\n";
  // From the test's directory, so the file's name is short: "origins.toml:4".
  const std::string env = "cd " + dir_ +
                          " && TESSERA_OPTIONS='xnnpack.fp16_inference=false;"
                          "xnnpack.num_threads=2'";
  const std::string args =
      dir_ + "/xnnpack.tsr --options-file origins.toml --option xnnpack.num_threads=1";
  RunResult text = run(args + " --explain-options", env);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(line_of(text.out, "  num_threads "), "= 1                (load (--option))");
  EXPECT_CONTAINS(line_of(text.out, "  fp16_inference "), "(load (TESSERA_OPTIONS))");
  EXPECT_CONTAINS(line_of(text.out, "  yield_workers "),
                  "= true             (load (origins.toml:4))");
  EXPECT_CONTAINS(line_of(text.out, "  sparse_inference "), "(global (origins.toml:2))");
  EXPECT_CONTAINS(line_of(text.out, "  profile "), "(execute (origins.toml:6))");

  RunResult json = run(args + " --json", env);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = parse_one_line(json.out);
  EXPECT_EQ(option_of(report, "num_threads"),
            nlohmann::json::parse(
                R"({"key": "num_threads", "value": "1", "source": "load", "origin": "--option"})"));
  EXPECT_EQ(
      option_of(report, "fp16_inference"),
      nlohmann::json::parse(
          R"({"key": "fp16_inference", "value": "false", "source": "load", "origin": "TESSERA_OPTIONS"})"));
  EXPECT_EQ(
      option_of(report, "yield_workers"),
      nlohmann::json::parse(
          R"({"key": "yield_workers", "value": "true", "source": "load", "origin": "origins.toml:4"})"));
  EXPECT_EQ(
      option_of(report, "sparse_inference"),
      nlohmann::json::parse(
          R"({"key": "sparse_inference", "value": "false", "source": "global", "origin": "origins.toml:2"})"));
  EXPECT_EQ(
      option_of(report, "profile"),
      nlohmann::json::parse(
          R"({"key": "profile", "value": "false", "source": "execute", "origin": "origins.toml:6"})"));

  RunResult flags =
      run(dir_ +
          "/xnnpack.tsr --explain-options --global-option xnnpack.sparse_inference=false "
          "--delegate-option xnnpack#0.yield_workers=true");
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_CONTAINS(line_of(flags.out, "  sparse_inference "), "(global (--global-option))");
  EXPECT_CONTAINS(line_of(flags.out, "  yield_workers "), "(delegate (--delegate-option))");
  // Left at its default and derived by the backend: the resolved value, then what was asked.
  EXPECT_CONTAINS(line_of(flags.out, "  num_threads "), "; requested 0, default)");
  RunResult plain = run(dir_ + "/xnnpack.tsr --json");
  const auto threads = option_of(parse_one_line(plain.out), "num_threads");
  EXPECT_EQ(threads["value"], "0");
  EXPECT_EQ(threads["source"], "default");
  EXPECT_TRUE(threads["origin"].is_null());
  EXPECT_TRUE(threads["resolved"].is_string()) << threads;
}

TEST_F(TesseraRun, ProfileTurnsOnEachUsedBackendsProfiling) {
  // --profile sets portable.profile=true itself (no --execute-option) and reports every event.
  RunResult text = run(dir_ + "/delegate.tsr --profile --iterations 3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "profile  1 event(s) per call, mean over 3 call(s)");
  RunResult json = run(dir_ + "/delegate.tsr --profile --iterations 2 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto report = parse_one_line(json.out);
  ASSERT_EQ(report["profile"].size(), 1u) << json.out;
  EXPECT_TRUE(report["profile"][0]["name"].is_string());
  EXPECT_GE(report["profile"][0]["mean_ms"].get<double>(), 0.0);
  EXPECT_EQ(report["profile"][0]["calls"], 2);
  EXPECT_EQ(report["profile_events_dropped"], 0);
  // Without it there is no profile section; an explicit false wins over --profile.
  RunResult plain = run(dir_ + "/delegate.tsr --json");
  EXPECT_FALSE(parse_one_line(plain.out).contains("profile"));
  RunResult off = run(dir_ + "/delegate.tsr --profile --execute-option portable.profile=false");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_CONTAINS(off.out, "profile  0 event(s) per call");
}

TEST_F(TesseraRun, ListOptionsNeedsNoProgramButRunningDoes) {
  RunResult list = run("--list-options");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_CONTAINS(list.out, "portable");
  RunResult none = run("");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_CONTAINS(none.err, "tessera-run: a program file is required");
}

// Usage errors exit 2 and name the flag; --version prints the library's version.
TEST_F(TesseraRun, VersionAndUsageErrors) {
  RunResult version = run("--version");
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("tessera-run 0.", 0), 0u) << version.out;  // "tessera-run 0.2.0"
  RunResult range = run(dir_ + "/kernels.tsr --iterations 0");
  EXPECT_EQ(range.exit_code, 2);
  EXPECT_CONTAINS(range.err, "--iterations");
  RunResult missing_value = run(dir_ + "/kernels.tsr --warmup");
  EXPECT_EQ(missing_value.exit_code, 2);
  EXPECT_CONTAINS(missing_value.err, "--warmup");
  RunResult unknown = run(dir_ + "/kernels.tsr --no-such-flag");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_CONTAINS(unknown.err, "--no-such-flag");
}

// The ICD loader pointed at an empty vendors directory finds no OpenCL platform: opencl is
// listed as unavailable, and a program compiled for it runs only through an explicit fallback.
TEST_F(TesseraRun, NoOpenClDevice) {
  const std::string vendors = dir_ + "/no_icd_vendors";
  std::system(("mkdir -p " + vendors).c_str());
  const std::string env = "OCL_ICD_VENDORS=" + vendors;
  RunResult list = run("--list-options", env);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  if (list.out.find("\nopencl") == std::string::npos) GTEST_SKIP() << "opencl backend not built";
  EXPECT_CONTAINS(list.out, "\nopencl  (not available on this machine: no OpenCL platform (");

  ASSERT_TRUE(testing::delegate_chain_program({"opencl"}).write(dir_ + "/opencl.tsr").is_ok());
  RunResult fails = run(dir_ + "/opencl.tsr", env);
  EXPECT_EQ(fails.exit_code, 1);
  EXPECT_CONTAINS(fails.err,
                  "backend 'opencl' is not available on this machine (no OpenCL platform (");
  EXPECT_CONTAINS(fails.err, "(DelegateUnavailable)");
  RunResult falls_back = run(dir_ + "/opencl.tsr --fallback portable", env);
  ASSERT_EQ(falls_back.exit_code, 0) << falls_back.err;
  EXPECT_CONTAINS(falls_back.out,
                  "delegate opencl#0: 1 node(s) on 'portable' (compiled for 'opencl')");
  EXPECT_CONTAINS(falls_back.out, "why: 'opencl' is not available on this machine");
}

// A load step that can take seconds says what it builds and where the result is cached, once:
// the second load reads the cache and is quiet. Skipped without an OpenCL platform.
TEST_F(TesseraRun, OpenClFirstBuildSaysWhereItIsCached) {
  const auto schemas = parse_one_line(run("--list-options --json").out);
  bool available = false;
  for (const auto& b : schemas["backends"])
    available = available || (b["name"] == "opencl" && b["available"] == true);
  if (!available) GTEST_SKIP() << "no OpenCL platform";
  ASSERT_TRUE(testing::delegate_chain_program({"opencl"}).write(dir_ + "/opencl_log.tsr").is_ok());
  const std::string cache = dir_ + "/opencl_cache";
  const std::string args = dir_ + "/opencl_log.tsr --option opencl.cache_dir=" + cache;
  RunResult first = run(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_CONTAINS(first.err,
                  "tessera [info] opencl: building the kernels from source for device '");
  EXPECT_CONTAINS(first.err, "(can take seconds); the binary will be cached in '" + cache + "/");
  RunResult second = run(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find("building the kernels"), std::string::npos) << second.err;
}

// The scenario the project started from: the same program on a phone on battery at 15 % loads
// with 1 thread and sleeping workers; on mains with its performance cores; and says why. The
// phone is a fixture tree (tests/backend/machines) DeviceInfo reads through TESSERA_SYSFS_ROOT.

TEST_F(TesseraRun, PolicyOnAPhoneOnBatteryAndOnMains) {
  RunResult battery =
      run(dir_ + "/cpu_backends.tsr --explain-options", machine_env("arm_phone_battery"));
  ASSERT_EQ(battery.exit_code, 0) << battery.err;
  EXPECT_CONTAINS(battery.out,
                  "policy   power_saver (auto: on battery at 15% (below 30%)); threads 1");
  EXPECT_CONTAINS(battery.out, "workers sleep between runs, no load-time-expensive transforms");
  EXPECT_CONTAINS(battery.out,
                  "  num_threads              = 1                (auto: 1 thread of 4, policy "
                  "power_saver (auto); requested 0, default)");
  EXPECT_CONTAINS(battery.out,
                  "  yield_workers            = true             (auto: workers sleep");
  EXPECT_CONTAINS(battery.out,
                  "  conv_algorithm           = direct           (auto: policy power_saver avoids");

  RunResult mains =
      run(dir_ + "/cpu_backends.tsr --explain-options", machine_env("arm_phone_mains"));
  ASSERT_EQ(mains.exit_code, 0) << mains.err;
  EXPECT_CONTAINS(
      mains.out,
      "policy   latency (auto: latency (not on battery, below thermal trips)); threads 4");
  EXPECT_CONTAINS(mains.out,
                  "  num_threads              = 4                (auto: 4 usable performance "
                  "cores, policy latency (auto); requested 0, default)");
  EXPECT_CONTAINS(mains.out, "  yield_workers            = false            (auto: workers spin");

  // An explicit policy wins over the battery.
  RunResult forced = run(dir_ + "/cpu_backends.tsr --explain-options --policy latency",
                         machine_env("arm_phone_battery"));
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_CONTAINS(forced.out, "policy   latency (latency (requested)); threads 4");
}

TEST_F(TesseraRun, ResolvedValuesInJson) {
  RunResult r = run(dir_ + "/cpu_backends.tsr --json", machine_env("arm_phone_battery"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = parse_one_line(r.out);
  EXPECT_EQ(report["policy"]["requested"], "auto");
  EXPECT_EQ(report["policy"]["effective"], "power_saver");
  EXPECT_EQ(option_of(report, "num_threads"),
            nlohmann::json::parse(
                R"j({"key": "num_threads", "value": "0", "source": "default", "origin": null,
                                       "resolved": "1", "reason": "auto: 1 thread of 4, policy power_saver (auto)"})j"));
  // Values the user set carry no resolved entry.
  RunResult set = run(dir_ + "/cpu_backends.tsr --json --option xnnpack.num_threads=3",
                      machine_env("arm_phone_battery"));
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(option_of(parse_one_line(set.out), "num_threads"),
            nlohmann::json::parse(
                R"({"key": "num_threads", "value": "3", "source": "load", "origin": "--option"})"));
  // Which pool runs it is a derived value that is not an option: the method's own.
  EXPECT_EQ(
      parse_one_line(set.out)["delegates"][0]["derived"],
      nlohmann::json::parse(
          R"([{"key": "thread_pool", "value": "method", "reason": "num_threads set (load): the method's pool of 3 threads, shared by its xnnpack delegates of that size"}])"));
  RunResult explained =
      run(dir_ + "/cpu_backends.tsr --explain-options --option xnnpack.num_threads=3",
          machine_env("arm_phone_battery"));
  ASSERT_EQ(explained.exit_code, 0) << explained.err;
  EXPECT_CONTAINS(explained.out,
                  "  thread_pool              = method           (derived: num_threads set (load): "
                  "the method's pool of 3 threads, shared by its xnnpack delegates of that size)");
}

TEST_F(TesseraRun, PolicyNameIsChecked) {
  RunResult r = run(dir_ + "/cpu_backends.tsr --policy fastest");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(
      r.err,
      "--policy: unknown policy 'fastest' (expected auto, latency, balanced or power_saver)");
}

// --on-execute-failure sets the load option; the JSON report gives each delegate's moves (none
// here: nothing fails).
TEST_F(TesseraRun, OnExecuteFailureIsCheckedAndReported) {
  RunResult r =
      run(dir_ + "/delegate.tsr --json --fallback portable --on-execute-failure fallback");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["delegates"][0]["execute_fallbacks"], 0);
  EXPECT_EQ(report["delegates"][0]["execute_fallback_reason"], "");
  RunResult bad = run(dir_ + "/delegate.tsr --on-execute-failure retry");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_CONTAINS(bad.err,
                  "--on-execute-failure: unknown on_execute_failure 'retry' (expected fail or "
                  "fallback)");
}

TEST_F(TesseraRun, DeviceInfoTextAndJson) {
  RunResult text = run("--device-info", machine_env("amd_vm"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "cpu: AMD EPYC (amd)");
  EXPECT_CONTAINS(text.out, "cpus: 2 online (0-1), 2 usable by this process");
  EXPECT_CONTAINS(text.out, "caches (cpuid): L1d 48 KiB x2, L2 1024 KiB x2");
  RunResult json = run("--device-info --json", machine_env("laptop_battery_low"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto info = parse_one_line(json.out);
  EXPECT_EQ(info["usable_cpus"], 8);
  EXPECT_EQ(info["power"]["batteries"][0]["capacity_percent"], 15);
  EXPECT_EQ(info["power"]["on_battery"], true);
  // The live machine: whatever it is, a coherent report.
  RunResult live = run("--device-info");
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_CONTAINS(live.out, "usable by this process");
  EXPECT_EQ(live.out.find("4294967295"), std::string::npos);
}

// The tool links libtessera only and loads the backend libraries beside it: in the build tree,
// every backend this build made (the ones this test links).
TEST_F(TesseraRun, ListBackendsLoadsTheLibrariesBesideLibtessera) {
  RunResult r = run("--list-backends --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto j = parse_one_line(r.out);
  EXPECT_FALSE(j["backend_directory"].get<std::string>().empty());
  EXPECT_TRUE(j["not_loaded"].empty()) << j.dump();
  std::vector<std::string> listed;
  for (const auto& b : j["backends"]) {
    const std::string name = b["name"];
    listed.push_back(name);
    if (name == "portable") {
      EXPECT_EQ(b["library"], "libtessera");
      EXPECT_EQ(b["available"], true);
    } else {
      EXPECT_EQ(b["library"],
                j["backend_directory"].get<std::string>() + "/libtessera_" + name + ".so");
    }
  }
  EXPECT_EQ(listed, registered_backends());

  RunResult text = run("--list-backends");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_CONTAINS(text.out, "portable   available (libtessera)\n");
}

}  // namespace
}  // namespace tessera
