#include "tessera/backends/armnn/armnn_backend.h"

#include <armnn/BackendOptions.hpp>
#include <armnn/Exceptions.hpp>
#include <armnn/Version.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>

#include "tessera/backend/context.h"
#include "tessera/backend/graph_payload.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/armnn/backend_ids.h"
#include "tessera/backends/armnn/delegate.h"
#include "tessera/backends/armnn/network_builder.h"
#include "tessera/backends/armnn/options.h"
#include "tessera/ir/schema.h"

namespace tessera::armnn_backend {
namespace {

constexpr Scopes kGlobalLoad = OptionLevel::Global | OptionLevel::Load;

constexpr OptionSpec kSchema[] = {
    OptionSpec::string(
        kBackendOption, "", OptionLevel::Global,
        "Typed pass-through to IRuntime::CreationOptions::m_BackendOptions: "
        "'<BackendId>.<Name>=<value>' entries separated by ';' (GpuAcc.TuningLevel=2), or one "
        "entry per key: backend_option.GpuAcc.TuningLevel = 2 (typed; merged into the list, "
        "replacing the same name). Names are "
        "checked against those ArmNN reads (GpuAcc: TuningLevel int 0-3, TuningFile, "
        "KernelProfilingEnabled bool; from 20.11 FastMathEnabled on CpuAcc/GpuAcc; 21.02 "
        "GpuAcc.MLGOTuningFilePath; 21.05 CpuAcc.NumberOfThreads unsigned): a misspelt name, a "
        "wrong type, or a name the linked ArmNN predates (and would ignore) is an error when set")
        .init_only()
        .with_entries(),
    OptionSpec::string(
        kBackends, "auto", kGlobalLoad,
        "ArmNN backend ids in order of preference (GpuAcc,CpuAcc,CpuRef); ArmNN places each "
        "layer on the first that supports it. An id no ArmNN defines is an error naming the ones "
        "this machine has; an id ArmNN defines but has not loaded here is skipped, as ArmNN does, "
        "and the delegate reports the backends that ran. auto = GpuAcc,CpuAcc,CpuRef, those "
        "present (no GpuAcc under the power_saver policy)"),
    OptionSpec::boolean(kFastMath, false, kRuntimeScopes,
                        "ArmNN's FastMathEnabled model option (Winograd and other faster, less "
                        "exact kernels on CpuAcc/GpuAcc); ArmNN 20.08 has no model options, so "
                        "true is an init error there"),
    OptionSpec::boolean(kKernelProfiling, false, OptionLevel::Global,
                        "GpuAcc KernelProfilingEnabled: OpenCL kernel timings in ArmNN's profiler")
        .init_only(),
    OptionSpec::integer(kNumThreads, 0, 0, 64, kRuntimeScopes,
                        "CpuAcc worker threads (NumberOfThreads, ArmNN 21.05+), 0 = ArmNN's "
                        "default; a nonzero value is an init error with ArmNN 20.08, which "
                        "cannot take it"),
    OptionSpec::boolean(kProfiling, false, kRuntimeScopes,
                        "Report each execute's EnqueueWorkload time as a profile event "
                        "(armnn:EnqueueWorkload); ArmNN's own profiler is left off (20.08 keeps "
                        "its events without bound)"),
    OptionSpec::boolean(kReduceFp32ToBf16, false, kRuntimeScopes,
                        "OptimizerOptions::m_ReduceFp32ToBf16: run in bfloat16 where the backend "
                        "can; exclusive with reduce_fp32_to_fp16"),
    OptionSpec::boolean(kReduceFp32ToFp16, false, kRuntimeScopes,
                        "OptimizerOptions::m_ReduceFp32ToFp16: run in float16 where the backend "
                        "can; exclusive with reduce_fp32_to_bf16"),
    OptionSpec::string(kTuningFile, "", OptionLevel::Global,
                       "GpuAcc TuningFile: the OpenCL tuning data read at start and, with "
                       "tuning_level > 0, written when the runtime is destroyed (\"\" = none)")
        .init_only(),
    OptionSpec::integer(kTuningLevel, 0, 0, 3, OptionLevel::Global,
                        "GpuAcc TuningLevel: 0 = use tuning_file only, 1 rapid, 2 normal, 3 "
                        "exhaustive tuning of OpenCL kernels")
        .init_only(),
};

constexpr const char* kInitOnlyKeys[] = {"backend_option", "kernel_profiling", "tuning_file",
                                         "tuning_level"};

CallObserver* g_observer = nullptr;

// Where ArmNN loads dynamic backends from by default (CMakeLists.txt derives it).
constexpr const char* kDynamicBackendDir = TESSERA_ARMNN_DYNAMIC_BACKEND_DIR;

std::string join(const std::vector<std::string>& ids, const char* sep = ",") {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : sep) + id;
  return out;
}

// The GpuAcc settings of the typed options and the pass-through entries, in one BackendOptions
// per ArmNN backend id. Only values the application set appear.
Result<std::vector<armnn::BackendOptions>> creation_backend_options(
    const BackendInitContext& context) {
  std::vector<armnn::BackendOptions> result;
  auto add = [&result](const std::string& backend, armnn::BackendOptions::BackendOption option) {
    for (armnn::BackendOptions& o : result) {
      if (o.GetBackendId().Get() == backend) {
        o.AddOption(std::move(option));
        return;
      }
    }
    armnn::BackendOptions o{armnn::BackendId(backend)};
    o.AddOption(std::move(option));
    result.push_back(std::move(o));
  };
  TESSERA_ASSIGN_OR_RETURN(int64_t level, context.get(kTuningLevel));
  TESSERA_ASSIGN_OR_RETURN(std::string_view file, context.get(kTuningFile));
  TESSERA_ASSIGN_OR_RETURN(bool profiling, context.get(kKernelProfiling));
  TESSERA_ASSIGN_OR_RETURN(std::string_view pass, context.get(kBackendOption));
  TESSERA_ASSIGN_OR_RETURN(std::vector<PassThroughOption> entries, parse_pass_through(pass));
  const bool set_level = !context.is_default("tuning_level");
  const bool set_file = !context.is_default("tuning_file");
  const bool set_profiling = !context.is_default("kernel_profiling");
  if (set_level) add("GpuAcc", {"TuningLevel", static_cast<int>(level)});
  if (set_file) add("GpuAcc", {"TuningFile", std::string(file)});
  if (set_profiling) add("GpuAcc", {"KernelProfilingEnabled", profiling});
  for (const PassThroughOption& e : entries) {
    if (e.own_option != nullptr) {
      const bool own_set = !context.is_default(e.own_option);
      const bool same = (e.name == "TuningLevel" && e.i == level) ||
                        (e.name == "TuningFile" && e.s == file) ||
                        (e.name == "KernelProfilingEnabled" && e.b == profiling);
      if (own_set && !same) {
        return Status::error(Error::InvalidArgument,
                             "armnn: backend_option %s.%s contradicts %s, which is also set; set "
                             "one of them",
                             e.backend.c_str(), e.name.c_str(), e.own_option);
      }
      if (own_set) continue;  // already added from the typed option
    }
    switch (e.type) {
      case PassThroughType::Bool:
        add(e.backend, {e.name, e.b});
        break;
      case PassThroughType::Int:
        add(e.backend, {e.name, static_cast<int>(e.i)});
        break;
      case PassThroughType::Unsigned:
        // ArmNN 20.08's BackendOptions::Var has no unsigned; readers of unsigned values take int.
        add(e.backend, {e.name, static_cast<int>(e.i)});
        break;
      case PassThroughType::Float:
        add(e.backend, {e.name, e.f});
        break;
      case PassThroughType::String:
        add(e.backend, {e.name, e.s});
        break;
    }
  }
  return result;
}

// Counts the layers ArmNN placed on each backend, from the optimised network's dot graph
// ("BackendID : CpuRef" in each layer's label).
std::map<std::string, size_t> placement(const armnn::IOptimizedNetwork& network) {
  std::ostringstream dot;
  network.SerializeToDot(dot);
  const std::string text = dot.str();
  std::map<std::string, size_t> counts;
  const std::string tag = "BackendID : ";
  for (size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at + 1)) {
    const size_t start = at + tag.size();
    size_t end = start;
    while (end < text.size() && text[end] != '\\' && text[end] != '}' && text[end] != '"') ++end;
    ++counts[text.substr(start, end - start)];
  }
  return counts;
}

}  // namespace

