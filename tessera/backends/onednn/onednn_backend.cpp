#include "tessera/backends/onednn/onednn_backend.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <dlfcn.h>
#include <omp.h>

#include "tessera/backend/context.h"
#include "tessera/backend/device_info.h"
#include "tessera/backend/graph_payload.h"
#include "tessera/backend/payload_graph.h"
#include "tessera/backend/registry.h"
#include "tessera/backends/onednn/delegate.h"
#include "tessera/backends/onednn/graph_builder.h"
#include "tessera/backends/onednn/options.h"
#include "tessera/backends/onednn/supports.h"
#include "tessera/backends/onednn/threading.h"
#include "tessera/ir/schema.h"

namespace tessera::onednn {
namespace {

constexpr const char* kIsaChoices[] = {
    "all",  "avx512_core_amx", "avx512_core_bf16", "avx512_core_vnni", "avx512_core", "avx2",
    "sse41"};
constexpr dnnl_cpu_isa_t kIsaValues[] = {dnnl_cpu_isa_all,
                                         dnnl_cpu_isa_avx512_core_amx,
                                         dnnl_cpu_isa_avx512_core_bf16,
                                         dnnl_cpu_isa_avx512_core_vnni,
                                         dnnl_cpu_isa_avx512_core,
                                         dnnl_cpu_isa_avx2,
                                         dnnl_cpu_isa_sse41};
constexpr const char* kPrecisionChoices[] = {"fp32", "bf16", "auto"};
constexpr const char* kConvAlgorithmChoices[] = {"auto", "direct", "winograd"};
constexpr const char* kCacheModes[] = {"off", "read", "readwrite"};
constexpr Scopes kGlobalLoad = OptionLevel::Global | OptionLevel::Load;

constexpr OptionSpec kSchema[] = {
    OptionSpec::string(
        kCacheDir, "", kGlobalLoad,
        "Directory of Winograd-transformed weights (created if missing; \"\" = no cache): the "
        "transform is most of a load with conv_algorithm=winograd. Entries are named by hash "
        "and checked (oneDNN version, ISA, weight layout, source weights, checksum) before use; "
        "a bad entry is recomputed with a warning"),
    OptionSpec::enumeration(kCacheMode, "readwrite", kCacheModes, kGlobalLoad,
                            "How cache_dir is used: off, read (never written), readwrite"),
    OptionSpec::integer(kCacheMaxMb, 1024, 0, int64_t{1} << 20, kGlobalLoad,
                        "Size bound of cache_dir's weight entries in MiB (0 = none): after an "
                        "entry is written, the least recently used (written or read) are removed "
                        "until the entries fit"),
    OptionSpec::enumeration(
        kConvAlgorithm, "auto", kConvAlgorithmChoices, OptionLevel::Load | OptionLevel::Delegate,
        "How float32 3x3 convolutions with stride 1, no dilation and no groups are computed. "
        "auto = direct under the power_saver policy (no load-time weight transform), else "
        "Winograd (F(2x2,3x3): 2.25x fewer multiplications, 1.1-1.7x faster on ResNet-18's "
        "layers here, rounding differs from direct by about 1e-6 relative) where it is faster "
        "and cheap to set up: from 16 input and 32 output channels and 14x14 outputs on (with 2 or "
        "more threads, below 20x20 outputs only from 256 input channels), where oneDNN has a "
        "Winograd kernel for the convolution (avx512_core; some paddings and shapes "
        "are outside its kernels); direct for the rest. winograd = Winograd for every such "
        "convolution oneDNN has a kernel for, whatever the channels and size (for applications "
        "that load once and run long: smaller layers gain a little more, but their weight "
        "transform at init is slow, ResNet-18 loads in 250 ms instead of 120), and an init error "
        "on a CPU without those kernels. direct = never Winograd (ResNet-18 loads in 60 ms). "
        "Other convolutions and bf16 are always direct; the delegate summary counts the Winograd "
        "ones and profiling names their kernel (jit_fp32_wino...)"),
    OptionSpec::enumeration(
        kMaxCpuIsa, "all", kIsaChoices, OptionLevel::Global,
        "Highest ISA oneDNN may dispatch to (dnnl::set_max_cpu_isa), applied before the first "
        "primitive; reads back as the effective ISA once the backend initialised")
        .init_only(),
    OptionSpec::integer(
        kNumThreads, 0, 0, 256, kRuntimeScopes,
        "OpenMP team size for this delegate's primitives, 0 = auto: derived from the load's "
        "policy (latency: the usable performance cores, fewer when other processes keep CPUs "
        "busy; power_saver: 1); set around init and each execute and restored, so "
        "other delegates and the application's OpenMP use keep theirs. 1 in a method that also "
        "has delegates on another CPU thread pool (xnnpack): idle OpenMP workers busy-wait and "
        "would starve it"),
    OptionSpec::enumeration(
        kPrecision, "fp32", kPrecisionChoices, OptionLevel::Load | OptionLevel::Delegate,
        "fp32; bf16 = bf16 weights and activations with fp32 accumulation (needs native bf16: "
        "avx512_bf16 or AMX, else an error); auto = bf16 where AMX makes it faster, else fp32 "
        "(without AMX, bf16 dot products run at half the fp32 FMA rate)"),
    OptionSpec::integer(kPrimitiveCacheCapacity, 1024, 0, 65536, OptionLevel::Global,
                        "oneDNN primitive cache capacity in primitives "
                        "(dnnl::set_primitive_cache_capacity); 0 disables the cache"),
    OptionSpec::boolean(kProfile, false, OptionLevel::Execute,
                        "Report this call's per-primitive times (reorders included) through the "
                        "execution context"),
};

int isa_index(std::string_view name) {
  for (size_t i = 0; i < std::size(kIsaChoices); ++i) {
    if (name == kIsaChoices[i]) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

bool isa_includes(dnnl_cpu_isa_t have, dnnl_cpu_isa_t want) {
  return (static_cast<unsigned>(have) & static_cast<unsigned>(want)) == static_cast<unsigned>(want);
}

bool effective_isa_includes(dnnl_cpu_isa_t isa) {
  return isa_includes(dnnl_get_effective_cpu_isa(), isa);
}

const char* effective_isa_choice() {
  // The highest choice the effective ISA contains.
  for (size_t i = 1; i < std::size(kIsaValues); ++i) {
    if (effective_isa_includes(kIsaValues[i])) return kIsaChoices[i];
  }
  return "sse41";
}

bool OnednnBackend::is_available() const {
  return dnnl_engine_get_count(dnnl_cpu) > 0;
}

Span<const OptionSpec> OnednnBackend::option_schema() const {
  return kSchema;
}

bool OnednnBackend::supports_op(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return false;
  return onednn_supports(*static_cast<const fb::Graph*>(op.graph),
                         *static_cast<const fb::Node*>(op.node));
}

std::string OnednnBackend::unsupported_reason(const OpView& op) const {
  if (op.node == nullptr || op.graph == nullptr) return "no node";
  std::string why;
  if (onednn_supports(*static_cast<const fb::Graph*>(op.graph),
                      *static_cast<const fb::Node*>(op.node), &why)) {
    return std::string();
  }
  return why.empty() ? std::string("not supported") : why;
}

Result<dnnl::engine> OnednnBackend::initialize(BackendInitContext& context) const {
  TESSERA_ASSIGN_OR_RETURN(EnumValue isa, context.get(kMaxCpuIsa));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!initialized_) {
    const int index = isa_index(isa.name);
    if (index > 0) {
      const dnnl_status_t st = dnnl_set_max_cpu_isa(kIsaValues[index]);
      if (st != dnnl_success) {
        return Status::error(Error::InvalidState,
                             "onednn: max_cpu_isa=%.*s cannot be applied: oneDNN already fixed its "
                             "ISA in this process (status %d)",
                             static_cast<int>(isa.name.size()), isa.name.data(),
                             static_cast<int>(st));
      }
    }
    try {
      engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    } catch (const dnnl::error& e) {
      return Status::error(Error::DelegateUnavailable, "onednn: no CPU engine: %s", e.what());
    }
    applied_isa_ = std::string(isa.name);
    initialized_ = true;
    TESSERA_RETURN_IF_ERROR(context.mark_backend_initialized());
  } else if (isa.name != applied_isa_) {
    return Status::error(Error::InvalidState,
                         "onednn: max_cpu_isa=%.*s, but oneDNN fixed max_cpu_isa=%s at the first "
                         "init of this process",
                         static_cast<int>(isa.name.size()), isa.name.data(), applied_isa_.c_str());
  }
  return engine_;
}

Result<DelegateHandle*> OnednnBackend::init(BackendInitContext& context, FreeableBuffer* payload,
                                            Span<const CompileSpec>) const {
  TESSERA_ASSIGN_OR_RETURN(const PayloadGraph view, PayloadGraph::make(context, payload));

  TESSERA_ASSIGN_OR_RETURN(dnnl::engine engine, initialize(context));

  BuildOptions build;
  build.engine = engine;
  TESSERA_ASSIGN_OR_RETURN(EnumValue algorithm, context.get(kConvAlgorithm));
  build.conv_algorithm = algorithm.name == "direct"     ? ConvAlgorithm::Direct
                         : algorithm.name == "winograd" ? ConvAlgorithm::Winograd
                                                        : ConvAlgorithm::Auto;
  const PolicyDecision& policy = context.policy();
  const bool auto_direct =
      build.conv_algorithm == ConvAlgorithm::Auto && !policy.expensive_load_transforms;
  if (auto_direct) build.conv_algorithm = ConvAlgorithm::Direct;
  build.winograd_kernels = winograd_kernels_available();
  TESSERA_ASSIGN_OR_RETURN(std::string_view cache_dir, context.get(kCacheDir));
  TESSERA_ASSIGN_OR_RETURN(EnumValue cache_mode, context.get(kCacheMode));
  build.cache_dir = std::string(cache_dir);
  build.cache_read = !cache_dir.empty() && cache_mode.name != "off";
  build.cache_write = build.cache_read && cache_mode.name == "readwrite";
  TESSERA_ASSIGN_OR_RETURN(int64_t cache_max_mb, context.get(kCacheMaxMb));
  build.cache_max_bytes = static_cast<uint64_t>(cache_max_mb) << 20;
  if (build.conv_algorithm == ConvAlgorithm::Winograd && !build.winograd_kernels) {
    return Status::error(Error::NotSupported,
                         "onednn: conv_algorithm=winograd needs oneDNN's float32 Winograd kernels "
                         "(avx512_core), but oneDNN's effective ISA is %s (max_cpu_isa=%s); use "
                         "auto or direct",
                         effective_isa_choice(), applied_isa_.c_str());
  }
  TESSERA_ASSIGN_OR_RETURN(EnumValue precision, context.get(kPrecision));
  if (precision.name != "fp32") {
    const DeviceInfo& device = context.device_info();
    const bool cpu_bf16 = device.has_isa("avx512_bf16") || device.has_isa("amx_bf16");
    const bool onednn_bf16 = bf16_kernels_available();
    const bool native = cpu_bf16 && onednn_bf16;
    if (precision.name == "bf16" && !native) {
      if (!cpu_bf16) {
        return Status::error(Error::NotSupported,
                             "onednn: precision=bf16 needs native bf16 arithmetic, but this CPU "
                             "(%s) has neither avx512_bf16 nor amx_bf16; use precision=fp32 or "
                             "auto",
                             device.cpu_name);
      }
      return Status::error(Error::NotSupported,
                           "onednn: precision=bf16 needs avx512_core_bf16, but oneDNN's effective "
                           "ISA is %s (max_cpu_isa=%s)",
                           effective_isa_choice(), applied_isa_.c_str());
    }
    // auto: bf16 only where it is faster, which needs AMX tiles. Without AMX, bf16 dot products
    // (vdpbf16ps) run at half the float32 FMA rate (bench/roofline measures both: 88 against
    // 176 GFLOP/s a core here), so bf16 would cost accuracy and time.
    build.bf16 = precision.name == "bf16" ? native : native && amx_bf16_available();
    if (precision.name == "auto") {
      context.report_derived("precision", build.bf16 ? "bf16" : "fp32",
                             build.bf16 ? "auto: AMX bf16 tiles present"
                             : !native  ? "auto: no native bf16 arithmetic (avx512_bf16/AMX)"
                                        : "auto: native bf16 without AMX runs dot products at half "
                                          "the fp32 FMA rate");
    }
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t threads, context.get(kNumThreads));
  build.threads = threads > 0 ? static_cast<int>(threads) : static_cast<int>(policy.threads);
  // Another backend's CPU thread pool in the same method: one thread (threading.h).
  const int team = team_size_with_peers(build.threads, threads > 0, context.cpu_pool_peers(),
                                        context.delegate_id());
  if (team != build.threads) {
    context.report_derived("num_threads", std::to_string(team),
                           "%s: the method also runs another backend's CPU thread pool (idle "
                           "OpenMP workers busy-wait and would starve it), so 1 instead of %d",
                           threads > 0 ? "set" : "auto", build.threads);
  } else if (threads == 0) {
    context.report_derived("num_threads", std::to_string(build.threads), "auto: %s",
                           policy.threads_reason);
  }
  build.threads = team;

  Result<std::unique_ptr<Delegate>> delegate = build_delegate(view, context, build);
  if (!delegate.ok()) return for_delegate(context, delegate.status());
  if (auto_direct) {
    context.report_derived("conv_algorithm", "direct",
                           "auto: policy %s avoids Winograd's load-time weight transform",
                           policy_name(policy.effective));
  } else if (algorithm.name == "auto") {
    context.report_derived("conv_algorithm",
                           (*delegate)->winograd_convs > 0 ? "winograd+direct" : "direct",
                           "auto: Winograd for %zu float32 3x3 convolution(s) with >= 16 input "
                           "and 32 output channels and 14x14 outputs%s, direct elsewhere",
                           (*delegate)->winograd_convs,
                           team > 1 ? " (at 2 or more threads below 20x20 only from 256 input "
                                      "channels)"
                                    : "");
  }
  payload->free();
  return to_handle(std::move(delegate).value().release());
}

Status OnednnBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                              Span<EValue*> args) const {
  if (handle == nullptr) return Status(Error::DelegateInvalidHandle, "onednn: null handle");
  return from_handle<Delegate>(handle)->execute(context, args);
}

void OnednnBackend::destroy(DelegateHandle* handle) const {
  delete from_handle<Delegate>(handle);
}

bool OnednnBackend::uses_cpu_thread_pool() const {
  return true;
}

namespace {

using PauseAll = int (*)(omp_pause_resource_t);

// omp_pause_resource_all of every OpenMP runtime loaded. Debian's libdnnl links libgomp; a clang
// build of this library links LLVM's libomp beside it, which then also answers libdnnl's GOMP_*
// calls (it implements that interface, and comes first in the lookup): whichever runs oneDNN's
// team, each is told, and one without a team does nothing.
std::vector<PauseAll> find_pause_all() {
  std::vector<PauseAll> out;
  for (const char* lib : {"libgomp.so.1", "libomp.so.5", "libiomp5.so"}) {
    void* handle = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    auto* fn = reinterpret_cast<PauseAll>(dlsym(handle, "omp_pause_resource_all"));
    dlclose(handle);  // the NOLOAD reference only: the library stays (libdnnl needs it)
    if (fn != nullptr) out.push_back(fn);
  }
  return out;
}

}  // namespace

void OnednnBackend::park_idle_workers() const {
  static const std::vector<PauseAll> pause_all = find_pause_all();
  // Inside a parallel region a runtime refuses (-1) and nothing changes: no team is idle then.
  for (PauseAll pause : pause_all) (void)pause(omp_pause_soft);
}

Status OnednnBackend::set_option(BackendOptionContext&, Span<const BackendOption> options) {
  for (const BackendOption& o : options) {
    if (o.key() == kPrimitiveCacheCapacity.view()) {
      const dnnl_status_t st = dnnl_set_primitive_cache_capacity(static_cast<int>(o.as_int()));
      if (st != dnnl_success) {
        return Status::error(Error::InvalidArgument,
                             "onednn: primitive_cache_capacity=%lld rejected by oneDNN (status %d)",
                             static_cast<long long>(o.as_int()), static_cast<int>(st));
      }
    }
  }
  return Status::ok();
}

Status OnednnBackend::get_option(BackendOptionContext&, Span<BackendOption> options) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (BackendOption& o : options) {
    if (o.key() == kMaxCpuIsa.view() && initialized_) {
      const char* isa = effective_isa_choice();
      TESSERA_RETURN_IF_ERROR(o.set_enum(isa, isa_index(isa)));
    } else if (o.key() == kPrimitiveCacheCapacity.view()) {
      int capacity = 0;
      if (dnnl_get_primitive_cache_capacity(&capacity) == dnnl_success) o.set_int(capacity);
    }
  }
  return Status::ok();
}

Span<const SelectionVariant> OnednnBackend::selection_variants() const {
  // conv_algorithm changes speed only (Winograd's rounding stays within the selection
  // tolerance, which checks it); bf16 lowers precision and needs native bf16 (init rejects it
  // elsewhere, and the selection reports why).
  static constexpr SelectionVariant kVariants[] = {
      {"conv_algorithm", "direct", false},
      {"conv_algorithm", "winograd", false},
      {"precision", "bf16", true},
  };
  return kVariants;
}

bool OnednnBackend::variant_changes(const DelegateHandle* handle, std::string_view key,
                                    std::string_view value) const {
  if (handle == nullptr || key != "conv_algorithm") return true;
  const Delegate* d = from_handle<Delegate>(handle);
  // Winograd where it runs on none of the convolutions it could take changes nothing to turn
  // off, and on all of them nothing to force.
  if (value == "direct") return d->winograd_convs > 0;
  if (value == "winograd") return d->winograd_convs < d->winograd_eligible;
  return true;
}

const char* OnednnBackend::build_id() const {
  static const std::string id = []() {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch) + " (" + (v->hash ? v->hash : "") + ", cpu runtime " +
           std::to_string(v->cpu_runtime) + ")";
  }();
  return id.c_str();
}

