#include "tessera/backends/opencl/opencl_backend.h"

#include <cstdio>
#include <string_view>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/graph_payload.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/opencl/codegen.h"
#include "tessera/backends/opencl/options.h"
#include "tessera/ir/schema.h"

namespace tessera::opencl {
namespace {

constexpr const char* kDeviceTypes[] = {"any", "gpu", "cpu", "accelerator"};
constexpr const char* kCacheModes[] = {"off", "read", "readwrite"};
constexpr const char* kTuningLevels[] = {"auto", "none", "rapid", "normal", "exhaustive"};
constexpr const char* kGemms[] = {"auto", "generated", "clblast"};
constexpr Scopes kGlobalLoad = OptionLevel::Global | OptionLevel::Load;

constexpr OptionSpec kSchema[] = {
    OptionSpec::string(kPlatform, "", OptionLevel::Global,
                       "Use the first OpenCL platform whose name contains this text (\"\" = every "
                       "platform), e.g. \"Portable Computing Language\"")
        .init_only(),
    OptionSpec::enumeration(kDeviceType, "any", kDeviceTypes, OptionLevel::Global,
                            "Kind of device to use; the devices of that kind on the selected "
                            "platforms are numbered in platform order for device_index")
        .init_only(),
    OptionSpec::integer(kDeviceIndex, 0, 0, 63, kRuntimeScopes,
                        "Which of the selected devices runs the delegate; a load or one "
                        "delegate may pick another device than the global value"),
    OptionSpec::string(kBuildOptions, "", kInitScopes,
                       "Options passed to clBuildProgram, e.g. -cl-fast-relaxed-math"),
    OptionSpec::string(kCacheDir, "", kGlobalLoad,
                       "Directory of compiled program binaries (created if missing; \"\" = no "
                       "cache). Entries are named by hash and checked (device, driver, source, "
                       "checksum) before use; a bad entry is recompiled with a warning"),
    OptionSpec::enumeration(kCacheMode, "readwrite", kCacheModes, kGlobalLoad,
                            "How cache_dir is used: off, read (never written), readwrite"),
    OptionSpec::integer(kCacheMaxMb, 256, 0, int64_t{1} << 20, kGlobalLoad,
                        "Size bound of cache_dir's program binaries in MiB (0 = none): after an "
                        "entry is written, the least recently used (written or read) are removed "
                        "until the entries fit"),
    OptionSpec::enumeration(kTuningLevel, "auto", kTuningLevels, kRuntimeScopes,
                            "Local work sizes to try per kernel at init: none (driver's "
                            "choice), rapid (4), normal (8), exhaustive (every power of two); "
                            "auto: derived from the load's policy and tuning_file"),
    OptionSpec::string(kTuningFile, "", kGlobalLoad,
                       "File of tuned local work sizes, read at init and rewritten after a "
                       "search (\"\" = in memory only); a kernel found there is not re-tuned"),
    OptionSpec::boolean(kSpecializeShapes, false, kInitScopes,
                        "Bake the concrete shapes (symbolic dims resolved at load) into the "
                        "kernels as compile-time constants instead of kernel arguments"),
    OptionSpec::enumeration(kGemm, "auto", kGemms, kInitScopes,
                            "How Conv (group 1) and Gemm multiply: generated (register-tiled "
                            "kernels) or clblast (CLBlast's tuned GEMM, with generated im2col "
                            "before and bias, residual and activation after; an init error in a "
                            "build without CLBlast); auto: clblast on GPU and accelerator devices "
                            "when built in, generated on CPU devices"),
    OptionSpec::boolean(kKernelProfiling, false, kGlobalLoad | OptionLevel::Execute,
                        "Report each kernel's time from OpenCL profiling events through the "
                        "execution context"),
};

template <typename T>
T pick(int index, std::initializer_list<T> values) {
  return *(values.begin() + (index < 0 ? 0 : index));
}

// tuning_level = auto: a search costs load time (each kernel run once per candidate size), so
// it runs only where its result is kept (a tuning_file: paid once per device and shape) and the
// policy allows load-time work; reported with the reason.
TuningLevel derive_tuning(const BackendInitContext& context, const std::string& tuning_file) {
  const PolicyDecision& policy = context.policy();
  const char* level = "none";
  TuningLevel tuning = TuningLevel::None;
  if (!policy.expensive_load_transforms) {
    context.report_derived("tuning_level", level, "auto: no load-time search under policy %s",
                           policy_name(policy.effective));
    return tuning;
  }
  if (tuning_file.empty()) {
    context.report_derived("tuning_level", level,
                           "auto: no tuning_file to keep a search's result, so every load "
                           "would repeat it");
    return tuning;
  }
  const bool latency = policy.effective == Policy::Latency;
  tuning = latency ? TuningLevel::Normal : TuningLevel::Rapid;
  level = latency ? "normal" : "rapid";
  context.report_derived("tuning_level", level,
                         "auto: results kept in tuning_file, searched once per kernel and "
                         "device; %s sizes under policy %s",
                         latency ? "8" : "4", policy_name(policy.effective));
  return tuning;
}

// gemm = auto: CLBlast where its tuned kernels pay (a GPU or accelerator, with CLBlast built
// in); the generated GEMM on CPU devices, where it measured 3.5-10x CLBlast 1.5's rate per CPU
// second (PoCL, docs/performance.md). Reported with the reason when derived.
Result<GemmImpl> resolve_gemm(const BackendInitContext* context, EnumValue chosen,
                              const Device& device) {
  if (chosen.index == 1) return GemmImpl::Generated;
  if (chosen.index == 2) {
    if (!clblast_built_in()) {
      return Status(Error::NotSupported,
                    "opencl: gemm=clblast, but this build has no CLBlast (install "
                    "libclblast-dev and rebuild, or use gemm=generated)");
    }
    return GemmImpl::Clblast;
  }
  const bool cpu = std::string_view(device.type) == "cpu";
  if (!cpu && clblast_built_in()) {
    if (context) {
      context->report_derived("gemm", "clblast", "auto: a %s device, and CLBlast is built in",
                              device.type);
    }
    return GemmImpl::Clblast;
  }
  if (context) {
    if (cpu) {
      context->report_derived("gemm", "generated",
                              "auto: a CPU device, where the generated GEMM measured faster "
                              "than CLBlast's");
    } else {
      context->report_derived("gemm", "generated", "auto: this build has no CLBlast");
    }
  }
  return GemmImpl::Generated;
}

}  // namespace

bool OpenClBackend::is_available() const { return any_opencl_device(); }

const char* OpenClBackend::unavailable_reason() const {
  if (any_opencl_device()) return "";
  const char* probed = DeviceInfo::get().opencl().error;
  return probed[0] != '\0' ? probed : "no OpenCL device on any platform";
}

Span<const OptionSpec> OpenClBackend::option_schema() const { return kSchema; }

const char* OpenClBackend::build_id() const {
  static const std::string id = [] {
    Result<std::shared_ptr<DeviceSet>> all = DeviceSet::discover("", "any");
    if (!all.ok()) return std::string("OpenCL: no device");
    std::string text = "OpenCL:";
    for (size_t i = 0; i < (*all)->size(); ++i) {
      text += (i ? "; " : " ") + (*all)->device(i).fingerprint;
    }
    return text;
  }();
  return id.c_str();
}

namespace {

/// plan_node's verdict on the node `op` names, at the graph's stored shapes.
Status check_op(const OpView& op) {
  if (op.node == nullptr || op.graph == nullptr) return Status(Error::InvalidArgument, "no node");
  const auto* graph = static_cast<const fb::Graph*>(op.graph);
  const auto* node = static_cast<const fb::Node*>(op.node);
  int index = -1;
  for (uint32_t i = 0; graph->nodes() != nullptr && i < graph->nodes()->size(); ++i) {
    if (graph->nodes()->Get(i) == node) index = static_cast<int>(i);
  }
  if (index < 0) return Status(Error::InvalidArgument, "the node is not in its graph");
  const std::vector<Dims> shapes = stored_shapes(*graph);
  NodePlan plan;
  return plan_node(*graph, index, shapes, &plan);
}

}  // namespace

bool OpenClBackend::supports_op(const OpView& op) const {
  return check_op(op).is_ok();
}

std::string OpenClBackend::unsupported_reason(const OpView& op) const {
  const Status st = check_op(op);
  return st.is_ok() ? std::string() : std::string(st.message());
}

const char* OpenClBackend::derivation_doc() const {
  return "`tuning_level` = auto searches local work sizes only where the result is kept and the "
         "policy allows load-time work: `none` under `power_saver` (or `auto` choosing it) and "
         "whenever `tuning_file` is empty (every load would repeat the search); with a "
         "`tuning_file`, `normal` (8 sizes per kernel) under `latency` and `rapid` (4) under "
         "`balanced`. Kernels already in the file are not searched again. Reported as a "
         "resolved value with the reason. `gemm` = auto is `clblast` on GPU and accelerator "
         "devices when the build has CLBlast, and `generated` on CPU devices (on PoCL's CPU "
         "device the generated GEMM measured 3.5-10x CLBlast 1.5's rate per CPU second) or "
         "without CLBlast; reported with the reason.";
}

Result<std::shared_ptr<DeviceSet>> OpenClBackend::device_set(
    const BackendInitContext& context) const {
  TESSERA_ASSIGN_OR_RETURN(std::string_view platform, context.get(kPlatform));
  TESSERA_ASSIGN_OR_RETURN(EnumValue type, context.get(kDeviceType));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!devices_ || devices_->platform_filter() != platform ||
      devices_->type_filter() != type.name) {
    TESSERA_ASSIGN_OR_RETURN(devices_, DeviceSet::discover(platform, type.name));
  }
  return devices_;
}