void set_call_observer(CallObserver* observer) {
  g_observer = observer;
}

bool ArmnnBackend::is_available() const {
  if (!registered_backend_ids().empty()) return true;
  // Before the runtime exists only static backends are registered: look for ArmNN's dynamic
  // backends (Debian: libarmnn-cpuref-backend22) where it loads them from.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kDynamicBackendDir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 11 && file.compare(file.size() - 11, 11, "_backend.so") == 0) return true;
  }
  return false;
}

const char* ArmnnBackend::unavailable_reason() const {
  return "ArmNN has no backend registered (CpuRef is a dynamic backend: install "
         "libarmnn-cpuref-backend22)";
}

Span<const OptionSpec> ArmnnBackend::option_schema() const {
  return kSchema;
}

const char* ArmnnBackend::build_id() const {
  return "Arm NN " ARMNN_VERSION;
}

const char* ArmnnBackend::derivation_doc() const {
  return "`backends` = auto is GpuAcc, CpuAcc, CpuRef in that order, keeping those ArmNN has "
         "loaded on this machine (ArmNN places a layer on the next backend when one cannot run "
         "it), without GpuAcc when the load's policy avoids load-time-expensive work "
         "(power_saver: GpuAcc compiles and tunes its OpenCL kernels at load); it is reported "
         "resolved with the backends the layers ran on. `num_threads` = 0 leaves ArmNN's "
         "default (ArmNN 20.08 has no thread count).";
}