const char* OnednnBackend::derivation_doc() const {
  return "`num_threads` = 0 takes the policy's thread count (as for xnnpack: the usable "
         "performance cores under `latency`, fewer under `auto` when other processes keep CPUs "
         "busy, 1 under `power_saver`). `conv_algorithm` = auto is `direct` under "
         "`power_saver` (no Winograd weight transform at load), else Winograd where measured "
         "faster. `precision` = auto is bf16 only with AMX bf16 tiles. Each is reported as a "
         "resolved value with the reason.";
}

bool winograd_kernels_available() {
  return effective_isa_includes(dnnl_cpu_isa_avx512_core);
}

bool bf16_kernels_available() {
  return effective_isa_includes(dnnl_cpu_isa_avx512_core_bf16);
}

bool amx_bf16_available() {
  return DeviceInfo::get().has_isa("amx_bf16") &&
         effective_isa_includes(dnnl_cpu_isa_avx512_core_amx);
}

DelegateSummary summarize_delegate(const DelegateHandle* handle) {
  DelegateSummary s;
  if (handle == nullptr) return s;
  const auto* d = from_handle<const Delegate>(const_cast<DelegateHandle*>(handle));
  s.threads = d->threads;
  s.bf16 = d->bf16;
  s.fused_sums = d->fused_sums;
  s.in_place_sums = d->in_place_sums;
  s.copy_free_concats = d->copy_free_concats;
  s.concat_layout_convs = d->concat_layout_convs;
  s.single_thread_steps = d->single_thread_steps;
  s.blocked_1x1_convs = d->blocked_1x1_convs;
  s.nchw_input_convs = d->nchw_input_convs;
  s.fused_depthwise_convs = d->fused_depthwise_convs;
  s.blocked_concat_chains = d->blocked_concat_chains;
  s.channels_last_grouped_convs = d->channels_last_grouped_convs;
  s.host_grouped_convs = d->host_grouped_convs;
  s.host_narrow_convs = d->host_narrow_convs;
  s.host_dw_pointwise_convs = d->host_dw_pointwise_convs;
  s.host_stem_convs = d->host_stem_convs;
  s.fused_silus = d->fused_silus;
  s.fused_eltwise = d->fused_eltwise;
  s.host_silus = d->host_silus;
  s.silu_isa = silu_isa_name(d->silu_isa);
  s.winograd_convs = d->winograd_convs;
  s.weights_from_cache = d->weights_from_cache;
  s.weights_cached = d->weights_cached;
  s.arena_bytes = d->arena_bytes;
  s.activation_bytes = d->activation_bytes;
  s.scratchpad_bytes = d->scratchpad_bytes;
  s.init_scratchpad_bytes = d->init_scratchpad_bytes;
  for (const Step& step : d->steps) {
    s.steps.push_back(std::string(step.name.data()) + " " + step.impl);
    s.step_threads.push_back(step.threads);
  }
  return s;
}

}  // namespace tessera::onednn

TESSERA_REGISTER_BACKEND("onednn", ::tessera::onednn::OnednnBackend);