namespace {

// The delegate's settings from its resolved options (tuning_level = auto derived and reported).
Result<DelegateSettings> read_settings(const BackendInitContext& context) {
  DelegateSettings settings;
  TESSERA_ASSIGN_OR_RETURN(std::string_view build_options, context.get(kBuildOptions));
  TESSERA_ASSIGN_OR_RETURN(std::string_view cache_dir, context.get(kCacheDir));
  TESSERA_ASSIGN_OR_RETURN(EnumValue cache_mode, context.get(kCacheMode));
  TESSERA_ASSIGN_OR_RETURN(EnumValue tuning, context.get(kTuningLevel));
  TESSERA_ASSIGN_OR_RETURN(std::string_view tuning_file, context.get(kTuningFile));
  TESSERA_ASSIGN_OR_RETURN(settings.specialize_shapes, context.get(kSpecializeShapes));
  settings.build_options = std::string(build_options);
  settings.cache.dir = std::string(cache_dir);
  settings.cache.mode =
      pick(cache_mode.index, {CacheMode::Off, CacheMode::Read, CacheMode::ReadWrite});
  TESSERA_ASSIGN_OR_RETURN(int64_t cache_max_mb, context.get(kCacheMaxMb));
  settings.cache.max_bytes = static_cast<uint64_t>(cache_max_mb) << 20;
  settings.tuning_file = std::string(tuning_file);
  if (tuning.index <= 0) {
    settings.tuning = derive_tuning(context, settings.tuning_file);
  } else {
    settings.tuning = pick(tuning.index - 1, {TuningLevel::None, TuningLevel::Rapid,
                                              TuningLevel::Normal, TuningLevel::Exhaustive});
  }
  return settings;
}

}  // namespace