bool ArmnnBackend::supports_op(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return false;
  const auto& graph = *static_cast<const fb::Graph*>(op.graph);
  return check_node(graph, *static_cast<const fb::Node*>(op.node), stored_dims(graph)).is_ok();
}

std::string ArmnnBackend::unsupported_reason(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return "no node";
  const auto& graph = *static_cast<const fb::Graph*>(op.graph);
  const Status st = check_node(graph, *static_cast<const fb::Node*>(op.node), stored_dims(graph));
  return st.is_ok() ? std::string() : std::string(st.message());
}

Result<armnn::IRuntime*> ArmnnBackend::runtime(BackendInitContext& context) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (runtime_) return runtime_.get();
  TESSERA_ASSIGN_OR_RETURN(std::vector<armnn::BackendOptions> backend_options,
                           creation_backend_options(context));
  armnn::IRuntime::CreationOptions options;
  options.m_BackendOptions = std::move(backend_options);
  if (g_observer != nullptr) g_observer->on_create_runtime(options);
  try {
    runtime_ = armnn::IRuntime::Create(options);
  } catch (const armnn::Exception& e) {
    return Status::error(Error::DelegateUnavailable, "armnn: creating the runtime failed: %s",
                         e.what());
  }
  runtime_created_ = true;
  char reason[160];
  std::snprintf(reason, sizeof reason,
                "IRuntime created at the first load (delegate '%.*s'); set it with set_option "
                "before the first load_method",
                static_cast<int>(context.delegate_id().size()), context.delegate_id().data());
  TESSERA_RETURN_IF_ERROR(context.mark_backend_initialized(reason));
  return runtime_.get();
}