Result<DelegateHandle*> OpenClBackend::init(BackendInitContext& context, FreeableBuffer* payload,
                                            Span<const CompileSpec>) const {
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, payload));
  if (!is_available()) {
    return Status(Error::DelegateUnavailable,
                  "opencl: no OpenCL device: the ICD loader found no platform with a device "
                  "(install a driver, e.g. pocl-opencl-icd, or use another backend)");
  }
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceSet> set, device_set(context));
  TESSERA_RETURN_IF_ERROR(context.mark_backend_initialized());
  TESSERA_ASSIGN_OR_RETURN(int64_t index, context.get(kDeviceIndex));
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceContext> device, set->context(index));
  TESSERA_ASSIGN_OR_RETURN(DelegateSettings settings, read_settings(context));
  TESSERA_ASSIGN_OR_RETURN(EnumValue gemm, context.get(kGemm));
  Result<GemmImpl> impl = resolve_gemm(&context, gemm, device->device);
  if (!impl.ok()) return for_delegate(context, impl.status());
  settings.gemm = *impl;

  Result<std::unique_ptr<Delegate>> delegate = build_delegate(view, context, device, settings);
  if (!delegate.ok()) return for_delegate(context, delegate.status());
  payload->free();
  return to_handle(std::move(delegate).value().release());
}

Result<bool> OpenClBackend::init_would_be_cold(const BackendInitContext& context,
                                               const FreeableBuffer& payload,
                                               Span<const CompileSpec>) const {
  // Answered from the file system when it can: the first OpenCL call of a process (the ICD
  // loader and the platform starting) alone can take a second or more.
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, &payload));
  TESSERA_ASSIGN_OR_RETURN(DelegateSettings settings, read_settings(context));
  if (settings.cache.dir.empty() || settings.cache.mode == CacheMode::Off) return true;
  TESSERA_ASSIGN_OR_RETURN(EnumValue gemm_option, context.get(kGemm));
  if (gemm_option.index == 2) return true;  // clblast: compiled in every process
  Result<DelegatePlan> plan = plan_delegate(view, settings.specialize_shapes);
  if (!plan.ok()) return for_delegate(context, plan.status());
  if (!has_program_cache_entry_for_any_device(settings.cache.dir, plan->source,
                                              settings.build_options)) {
    return true;
  }
  // An entry exists: is it this device's, and sound?
  if (!is_available()) return false;  // init fails at once, with its own error
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceSet> set, device_set(context));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, context.get(kDeviceIndex));
  if (index < 0 || static_cast<size_t>(index) >= set->size()) return false;  // as above
  const Device& device = set->device(static_cast<size_t>(index));
  // CLBlast compiles its kernels in every process: such an init is always cold.
  TESSERA_ASSIGN_OR_RETURN(EnumValue gemm, context.get(kGemm));
  Result<GemmImpl> impl = resolve_gemm(nullptr, gemm, device);
  if (!impl.ok() || *impl == GemmImpl::Clblast) return true;
  const std::string path =
      program_cache_path(settings.cache.dir, device, plan->source, settings.build_options);
  // A present but damaged entry is rebuilt by init: cold as well.
  return !read_integrity_file(path, program_cache_key(device, plan->source, settings.build_options))
              .ok();
}

Status OpenClBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                              Span<EValue*> args) const {
  if (handle == nullptr) return Status(Error::DelegateInvalidHandle, "opencl: null handle");
  return from_handle<Delegate>(handle)->execute(context, args);
}

void OpenClBackend::destroy(DelegateHandle* handle) const { delete from_handle<Delegate>(handle); }

const DelegateSummary& summarize_delegate(const DelegateHandle* handle) {
  static const DelegateSummary kEmpty;
  if (handle == nullptr) return kEmpty;
  return from_handle<Delegate>(const_cast<DelegateHandle*>(handle))->summary;
}

}  // namespace tessera::opencl

TESSERA_REGISTER_BACKEND("opencl", ::tessera::opencl::OpenClBackend);