Result<DelegateHandle*> ArmnnBackend::init(BackendInitContext& context, FreeableBuffer* payload,
                                           Span<const CompileSpec>) const {
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, payload));

  // Optimizer options first: they fail without touching ArmNN.
  TESSERA_ASSIGN_OR_RETURN(bool fast_math, context.get(kFastMath));
  TESSERA_ASSIGN_OR_RETURN(int64_t threads, context.get(kNumThreads));
  TESSERA_ASSIGN_OR_RETURN(bool profiling, context.get(kProfiling));
  TESSERA_ASSIGN_OR_RETURN(bool fp16, context.get(kReduceFp32ToFp16));
  TESSERA_ASSIGN_OR_RETURN(bool bf16, context.get(kReduceFp32ToBf16));
  if (fast_math) {
    return Status::error(Error::NotSupported,
                         "armnn: fast_math=true needs ArmNN 20.11 or newer (the FastMathEnabled "
                         "model option); the linked ArmNN %s has no way to take it",
                         armnn_release());
  }
  if (threads > 0) {
    return Status::error(Error::NotSupported,
                         "armnn: num_threads=%lld needs ArmNN 21.05 or newer (CpuAcc "
                         "NumberOfThreads); the linked ArmNN %s has no thread count; use 0",
                         static_cast<long long>(threads), armnn_release());
  }
  if (fp16 && bf16) {
    return Status(Error::InvalidArgument,
                  "armnn: reduce_fp32_to_fp16 and reduce_fp32_to_bf16 are both true; ArmNN "
                  "takes at most one");
  }

  // ArmNN loads its dynamic backends (CpuRef on Debian) when the runtime is created, so the
  // registry is complete only from here on.
  TESSERA_ASSIGN_OR_RETURN(armnn::IRuntime * rt, runtime(context));
  const std::vector<std::string> registered = registered_backend_ids();
  TESSERA_ASSIGN_OR_RETURN(std::string_view backends_text, context.get(kBackends));
  std::vector<std::string> preferences;
  const bool auto_backends = backends_text == "auto";
  std::string auto_reason;
  if (auto_backends) {
    const PolicyDecision& policy = context.policy();
    preferences = auto_backend_preferences(registered, policy.expensive_load_transforms,
                                           policy_name(policy.effective), &auto_reason);
  } else {
    TESSERA_ASSIGN_OR_RETURN(preferences, parse_backend_list(backends_text, registered));
  }
  std::vector<std::string> present, missing;
  for (const std::string& p : preferences) {
    bool found = false;
    for (const std::string& r : registered) found = found || r == p;
    (found ? present : missing).push_back(p);
  }
  if (present.empty()) {
    return Status::error(Error::DelegateUnavailable,
                         "armnn: none of backends=%.*s is loaded in this process's ArmNN, which "
                         "has %s",
                         static_cast<int>(backends_text.size()), backends_text.data(),
                         registered.empty() ? "none" : join(registered, ", ").c_str());
  }

  Result<BuiltNetwork> built = build_network(view);
  if (!built.ok()) return for_delegate(context, built.status());
  // The network holds copies of every constant it read (ArmNN copies them again into its
  // layers): the program's bytes are not read from here on.
  for (size_t v = 0; v < view.num_values(); ++v) {
    const PayloadValue& value = view.value(static_cast<int32_t>(v));
    if (value.is_constant()) context.release_constant(static_cast<uint32_t>(value.constant));
  }

  std::vector<armnn::BackendId> ids(preferences.begin(), preferences.end());
  armnn::OptimizerOptions optimizer;
  optimizer.m_ReduceFp32ToFp16 = fp16;
  optimizer.m_ReduceFp32ToBf16 = bf16;
  if (g_observer != nullptr) g_observer->on_optimize(ids, optimizer);
  auto delegate = std::make_unique<Delegate>();
  std::snprintf(delegate->id, sizeof delegate->id, "%.*s",
                static_cast<int>(context.delegate_id().size()), context.delegate_id().data());
  std::vector<std::string> messages;
  std::string load_error;
  try {
    armnn::IOptimizedNetworkPtr optimized =
        armnn::Optimize(*built->network, ids, rt->GetDeviceSpec(), optimizer,
                        armnn::Optional<std::vector<std::string>&>(messages));
    if (!optimized) {
      return Status::error(Error::DelegateInvalidCompatibility,
                           "armnn: delegate '%s': Optimize failed for backends %s%s%s",
                           delegate->id, join(preferences).c_str(), messages.empty() ? "" : ": ",
                           messages.empty() ? "" : messages.front().c_str());
    }
    delegate->layers_by_backend = placement(*optimized);
    if (rt->LoadNetwork(delegate->network, std::move(optimized), load_error) !=
        armnn::Status::Success) {
      return Status::error(Error::DelegateInvalidCompatibility,
                           "armnn: delegate '%s': LoadNetwork failed: %s", delegate->id,
                           load_error.c_str());
    }
  } catch (const armnn::Exception& e) {
    return Status::error(Error::DelegateInvalidCompatibility, "armnn: delegate '%s': %s",
                         delegate->id, e.what());
  }
  delegate->runtime = rt;
  // ArmNN's own profiler (IRuntime::GetProfiler) keeps every event of every call and 20.08 has
  // no way to clear it, so a long-running delegate would grow without bound: profiling reports
  // through the execution context instead.
  delegate->profiling = profiling;
  delegate->input_infos = built->input_infos;
  delegate->output_infos = built->output_infos;
  for (size_t i = 0; i < delegate->input_infos.size(); ++i) {
    delegate->inputs.emplace_back(static_cast<int>(i),
                                  armnn::ConstTensor(delegate->input_infos[i], nullptr));
  }
  for (size_t i = 0; i < delegate->output_infos.size(); ++i) {
    delegate->outputs.emplace_back(static_cast<int>(i),
                                   armnn::Tensor(delegate->output_infos[i], nullptr));
  }
  delegate->preferences = preferences;
  delegate->layers = built->layers;

  // Which backends ran the layers, and why the list differs from the request.
  // In preference order: the backends that got layers, and how many each.
  std::string ran, detail;
  for (const std::string& p : preferences) {
    auto it = delegate->layers_by_backend.find(p);
    if (it == delegate->layers_by_backend.end()) continue;
    ran += (ran.empty() ? "" : ",") + p;
    detail += (detail.empty() ? "" : ", ") + std::to_string(it->second) + " on " + p;
  }
  if (auto_backends) {
    context.report_derived("backends", ran, "%s; layers: %s", auto_reason.c_str(), detail.c_str());
  } else if (!missing.empty() || ran != join(present)) {
    context.report_derived(
        "backends", ran, "requested %.*s; %s%s%slayers: %s", static_cast<int>(backends_text.size()),
        backends_text.data(),
        missing.empty() ? "" : "not loaded here: ", missing.empty() ? "" : join(missing).c_str(),
        missing.empty() ? "" : "; ", detail.c_str());
  }
  if (context.is_default("num_threads")) {
    context.report_derived("num_threads", "armnn default",
                           "auto: ArmNN %s takes no thread count (CpuRef runs on the calling "
                           "thread)",
                           armnn_release());
  }
  payload->free();
  return to_handle(delegate.release());
}

Status ArmnnBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                             Span<EValue*> args) const {
  if (handle == nullptr) return Status(Error::DelegateInvalidHandle, "armnn: null handle");
  return from_handle<Delegate>(handle)->execute(context, args);
}

void ArmnnBackend::destroy(DelegateHandle* handle) const {
  Delegate* d = from_handle<Delegate>(handle);
  if (d == nullptr) return;
  if (d->runtime != nullptr) {
    try {
      d->runtime->UnloadNetwork(d->network);
    } catch (const armnn::Exception&) {
      // Nothing to report to: destroy has no status. The runtime frees it at its end.
    }
  }
  delete d;
}

Status ArmnnBackend::set_option(BackendOptionContext&, Span<const BackendOption> options) {
  for (const BackendOption& o : options) {
    if (runtime_created_.load()) {
      for (const char* key : kInitOnlyKeys) {
        if (o.key() == key) {
          return Status::error(
              Error::InvalidState,
              "armnn: option '%s' is init-only: it configures the ArmNN runtime "
              "(IRuntime::CreationOptions), which already exists (created at the first load of "
              "an armnn delegate); call set_option(\"armnn\", ...) with it before the first "
              "Program::load_method",
              key);
        }
      }
    }
    if (o.key() == kBackendOption.view()) {
      Result<std::vector<PassThroughOption>> parsed = parse_pass_through(o.as_string());
      if (!parsed.ok()) return parsed.status();
    } else if (o.key() == kBackends.view() && o.as_string() != "auto") {
      Result<std::vector<std::string>> parsed =
          parse_backend_list(o.as_string(), registered_backend_ids());
      if (!parsed.ok()) return parsed.status();
    }
  }
  return Status::ok();
}

DelegateSummary summarize_delegate(const DelegateHandle* handle) {
  DelegateSummary s;
  if (handle == nullptr) return s;
  const auto* d = from_handle<const Delegate>(const_cast<DelegateHandle*>(handle));
  s.preferences = d->preferences;
  s.layers_by_backend = d->layers_by_backend;
  s.layers = d->layers;
  return s;
}

}  // namespace tessera::armnn_backend

TESSERA_REGISTER_BACKEND("armnn", ::tessera::armnn_backend::ArmnnBackend);
