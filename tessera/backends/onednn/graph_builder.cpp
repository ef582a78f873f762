#include "tessera/backends/onednn/graph_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backends/onednn/onednn_backend.h"
#include "tessera/backends/onednn/stem_conv.h"
#include "tessera/backends/onednn/supports.h"
#include "tessera/backends/onednn/winograd_cache.h"
#include "tessera/core/log.h"
#include "tessera/ir/memory_plan.h"

namespace tessera::onednn {
namespace {

// Constants up to this size that steps read as they are get a copy of their own (Builder::get).
constexpr size_t kCopiedConstantBytes = size_t{64} << 10;

using dnnl::algorithm;
using dnnl::memory;
using dt = memory::data_type;

memory::dims strides_of(const DimVector& dims) {
  memory::dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t numel(const DimVector& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

/// Row-major desc; a scalar is one element.
memory::desc plain(const DimVector& dims, dt type) {
  if (dims.empty()) return memory::desc({1}, type, memory::dims{1});
  return memory::desc(dims, type, strides_of(dims));
}

memory::desc any(const DimVector& dims, dt type) {
  return memory::desc(dims, type, memory::format_tag::any);
}

bool is_plain(const memory::desc& md) {
  return md == plain(md.dims(), md.data_type());
}

/// The byte offset at which `part` (a dense buffer of its own) can live inside a buffer laid out
/// as `whole`, as the region of `whole` at element `offsets` with `part`'s dims: the region must
/// have `part`'s layout exactly (same blocking, same strides along every dim longer than 1, no
/// padding). -1 when it does not (e.g. channels innermost, a batch above 1, padded blocks).
int64_t region_offset(const memory::desc& whole, const memory::desc& part,
                      const memory::dims& offsets) {
  memory::desc sub;
  try {
    sub = whole.submemory_desc(part.dims(), offsets);
  } catch (const dnnl::error&) {
    return -1;
  }
  const dnnl_memory_desc_t& a = sub.data;
  const dnnl_memory_desc_t& b = part.data;
  if (a.format_kind != dnnl_blocked || b.format_kind != dnnl_blocked || a.ndims != b.ndims ||
      a.data_type != b.data_type || a.extra.flags != 0 || b.extra.flags != 0 || b.offset0 != 0) {
    return -1;
  }
  const dnnl_blocking_desc_t& ab = a.format_desc.blocking;
  const dnnl_blocking_desc_t& bb = b.format_desc.blocking;
  if (ab.inner_nblks != bb.inner_nblks) return -1;
  for (int k = 0; k < ab.inner_nblks; ++k) {
    if (ab.inner_blks[k] != bb.inner_blks[k] || ab.inner_idxs[k] != bb.inner_idxs[k]) return -1;
  }
  for (int d = 0; d < a.ndims; ++d) {
    if (a.dims[d] != b.dims[d] || b.padded_dims[d] != b.dims[d] || a.padded_dims[d] != a.dims[d] ||
        b.padded_offsets[d] != 0) {
      return -1;
    }
    if (a.dims[d] > 1 && ab.strides[d] != bb.strides[d]) return -1;
  }
  return a.offset0 * static_cast<int64_t>(memory::data_type_size(part.data_type()));
}

/// Whether two unpadded descs (the caller compares their sizes) place every element at the same
/// byte. Decided for the case that matters here, a vector: with at most one dim longer than 1
/// (a [1, C, 1, 1] scale), every unpadded layout holds the elements in order.
bool same_bytes(const memory::desc& a, const memory::desc& b) {
  if (a.dims() != b.dims() || a.data_type() != b.data_type()) return false;
  int longer = 0;
  for (const int64_t d : a.dims()) longer += d > 1 ? 1 : 0;
  return longer <= 1;
}

/// The typed attributes of a node check_node accepted (it checked their types).
template <typename A>
A attrs_of(const NodeView& n) {
  A a;
  n.attrs(&a);
  return a;
}

/// An axis check_node validated, negative values counted from `rank`.
int64_t normalized_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

DimVector expand_rank(const DimVector& d, size_t rank) {
  DimVector out(rank - d.size(), 1);
  out.insert(out.end(), d.begin(), d.end());
  return out;
}

void append_activation(dnnl::post_ops& ops, const fb::Node& node) {
  if (node.activation() == fb::Activation::Relu) {
    ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  } else if (node.activation() == fb::Activation::Clip) {
    ops.append_eltwise(1.0f, algorithm::eltwise_clip, std::max(node.activation_min(), -3.4e38f),
                       std::min(node.activation_max(), 3.4e38f));
  }
}

// A Conv's activation as the clamp Tessera's kernels apply: ReLU [0, +inf), Clip [min, max],
// none (-inf, +inf) as *lo and *hi are; false (nothing set) for any other activation.
bool clamp_of(const fb::Node& node, float* lo, float* hi) {
  if (node.activation() == fb::Activation::Relu) {
    *lo = 0.0f;
  } else if (node.activation() == fb::Activation::Clip) {
    *lo = node.activation_min();
    *hi = node.activation_max();
  } else if (node.activation() != fb::Activation::None) {
    return false;
  }
  return true;
}

class Builder {
 public:
  Builder(const PayloadGraph& view, const BackendInitContext& context, const BuildOptions& options,
          Delegate& delegate)
      : view_(view),
        context_(context),
        options_(options),
        d_(delegate),
        act_(options.bf16 ? dt::bf16 : dt::f32) {}

  Status build();

 private:
  struct Val {
    memory mem;                     // current memory; empty until produced
    int arg = -1;                   // >= 0: its data is execute argument `arg` (read only)
    bool constant = false;          // a program constant (read only)
    bool shared = false;            // another value views the same buffer
    std::vector<memory> converted;  // copies in other layouts/types, made by reorders
  };

  Status resolve();
  Status lower(int index);
  /// Whether node `k` is too little work to split over the team: a parallel region's fork and
  /// join (and the split's imbalance) would cost more than the second thread saves.
  bool too_small_to_split(size_t k) const;
  /// Fills `to` (a Winograd weight layout) from the plain weights `from`, through cache_dir.
  void transform_winograd_weights(memory from, memory to);
  /// Whether a convolution is asked for as Winograd (conv_algorithm, its shape, the kernels).
  bool use_winograd(const DimVector& weights, const DimVector& out, int64_t group,
                    const Window& win) const;
  /// Whether oneDNN's Winograd kernels take a convolution of this geometry at all.
  bool winograd_shape(int64_t group, const Window& win) const;
  Status lower_conv(const NodeView& n, int index);
  // A grouped Conv by Tessera's kernel (grouped_conv.h), its input channels-last.
  Status lower_grouped_conv(const NodeView& n, const GroupedConvShape& shape);
  // A 1x1 Conv to 24 or 40 channels by Tessera's kernel (narrow_conv.h), its input
  // channels-last; with add_node >= 0 the Add of `residual` after it fused (into add_out).
  Status lower_narrow_conv(const NodeView& n, int index, const NarrowConvShape& shape, int add_node,
                           int residual, int add_out);
  /// A 1x1 Conv whose output only a 3x3 depthwise Conv (stride 1 or 2, padding 1) reads, run
  /// as one primitive with oneDNN's depthwise post-op, when the delegate runs on one thread,
  /// the input is (or, with 16 channels, is byte for byte) channel-blocked, and oneDNN has an
  /// optimised kernel for it (jit_1x1 with a fused depthwise row; the ref_fused fallback runs the
  /// two in turn). False when that does not apply; the caller then lowers the Conv on its own.
  Result<bool> lower_conv_with_depthwise(const NodeView& n);
  /// Whether Conv node `node` would be Tessera's narrow 1x1 kernel's (lower_conv) with its input
  /// in `input`, channel-blocked: a 1x1 Conv to 24 or 40 channels (stride 1, no padding) whose
  /// output no lowering would fuse into it (read by one Conv, or by several nodes none of them a
  /// Sigmoid or Mul), at most a ReLU.
  bool narrow_reads_blocked(int node, const memory::desc& input) const;
  /// Whether Conv `c` is a plain 1x1 one: no groups, 1x1 weights over all its input channels,
  /// stride 1, no padding or dilation, constant weights and bias, its output not a method
  /// output (what Tessera's narrow kernel asks of its Conv, lower_conv and narrow_reads_blocked).
  bool plain_pointwise(const NodeView& c) const;
  /// A 3x3 depthwise Conv (stride 1, padding 1) whose output only a 1x1 Conv reads, run as one
  /// step by Tessera's kernel (dw_pointwise.h) when its input is channels-last float32, the CPU
  /// has AVX-512, the shapes fit the kernel, and the 1x1 Conv's output goes only to Convs (no
  /// residual Add or activation node a lowering of its own would fuse). False when that does not
  /// apply; the caller then lowers the Conv on its own.
  Result<bool> lower_dw_pointwise(const NodeView& n);
  // A first-layer Conv by Tessera's kernel (stem_conv.h), its input NCHW; with mul_node >= 0 the
  // SiLU (sig_node, mul_node) after it fused, computed after the kernel (silu.h), into mul_out.
  Status lower_stem_conv(const NodeView& n, const StemConvShape& shape, int sig_node, int mul_node,
                         int mul_out);
  /// Whether Conv output `y` is a part of a channel Concat (batch 1) whose Conv parts include a
  /// Winograd one: every part then produces Winograd's channel-blocked layout, so that each
  /// writes straight into its region of the Concat's output (place_parts_in), no copies.
  bool shares_winograd_concat_layout(int y) const;
  /// Whether value `y` (written by `producer`) is read by exactly a Sigmoid of it and a Mul of it
  /// by that Sigmoid, nothing else: SiLU (or by a HardSigmoid with PyTorch's constants and such a
  /// Mul: HardSwish). Sets the two nodes and the Mul's output if so.
  void find_silu(int y, const fb::Node& producer, int* sig_node, int* mul_node, int* mul_out) const;
  Status lower_matmul(const NodeView& n);
  Status lower_pool(const NodeView& n);
  Status lower_global_pool(const NodeView& n);
  Status lower_binary(const NodeView& n, int index);
  Status lower_eltwise(const NodeView& n, int index);
  Status lower_softmax(const NodeView& n);
  Status lower_concat(const NodeView& n, int index);
  Result<bool> lower_concat_in_chain(const NodeView& n, int index, int64_t axis);
  Result<bool> lower_concat_into_shuffle(const NodeView& n, int64_t axis);
  bool place_parts_in(const NodeView& n, int index, const std::vector<memory>& parts, int64_t axis,
                      memory& dst);
  Status lower_reshape(const NodeView& n);
  Status lower_transpose(const NodeView& n);
  Status lower_shuffle(const NodeView& n);
  Status lower_layer_norm(const NodeView& n);
  Status lower_conv_transpose(const NodeView& n);
  Status lower_slice(const NodeView& n);
  Status lower_split(const NodeView& n);
  Status lower_pad(const NodeView& n);
  Status lower_prelu(const NodeView& n);
  Status lower_batch_norm(const NodeView& n);
  Status finish();
  Status plan_arena();

  dnnl::primitive_attr attr(const dnnl::post_ops* ops = nullptr) const {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (ops != nullptr) a.set_post_ops(*ops);
    return a;
  }

  /// A memory over `handle` (null: none yet); bound to execute argument `arg` when >= 0.
  memory wrap(const memory::desc& md, void* handle, int arg) {
    memory m(md, options_.engine, handle);
    d_.memories.push_back(m);
    if (arg >= 0) d_.bindings.push_back({m.get(), arg});
    return m;
  }
  /// A new buffer (allocate(); with `huge_pages` false, always one oneDNN allocates). finish()
  /// moves it into the delegate's shared activation arena when the first step touching it
  /// writes it (an activation: its build-time contents do not matter) and nothing pins it; see
  /// plan_arena().
  memory fresh(const memory::desc& md, bool huge_pages = true) {
    memory m = huge_pages ? allocate(md) : memory(md, options_.engine);
    d_.memories.push_back(m);
    if (md.get_size() > 0) {
      owned_.push_back({static_cast<const uint8_t*>(m.get_data_handle()), md.get_size(), false});
    }
    return m;
  }
  /// A memory over a new buffer: a LargeBuffer of the delegate's from large_buffer_threshold()
  /// on (mapped for huge pages: weights are written at init, one fault per 2 MiB), else one
  /// oneDNN allocates and owns.
  memory allocate(const memory::desc& md) {
    const size_t bytes = md.get_size();
    if (bytes == 0 || bytes < large_buffer_threshold()) return memory(md, options_.engine);
    LargeBuffer buffer = LargeBuffer::allocate(bytes, 64);
    // As oneDNN's own allocation reports it (build_delegate turns it into an init error).
    if (buffer.data() == nullptr) throw dnnl::error(dnnl_out_of_memory, "cannot allocate a buffer");
    memory m(md, options_.engine, buffer.data());
    d_.large_buffers.push_back(std::move(buffer));
    return m;
  }
  /// Frees the LargeBuffer at `base`, if the delegate has one there (a buffer moved into the
  /// arena: oneDNN frees its own when their memory moves).
  void release_large(const void* base) {
    for (LargeBuffer& b : d_.large_buffers) {
      if (b.data() == base) b.release();
    }
  }
  /// A buffer for a copy of a constant (reordered weights, a small constant copied, a
  /// broadcast), written now and only read by steps: carved from one LargeBuffer of the
  /// delegate sized for all its constants, so that its weights share huge pages instead of each
  /// taking 4 KiB pages of its own (MobileNetV2's 52 weight buffers are all below 2 MiB), else
  /// (no pool: its constants are below large_buffer_threshold(); or the pool is full)
  /// fresh_pinned(). Never moved into the arena.
  memory constant_buffer(const memory::desc& md) {
    const size_t bytes = md.get_size();
    if (bytes == 0) return fresh_pinned(md);
    const size_t need = (bytes + 63) / 64 * 64;
    if (pool_ == kNoPool || need > d_.large_buffers[pool_].size() - pool_used_) {
      return fresh_pinned(md);
    }
    memory m(md, options_.engine,
             static_cast<uint8_t*>(d_.large_buffers[pool_].data()) + pool_used_);
    pool_used_ += need;
    d_.memories.push_back(m);
    return m;
  }
  /// A new buffer whose build-time contents must survive (written now, then updated in part by
  /// steps): never moved into the arena.
  memory fresh_pinned(const memory::desc& md) {
    memory m = fresh(md);
    if (md.get_size() > 0) owned_.back().pinned = true;
    return m;
  }

  Result<memory> get(int v);
  /// Constant `v` as plain float32, in place in the program (not kept as the value's memory).
  Result<memory> in_place(int v);
  /// Value `v` in layout/type `want`: as it is, a cached copy, or a new copy (a reorder step;
  /// for constants a reorder run once now).
  Result<memory> as(int v, const memory::desc& want);
  /// Value `v` row-major in the activation type, viewed with `dims` (same element count).
  Result<memory> plain_view(int v, const DimVector& dims, dt type);
  /// Constant weights `v`, their f32 bytes viewed as `dims` (a grouped Conv's [g, O/g, I/g, kh,
  /// kw]), in layout `want`: the view itself, or a copy reordered (Winograd: transformed) once,
  /// now.
  Result<memory> weights_as(int v, const DimVector& dims, const memory::desc& want,
                            bool winograd = false);
  /// Value `v` as the input of a primitive in the activation type: as it is when it already has
  /// that type, else (another type, or a program constant, whose bytes steps must not write) a
  /// row-major copy in the activation type.
  Result<memory> activation_input(int v);
  /// Constant `v` broadcast (unidirectionally) to `shape`, as a new row-major f32 memory of
  /// numel(shape) elements filled now.
  Result<memory> broadcast_constant(int v, const DimVector& shape);
  /// A view of `m` (which belongs to value `v`) with another desc over the same buffer.
  memory view(int v, const memory& m, const memory::desc& md) {
    vals_[static_cast<size_t>(v)].shared = true;
    return wrap(md, m.get_data_handle(), arg_of(m));
  }
  /// The execute argument `m` is bound to, or -1.
  int arg_of(const memory& m) const {
    for (const ArgBinding& b : d_.bindings) {
      if (b.memory == m.get()) return b.arg;
    }
    return -1;
  }
  /// Value `v` is now `m`; `shared` when `m` views another value's buffer.
  void set(int v, const memory& m, bool shared = false) {
    Val& val = vals_[static_cast<size_t>(v)];
    val.mem = m;
    val.arg = arg_of(m);
    val.shared = val.shared || shared;
  }
  /// True if node `index` may overwrite value `v`: nothing reads it afterwards.
  bool overwritable(int v, int index, int also_allowed = -1) const;

  void add_step(const dnnl::primitive_desc_base& pd, const dnnl::primitive& primitive,
                const std::vector<std::pair<int, memory>>& args, const char* kind,
                std::string_view node_name);
  Status add_reorder(const memory& src, const memory& dst, std::string_view node_name);
  /// Runs a reorder of constants (weights into a primitive's layout) now, on this thread alone.
  void reorder_now(memory from, memory to);
  void add_activation_step(const fb::Node& node, int value, std::string_view name);

  /// Constant `v` was copied into a buffer of the delegate: the program's bytes may go.
  void copied_constant(int v) {
    if (vals_[static_cast<size_t>(v)].constant) {
      context_.release_constant(static_cast<uint32_t>(view_.value(v).constant));
    }
  }
  /// `pack` applied to the constants `values` (< 0: none, passed as null) as the program holds
  /// them, float32, which are released afterwards: a kernel of Tessera's (grouped_conv.h,
  /// narrow_conv.h, dw_pointwise.h, stem_conv.h) keeps its own packed copy.
  template <size_t N, typename Pack>
  auto packed_constants(const std::array<int, N>& values, Pack&& pack)
      -> Result<decltype(pack(std::array<const float*, N>{}))> {
    std::array<memory, N> held;
    std::array<const float*, N> data = {};
    for (size_t i = 0; i < N; ++i) {
      if (values[i] < 0) continue;
      TESSERA_ASSIGN_OR_RETURN(held[i], in_place(values[i]));
      data[i] = static_cast<const float*>(held[i].get_data_handle());
    }
    auto packed = pack(data);
    for (int v : values) {
      if (v >= 0) copied_constant(v);
    }
    return packed;
  }
  /// The same for a Conv's weights `w` and bias `b`: pack(weights, bias or null).
  template <typename Pack>
  auto packed_constants(int w, int b, Pack&& pack) -> Result<decltype(pack(nullptr, nullptr))> {
    return packed_constants(std::array<int, 2>{w, b},
                            [&](const std::array<const float*, 2>& d) { return pack(d[0], d[1]); });
  }
  /// Step `s` computes the SiLU of Mul node `mul_node` (x * sigmoid(x)) after itself, in place
  /// on `dst` (silu.h): all of dst's floats (blocked padding too: silu(0) = 0).
  void add_host_silu(Step* s, const memory& dst, int mul_node) {
    s->silu = dst.get();
    s->silu_elements = dst.get_desc().get_size() / sizeof(float);
    const NodeView mul(view_, view_.node(static_cast<size_t>(mul_node)));
    std::snprintf(s->silu_name.data(), s->silu_name.size(), "silu:%.*s",
                  static_cast<int>(mul.name().size()), mul.name().data());
    ++d_.host_silus;
  }
  /// Conv output `y`'s SiLU (sig_node, mul_node; into mul_out) fused: both nodes done, their
  /// output `dst`.
  void fused_silu(int y, int sig_node, int mul_node, int mul_out, const memory& dst) {
    done_[static_cast<size_t>(sig_node)] = true;
    done_[static_cast<size_t>(mul_node)] = true;
    ++d_.fused_silus;
    set(mul_out, dst);
    set(y, dst, true);  // read only by the two fused nodes
  }
  /// Step `s` of a kernel of Tessera's (s.grouped or s.narrow set, s.args filled) for Conv node
  /// `node_name`, implementation `impl`, appended.
  void add_host_step(Step s, std::string_view node_name, const char* impl) {
    std::snprintf(s.name.data(), s.name.size(), "conv:%.*s", static_cast<int>(node_name.size()),
                  node_name.data());
    s.impl = impl;
    s.threads = step_threads_;
    d_.steps.push_back(std::move(s));
  }

  const PayloadGraph& view_;
  const BackendInitContext& context_;
  const BuildOptions& options_;
  Delegate& d_;
  dt act_;
  std::vector<DimVector> dims_;  // view_'s dims as oneDNN dims, per value
  std::vector<Val> vals_;
  std::vector<bool> done_;  // nodes lowered as part of an earlier fusion
  struct OwnedBuffer {
    const uint8_t* base;
    size_t size;
    bool pinned;
  };
  std::vector<OwnedBuffer> owned_;  // every fresh() buffer, in creation order
  static constexpr size_t kNoPool = SIZE_MAX;
  size_t pool_ = kNoPool;  // the constants' pool (constant_buffer): its d_.large_buffers index
  size_t pool_used_ = 0;
  // The scratchpad of the reorders run at init (reorder_at_init), freed with the builder.
  LargeBuffer init_scratch_;
  struct ConcatChain {
    const uint8_t* base;  // where the buffer was when the chain began (before plan_arena)
    size_t size;
    memory buffer;
    memory::format_tag tag;  // abcd, or aBcd16b when every part has a multiple of 16 channels
  };
  std::vector<ConcatChain> chains_;  // see lower_concat_in_chain
  int step_threads_ = 0;             // Step::threads of the steps being added (see lower)

  /// While alive, the steps added are created for, and run on, a team of one.
  class OneThread {
   public:
    explicit OneThread(Builder& b) : b_(b), first_(b.d_.steps.size()), team_(1) {
      b_.step_threads_ = 1;
    }
    ~OneThread() {
      b_.d_.single_thread_steps += b_.d_.steps.size() - first_;
      b_.step_threads_ = 0;
    }
    OneThread(const OneThread&) = delete;
    OneThread& operator=(const OneThread&) = delete;

   private:
    Builder& b_;
    size_t first_;
    OmpThreadsScope team_;
  };
  /// Whether a step reading all of channels-last `src` against a per-channel operand or into
  /// per-channel sums (a broadcast binary, a global pool: squeeze-excitation) runs on one thread
  /// (see kCrossCoreElements).
  bool channels_last_on_one_thread(const memory::desc& src) const;
  /// Owned buffer `owned` moves to byte `offset` of a destination (Concat without copies).
  struct BufferMove {
    size_t owned;
    size_t offset;
  };
  /// Moves each buffer to `to` + its offset, with every memory that points into it; the moved
  /// buffers leave owned_ (their allocations are freed).
  void move_buffers(const std::vector<BufferMove>& moves, uint8_t* to);
  bool is_chain_buffer(const uint8_t* h) const {
    for (const ConcatChain& c : chains_) {
      if (c.base == h) return true;
    }
    return false;
  }
};

Status Builder::resolve() {
  const size_t n = view_.num_values();
  dims_.resize(n);
  vals_.resize(n);
  size_t constant_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const Dims& dims = view_.dims(static_cast<int32_t>(i));
    dims_[i].assign(dims.begin(), dims.end());
    vals_[i].constant = view_.value(static_cast<int32_t>(i)).is_constant();
    if (vals_[i].constant) constant_bytes += view_.value(static_cast<int32_t>(i)).data.size();
  }
  done_.assign(view_.num_nodes(), false);
  // The constants' pool (constant_buffer), sized from the program constants the graph holds:
  // reordered layouts pad some weights (an input of 3 channels to 16; Winograd's tiles), so
  // room for an eighth more, and 256 KiB. What is not used is given back in finish().
  if (constant_bytes >= large_buffer_threshold()) {
    LargeBuffer pool =
        LargeBuffer::allocate(constant_bytes + constant_bytes / 8 + (size_t{256} << 10), 64);
    if (pool.data() != nullptr) {
      d_.large_buffers.push_back(std::move(pool));
      pool_ = d_.large_buffers.size() - 1;
    }
  }
  return Status::ok();
}

Result<memory> Builder::in_place(int v) {
  const PayloadValue& pv = view_.value(v);
  const Span<const uint8_t> bytes = pv.data;
  const memory::desc md = plain(dims_[static_cast<size_t>(v)], dt::f32);
  if (bytes.size() < md.get_size()) {
    return Status::error(Error::InvalidProgram, "onednn: constant %d has %zu bytes, expected %zu",
                         pv.constant, bytes.size(), md.get_size());
  }
  return wrap(md, const_cast<uint8_t*>(bytes.data()), -1);
}

Result<memory> Builder::get(int v) {
  Val& val = vals_[static_cast<size_t>(v)];
  if (val.mem) return val.mem;
  if (val.constant) {
    TESSERA_ASSIGN_OR_RETURN(memory m, in_place(v));
    // A small constant that steps read at every execute (a bias, normalisation parameters) is
    // copied, and released: read in place, it would map back the program's pages around it, up
    // to a whole page-cache folio (2 MB) of weights released after their reorder. ResNeXt-50:
    // 28 MB of the file back in memory during the first execute. A large one stays in place.
    if (m.get_desc().get_size() <= kCopiedConstantBytes) {
      memory copy = constant_buffer(m.get_desc());
      std::memcpy(copy.get_data_handle(), m.get_data_handle(), m.get_desc().get_size());
      copied_constant(v);
      m = copy;
    }
    val.mem = m;
    return val.mem;
  }
  return Status::error(Error::InvalidProgram, "onednn: value %d is read before it is produced", v);
}

Result<memory> Builder::as(int v, const memory::desc& want) {
  TESSERA_ASSIGN_OR_RETURN(memory m, get(v));
  if (m.get_desc() == want) return m;
  Val& val = vals_[static_cast<size_t>(v)];
  for (const memory& c : val.converted) {
    if (c.get_desc() == want) return c;
  }
  memory out = val.constant ? constant_buffer(want) : fresh(want);
  if (val.constant) {
    reorder_now(m, out);
    copied_constant(v);
  } else {
    TESSERA_RETURN_IF_ERROR(add_reorder(m, out, "reorder"));
  }
  val.converted.push_back(out);
  return out;
}

Result<memory> Builder::activation_input(int v) {
  TESSERA_ASSIGN_OR_RETURN(memory m, get(v));
  if (m.get_desc().data_type() == act_ && !vals_[static_cast<size_t>(v)].constant) return m;
  return as(v, plain(dims_[static_cast<size_t>(v)], act_));
}

Result<memory> Builder::plain_view(int v, const DimVector& dims, dt type) {
  TESSERA_ASSIGN_OR_RETURN(memory m, as(v, plain(dims_[static_cast<size_t>(v)], type)));
  if (dims == dims_[static_cast<size_t>(v)]) return m;
  return view(v, m, plain(dims, type));
}

Result<memory> Builder::weights_as(int v, const DimVector& dims, const memory::desc& want,
                                   bool winograd) {
  TESSERA_ASSIGN_OR_RETURN(memory p, vals_[static_cast<size_t>(v)].constant ? in_place(v) : get(v));
  memory from = wrap(plain(dims, dt::f32), p.get_data_handle(), -1);
  if (from.get_desc() == want) return from;
  memory to = vals_[static_cast<size_t>(v)].constant ? constant_buffer(want) : fresh(want);
  if (winograd) {
    transform_winograd_weights(from, to);
  } else {
    reorder_now(from, to);
  }
  copied_constant(v);
  return to;
}

Result<memory> Builder::broadcast_constant(int v, const DimVector& shape) {
  TESSERA_ASSIGN_OR_RETURN(memory src, in_place(v));
  const DimVector from = expand_rank(dims_[static_cast<size_t>(v)], shape.size());
  memory::dims from_strides = strides_of(from);
  for (size_t d = 0; d < from.size(); ++d) {
    if (from[d] == 1) from_strides[d] = 0;
  }
  memory out = constant_buffer(plain(shape, dt::f32));
  const float* in = static_cast<const float*>(src.get_data_handle());
  float* to = static_cast<float*>(out.get_data_handle());
  const int64_t count = numel(shape);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rem = i, off = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      off += (rem % shape[d]) * from_strides[d];
      rem /= shape[d];
    }
    to[i] = in[off];
  }
  copied_constant(v);
  return out;
}

bool Builder::overwritable(int v, int index, int also_allowed) const {
  const Val& val = vals_[static_cast<size_t>(v)];
  if (val.constant || val.arg >= 0 || val.shared || view_.value(v).graph_output) return false;
  for (int c : view_.consumers(v)) {
    if (c > index && c != also_allowed) return false;
  }
  return true;
}

void Builder::add_step(const dnnl::primitive_desc_base& pd, const dnnl::primitive& primitive,
                       const std::vector<std::pair<int, memory>>& args, const char* kind,
                       std::string_view node_name) {
  Step s;
  s.primitive = primitive;
  for (const auto& [key, m] : args) s.args.push_back({key, m.get()});
  std::snprintf(s.name.data(), s.name.size(), "%s:%.*s", kind, static_cast<int>(node_name.size()),
                node_name.data());
  const char* impl = pd.impl_info_str();
  s.impl = impl ? impl : "";
  s.scratchpad = pd.scratchpad_desc();
  s.threads = step_threads_;
  d_.steps.push_back(std::move(s));
}

void Builder::reorder_now(memory from, memory to) {
  // One thread: the first parallel region of the process starts OpenMP's workers, and from then
  // on each page the load maps or unmaps and each JIT kernel made executable (mprotect) flushes
  // the TLB of the worker's core too, an inter-processor interrupt, slow in a virtual machine.
  // Weights are copied once and their pages faulted in as they are written, which a second
  // thread does not speed up: MnasNet's 1280x1000 classifier weights took 5.7 ms on one thread
  // and 8.2 ms on two (oneDNN 2.6, 2-vCPU KVM guest). The workers start at the first execute.
  // Winograd's weight transform is compute, not a copy, and keeps the team (winograd_cache.cpp):
  // on one thread it made ResNet-18's 2-thread load 185 ms against 154.
  OmpThreadsScope one(1);
  reorder_at_init(d_.engine, d_.stream, from, to, &init_scratch_, &d_.init_scratchpad_bytes);
}

Status Builder::add_reorder(const memory& src, const memory& dst, std::string_view node_name) {
  dnnl::reorder::primitive_desc pd(options_.engine, src.get_desc(), options_.engine, dst.get_desc(),
                                   attr());
  add_step(pd, dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}}, "reorder", node_name);
  return Status::ok();
}

void Builder::add_activation_step(const fb::Node& node, int value, std::string_view name) {
  if (node.activation() == fb::Activation::None) return;
  memory m = vals_[static_cast<size_t>(value)].mem;
  const bool relu = node.activation() == fb::Activation::Relu;
  dnnl::eltwise_forward::desc desc(
      dnnl::prop_kind::forward_inference, relu ? algorithm::eltwise_relu : algorithm::eltwise_clip,
      m.get_desc(), relu ? 0.0f : std::max(node.activation_min(), -3.4e38f),
      relu ? 0.0f : std::min(node.activation_max(), 3.4e38f));
  dnnl::eltwise_forward::primitive_desc pd(desc, attr(), options_.engine);
  add_step(pd, dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}}, "activation",
           name);
}

// ---- ops ---------------------------------------------------------------------------------------

void Builder::transform_winograd_weights(memory from, memory to) {
  transform_winograd_weights_cached(options_, d_, from, to, &init_scratch_);
}

bool Builder::winograd_shape(int64_t group, const Window& win) const {
  // Winograd applies to fp32 3x3 convolutions with stride 1, no dilation and no groups.
  return !options_.bf16 && options_.winograd_kernels && group == 1 && win.kernel[0] == 3 &&
         win.kernel[1] == 3 && win.stride[0] == 1 && win.stride[1] == 1 && win.dilation[0] == 0 &&
         win.dilation[1] == 0;
}

bool Builder::use_winograd(const DimVector& weights, const DimVector& out, int64_t group,
                           const Window& win) const {
  if (!winograd_shape(group, win)) return false;
  switch (options_.conv_algorithm) {
    case ConvAlgorithm::Direct:
      return false;
    case ConvAlgorithm::Winograd:
      return true;
    case ConvAlgorithm::Auto:
      // Where it measured faster (oneDNN 2.6's jit_fp32_wino_2x3, one thread, batch 1): its input
      // and output transforms cost too much next to few channels. With 3 input channels it took
      // 3-6x as long as brgemm (3 -> 64 at 224x224: 6.3 against 2.1 ms), with 16 output channels
      // 1.0-1.3x; from 16 input and 32 output channels on it took 0.35-0.97x as long (7x7 to
      // 56x56, 16 to 256 channels, weights in cache). Below 14x14 outputs the gain no longer
      // pays for the load: ResNet-18's three 7x7 layers (512 channels) run 0.25-0.6 ms faster
      // each with Winograd in the model, but oneDNN's weight transform at init (wino_reorder)
      // took 115-157 ms for each of them, and the load went from 90 to 250 ms. An application
      // that loads once and runs long asks for conv_algorithm=winograd.
      if (weights[1] < 16 || weights[0] < 32 || out[2] * out[3] < 14 * 14) return false;
      // With two or more threads the layers below 20x20 outputs gain less: their 49-100 tiles
      // are split between the threads, and below 256 input channels Winograd measured slower
      // than direct (2 threads, in the model: GoogLeNet's 14x14 layers of 96-160 input
      // channels 0.223 against 0.423 ms, 0.408 against 0.476, 0.516 against 0.676; DenseNet-121's
      // 14x14 128 -> 32 layers 1.26 against 1.41 ms for 24 of them), while ResNet-18's 14x14
      // 256 -> 256 ones kept their gain (0.42-0.51 against 0.55-0.62 ms), and so did
      // SqueezeNet's 27x27 32 -> 128 ones (direct for them too: the model 1.09x as slow).
      if (options_.threads > 1 && out[2] * out[3] < 20 * 20 && weights[1] < 256) return false;
      return true;
  }
  return false;
}

Result<bool> Builder::lower_conv_with_depthwise(const NodeView& n) {
  // At two threads oneDNN 2.6's fused kernel measured no faster than the two primitives
  // (MobileNetV2's 16 -> 96 channels at 112x112 then stride 2: 0.257 against 0.152 + 0.097 ms),
  // at one thread it saved their buffer's round trip (0.320 against 0.317 + 0.208 ms).
  if (options_.bf16 || (options_.threads > 1 && step_threads_ != 1)) return false;
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const Window win = read_window(n);
  if (dx.size() != 4 || dw.size() != 4 || attrs_of<ir::ConvAttrs>(n).group != 1 ||
      win.kernel[0] != 1 || win.kernel[1] != 1 || win.stride[0] != 1 || win.stride[1] != 1 ||
      win.pad_begin[0] != 0 || win.pad_begin[1] != 0 || win.pad_end[0] != 0 ||
      win.pad_end[1] != 0) {
    return false;
  }
  const Span<const int32_t> ys = view_.consumers(y);
  if (ys.size() != 1 || view_.value(y).graph_output || done_[static_cast<size_t>(ys[0])]) {
    return false;
  }
  const fb::Node& dn = view_.node(static_cast<size_t>(ys[0]));
  if (dn.op() != fb::OpType::Conv) return false;
  NodeView dv(view_, dn);
  if (dv.num_inputs() < 3 || dv.input(0) != y || dv.input(2) < 0 || !check_node(dv).is_ok()) {
    return false;
  }
  const int k = dv.input(1), kb = dv.input(2), z = dv.output(0);
  const DimVector& dk = dims_[static_cast<size_t>(k)];
  const int64_t channels = dy[1];
  const Window dwin = read_window(dv);
  if (attrs_of<ir::ConvAttrs>(dv).group != channels || dk.size() != 4 || dk[0] != channels ||
      dk[1] != 1 || dwin.kernel[0] != 3 || dwin.kernel[1] != 3 ||
      dwin.stride[0] != dwin.stride[1] || (dwin.stride[0] != 1 && dwin.stride[0] != 2) ||
      dwin.dilation[0] != 0 || dwin.dilation[1] != 0 || dwin.pad_begin[0] != 1 ||
      dwin.pad_begin[1] != 1 || dwin.pad_end[0] != 1 || dwin.pad_end[1] != 1) {
    return false;
  }
  // What reads the depthwise output must not be a node its own lowering would fuse (a residual
  // Add, SiLU, an activation-like node): only Convs, and not as a method output.
  if (view_.value(z).graph_output || view_.consumers(z).empty()) return false;
  for (int c : view_.consumers(z)) {
    if (view_.node(static_cast<size_t>(c)).op() != fb::OpType::Conv) return false;
  }
  // The input channel-blocked: as it is, or, with 16 channels, channels-last viewed as aBcd16b
  // (the same bytes). Anything else would need a reorder that costs what the fusion saves.
  TESSERA_ASSIGN_OR_RETURN(memory xm, get(x));
  const memory::desc blocked(dx, act_, memory::format_tag::aBcd16b);
  const bool as_blocked = xm.get_desc() == blocked;
  if (!as_blocked &&
      !(dx[1] == 16 && xm.get_desc() == memory::desc(dx, act_, memory::format_tag::acdb))) {
    return false;
  }
  dnnl::post_ops ops;
  append_activation(ops, n.node());
  ops.append_dw(dt::f32, dt::f32, dt::f32, 3, dwin.stride[0], 1, 0, {});
  append_activation(ops, dn);
  const memory::desc bias_md = b >= 0 ? plain({dw[0]}, dt::f32) : memory::desc();
  dnnl::convolution_forward::primitive_desc pd;
  try {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         algorithm::convolution_direct, blocked, any(dw, act_),
                                         bias_md, any(dy, act_), {1, 1}, {0, 0}, {0, 0});
    pd = dnnl::convolution_forward::primitive_desc(desc, attr(&ops), options_.engine);
  } catch (const dnnl::error&) {
    return false;
  }
  if (std::string_view(pd.impl_info_str()).substr(0, 3) == "ref" ||
      pd.dst_desc().dims() != dims_[static_cast<size_t>(z)]) {
    return false;
  }
  const int dw_weights = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
  const int dw_bias = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
  // Both sets of weights in the layouts the kernel asked for; the depthwise ones as oneDNN's
  // grouped [channels, 1, 1, 3, 3].
  TESSERA_ASSIGN_OR_RETURN(memory weights, weights_as(w, dw, pd.weights_desc()));
  TESSERA_ASSIGN_OR_RETURN(
      memory kweights,
      weights_as(k, {channels, 1, 1, 3, 3}, pd.query_md(dnnl::query::exec_arg_md, dw_weights)));
  TESSERA_ASSIGN_OR_RETURN(memory kbias, plain_view(kb, {channels}, dt::f32));
  const memory src = as_blocked ? xm : view(x, xm, blocked);
  memory dst = fresh(pd.dst_desc());
  std::vector<std::pair<int, memory>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (b >= 0) {
    TESSERA_ASSIGN_OR_RETURN(memory bias, plain_view(b, {dw[0]}, dt::f32));
    args.push_back({DNNL_ARG_BIAS, bias});
  }
  args.insert(args.end(), {{DNNL_ARG_DST, dst}, {dw_weights, kweights}, {dw_bias, kbias}});
  add_step(pd, dnnl::convolution_forward(pd), args, "conv", n.name());
  done_[static_cast<size_t>(ys[0])] = true;
  ++d_.fused_depthwise_convs;
  // Read by a 1x1 Conv to 24 or 40 channels alone, left channel-blocked: Tessera's kernel for it
  // reads that layout (MobileNetV2's second block: the reorder took 0.033 ms of 3.9).
  const Span<const int32_t> zs = view_.consumers(z);
  if (zs.size() == 1 && narrow_reads_blocked(zs[0], pd.dst_desc())) {
    set(z, dst);
    return true;
  }
  // Back to channels-last for the Convs that read it. Left channel-blocked, the next 1x1 Conv
  // keeps that layout and so does every 1x1 after it, each following depthwise Conv then paying
  // a reorder in and one out (MobileNetV2: four reorders per block, 0.1 ms each).
  memory out = fresh(memory::desc(pd.dst_desc().dims(), act_, memory::format_tag::acdb));
  TESSERA_RETURN_IF_ERROR(add_reorder(dst, out, dv.name()));
  set(z, out);
  return true;
}

bool Builder::plain_pointwise(const NodeView& c) const {
  const int x = c.input(0), w = c.input(1), b = c.input(2), y = c.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  const Window win = read_window(c);
  return dx.size() == 4 && dw.size() == 4 && dw[1] == dx[1] && dw[2] == 1 && dw[3] == 1 &&
         attrs_of<ir::ConvAttrs>(c).group == 1 && win.kernel[0] == 1 && win.kernel[1] == 1 &&
         win.stride[0] == 1 && win.stride[1] == 1 && win.dilation[0] == 0 && win.dilation[1] == 0 &&
         win.pad_begin[0] == 0 && win.pad_begin[1] == 0 && win.pad_end[0] == 0 &&
         win.pad_end[1] == 0 && vals_[static_cast<size_t>(w)].constant &&
         (b < 0 || vals_[static_cast<size_t>(b)].constant) && !view_.value(y).graph_output;
}

bool Builder::narrow_reads_blocked(int node, const memory::desc& input) const {
  const fb::Node& cn = view_.node(static_cast<size_t>(node));
  if (cn.op() != fb::OpType::Conv || act_ != dt::f32 || d_.silu_isa != SiluIsa::Avx512) {
    return false;
  }
  NodeView cv(view_, cn);
  if (cv.num_inputs() < 2 || !check_node(cv).is_ok() || !plain_pointwise(cv)) return false;
  const int x = cv.input(0), w = cv.input(1), y = cv.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  if (dx[1] % 16 != 0 || (dw[0] != 24 && dw[0] != 40) ||
      input != memory::desc(dx, act_, memory::format_tag::aBcd16b) ||
      (cn.activation() != fb::Activation::None && cn.activation() != fb::Activation::Relu)) {
    return false;
  }
  const Span<const int32_t> ys = view_.consumers(y);
  if (ys.empty()) return false;
  if (ys.size() == 1) return view_.node(static_cast<size_t>(ys[0])).op() == fb::OpType::Conv;
  for (int c : ys) {
    const fb::OpType op = view_.node(static_cast<size_t>(c)).op();
    if (op == fb::OpType::Sigmoid || op == fb::OpType::Mul) return false;
  }
  return true;
}

Status Builder::lower_stem_conv(const NodeView& n, const StemConvShape& shape, int sig_node,
                                int mul_node, int mul_out) {
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const fb::Node& node = n.node();
  Step s;
  TESSERA_ASSIGN_OR_RETURN(
      s.stem, packed_constants(w, b, [&](const float* weights, const float* bias) {
        auto c = std::make_shared<StemConv>(pack_stem_conv(shape, weights, bias));
        clamp_of(node, &c->min, &c->max);  // None, ReLU or Clip (lower_conv)
        return std::shared_ptr<const StemConv>(std::move(c));
      }));
  TESSERA_ASSIGN_OR_RETURN(memory src, get(x));
  memory dst = fresh(memory::desc(dims_[static_cast<size_t>(y)], act_, memory::format_tag::acdb));
  s.args = {{DNNL_ARG_SRC, src.get()}, {DNNL_ARG_DST, dst.get()}};
  if (mul_node >= 0) add_host_silu(&s, dst, mul_node);
  add_host_step(std::move(s), n.name(), "tessera:stem3x3_avx512");
  ++d_.host_stem_convs;
  if (mul_node >= 0) {
    fused_silu(y, sig_node, mul_node, mul_out, dst);
  } else {
    set(y, dst);
  }
  return Status::ok();
}

Result<bool> Builder::lower_dw_pointwise(const NodeView& n) {
  if (act_ != dt::f32 || d_.silu_isa != SiluIsa::Avx512 || n.num_inputs() < 2) return false;
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const Window win = read_window(n);
  auto constant = [&](int v) { return v < 0 || vals_[static_cast<size_t>(v)].constant; };
  if (dx.size() != 4 || dw.size() != 4 || dy != dx || dw[0] != dx[1] || dw[1] != 1 || dw[2] != 3 ||
      dw[3] != 3 || attrs_of<ir::ConvAttrs>(n).group != dx[1] || win.kernel[0] != 3 ||
      win.kernel[1] != 3 || win.stride[0] != 1 || win.stride[1] != 1 || win.dilation[0] != 0 ||
      win.dilation[1] != 0 || win.pad_begin[0] != 1 || win.pad_begin[1] != 1 ||
      win.pad_end[0] != 1 || win.pad_end[1] != 1 || !constant(w) || !constant(b) ||
      view_.value(y).graph_output) {
    return false;
  }
  const Span<const int32_t> ys = view_.consumers(y);
  if (ys.size() != 1 || done_[static_cast<size_t>(ys[0])]) return false;
  const fb::Node& pn = view_.node(static_cast<size_t>(ys[0]));
  if (pn.op() != fb::OpType::Conv) return false;
  NodeView pv(view_, pn);
  if (pv.num_inputs() < 2 || pv.input(0) != y || !check_node(pv).is_ok()) return false;
  const int k = pv.input(1), kb = pv.input(2), z = pv.output(0);
  const DimVector& dk = dims_[static_cast<size_t>(k)];
  const DimVector& dz = dims_[static_cast<size_t>(z)];
  const Window pwin = read_window(pv);
  if (dk.size() != 4 || dk[1] != dx[1] || dk[2] != 1 || dk[3] != 1 ||
      attrs_of<ir::ConvAttrs>(pv).group != 1 || pwin.kernel[0] != 1 || pwin.kernel[1] != 1 ||
      pwin.stride[0] != 1 || pwin.stride[1] != 1 || pwin.pad_begin[0] != 0 ||
      pwin.pad_begin[1] != 0 || pwin.pad_end[0] != 0 || pwin.pad_end[1] != 0 ||
      dz != DimVector{dx[0], dk[0], dx[2], dx[3]} || !constant(k) || !constant(kb)) {
    return false;
  }
  // What reads the 1x1 output: Convs only, not a method output (a residual Add, a SiLU or an
  // activation node would be fused into the 1x1 Conv's own lowering).
  if (view_.value(z).graph_output || view_.consumers(z).empty()) return false;
  for (int c : view_.consumers(z)) {
    if (view_.node(static_cast<size_t>(c)).op() != fb::OpType::Conv) return false;
  }
  const DwPointwiseShape shape{dx[0], dx[2], dx[3], dx[1], dk[0]};
  float dw_lo = -std::numeric_limits<float>::infinity(), dw_hi = -dw_lo;
  float pw_lo = dw_lo, pw_hi = dw_hi;
  if (!dw_pointwise_applies(shape) || !clamp_of(n.node(), &dw_lo, &dw_hi) ||
      !clamp_of(pn, &pw_lo, &pw_hi)) {
    return false;
  }
  TESSERA_ASSIGN_OR_RETURN(memory src, get(x));
  if (src.get_desc() != memory::desc(dx, act_, memory::format_tag::acdb)) return false;
  Step s;
  TESSERA_ASSIGN_OR_RETURN(
      s.dw_pointwise,
      packed_constants(std::array<int, 4>{w, b, k, kb}, [&](const std::array<const float*, 4>& d) {
        auto c = std::make_shared<DwPointwise>(pack_dw_pointwise(shape, d[0], d[1], d[2], d[3]));
        c->dw_min = dw_lo;
        c->dw_max = dw_hi;
        c->pw_min = pw_lo;
        c->pw_max = pw_hi;
        return std::shared_ptr<const DwPointwise>(std::move(c));
      }));
  memory dst = fresh(memory::desc(dz, act_, memory::format_tag::acdb));
  s.args = {{DNNL_ARG_SRC, src.get()}, {DNNL_ARG_DST, dst.get()}};
  add_host_step(std::move(s), n.name(), "tessera:dw3x3_1x1_avx512");
  ++d_.host_dw_pointwise_convs;
  done_[static_cast<size_t>(ys[0])] = true;
  set(z, dst);
  return true;
}

Status Builder::lower_grouped_conv(const NodeView& n, const GroupedConvShape& shape) {
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const bool relu = n.node().activation() == fb::Activation::Relu;
  Step s;
  TESSERA_ASSIGN_OR_RETURN(
      s.grouped, packed_constants(w, b, [&](const float* weights, const float* bias) {
        return std::make_shared<const GroupedConv>(pack_grouped_conv(shape, weights, bias, relu));
      }));
  TESSERA_ASSIGN_OR_RETURN(memory src, get(x));
  memory dst = fresh(memory::desc(dims_[static_cast<size_t>(y)], act_, memory::format_tag::acdb));
  s.args = {{DNNL_ARG_SRC, src.get()}, {DNNL_ARG_DST, dst.get()}};
  add_host_step(std::move(s), n.name(), "tessera:grouped_avx512");
  ++d_.channels_last_grouped_convs;
  ++d_.host_grouped_convs;
  set(y, dst);
  return Status::ok();
}

Status Builder::lower_narrow_conv(const NodeView& n, int index, const NarrowConvShape& shape,
                                  int add_node, int residual, int add_out) {
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  // The ReLU is the Add's when there is one (the Conv's own is None then), else the Conv's.
  const fb::Activation act = add_node >= 0 ? view_.node(static_cast<size_t>(add_node)).activation()
                                           : n.node().activation();
  Step s;
  TESSERA_ASSIGN_OR_RETURN(
      s.narrow, packed_constants(w, b, [&](const float* weights, const float* bias) {
        return std::make_shared<const NarrowConv>(
            pack_narrow_conv(shape, weights, bias, add_node >= 0, act == fb::Activation::Relu));
      }));
  TESSERA_ASSIGN_OR_RETURN(memory src, get(x));
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  memory dst;
  memory res;
  if (add_node >= 0) {
    TESSERA_ASSIGN_OR_RETURN(res, get(residual));
    // Not where the residual is the Conv's own input (y + conv(y)): the kernel would write over
    // pixels another thread has yet to read.
    if (residual != x && overwritable(residual, index, add_node)) {
      dst = res;
      ++d_.in_place_sums;
    } else {
      dst = fresh(memory::desc(dy, act_, memory::format_tag::acdb));
    }
    ++d_.fused_sums;
  } else {
    dst = fresh(memory::desc(dy, act_, memory::format_tag::acdb));
  }
  s.args = {{DNNL_ARG_SRC, src.get()}, {DNNL_ARG_DST, dst.get()}};
  if (add_node >= 0 && dst.get() != res.get()) s.args.push_back({DNNL_ARG_SRC_1, res.get()});
  add_host_step(std::move(s), n.name(), "tessera:narrow1x1_avx512");
  ++d_.host_narrow_convs;
  if (add_node >= 0) {
    done_[static_cast<size_t>(add_node)] = true;
    set(add_out, dst);
    set(y, dst, true);  // y itself is never read again
  } else {
    set(y, dst);
  }
  return Status::ok();
}

Status Builder::lower_conv(const NodeView& n, int index) {
  TESSERA_ASSIGN_OR_RETURN(const bool fused, lower_conv_with_depthwise(n));
  if (fused) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(const bool paired, lower_dw_pointwise(n));
  if (paired) return Status::ok();
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const int64_t group = attrs_of<ir::ConvAttrs>(n).group;
  const Window win = read_window(n);
  DimVector wdims = dw;
  if (group > 1) wdims = {group, dw[0] / group, dw[1], dw[2], dw[3]};

  // A following Add of another same-shaped tensor becomes a sum post-op.
  int add_node = -1, residual = -1, add_out = -1;
  const Span<const int32_t> ys = view_.consumers(y);
  if (ys.size() == 1 && !view_.value(y).graph_output) {
    const fb::Node* a = &view_.node(static_cast<size_t>(ys[0]));
    NodeView av(view_, *a);
    if (a->op() == fb::OpType::Add && av.num_inputs() == 2 && !done_[static_cast<size_t>(ys[0])]) {
      const int other = av.input(0) == y ? av.input(1) : av.input(0);
      if (other >= 0 && other != y && dims_[static_cast<size_t>(other)] == dy &&
          dims_[static_cast<size_t>(av.output(0))] == dy &&
          !vals_[static_cast<size_t>(other)].constant &&
          (vals_[static_cast<size_t>(other)].mem || vals_[static_cast<size_t>(other)].arg >= 0)) {
        add_node = ys[0];
        residual = other;
        add_out = av.output(0);
      }
    }
  }

  // Or x * sigmoid(x) (SiLU, as ONNX exports it: a Sigmoid and a Mul both reading the Conv's
  // output, the Sigmoid read by that Mul alone) becomes a swish post-op.
  int sig_node = -1, mul_node = -1, mul_out = -1;
  if (add_node < 0) find_silu(y, n.node(), &sig_node, &mul_node, &mul_out);
  // A float32 SiLU with nothing after it is computed by Tessera right after the convolution
  // (silu.h): oneDNN's swish post-op costs about twice as much.
  const bool host_silu =
      mul_node >= 0 && act_ == dt::f32 && d_.silu_isa != SiluIsa::Scalar &&
      view_.node(static_cast<size_t>(sig_node)).op() == fb::OpType::Sigmoid &&
      view_.node(static_cast<size_t>(mul_node)).activation() == fb::Activation::None;
  // Or a lone activation-like node reading only the Conv's output (HardSwish, Sigmoid,
  // HardSigmoid, ...: the ones the compiler does not fold into Activation) becomes post-ops.
  int elt_node = -1, elt_out = -1;
  if (add_node < 0 && mul_node < 0 && ys.size() == 1 && !view_.value(y).graph_output &&
      !done_[static_cast<size_t>(ys[0])]) {
    const fb::Node& e = view_.node(static_cast<size_t>(ys[0]));
    NodeView ev(view_, e);
    if (lowering_of(e.op()).lowering == Lowering::Eltwise && ev.num_inputs() == 1 &&
        ev.input(0) == y && dims_[static_cast<size_t>(ev.output(0))] == dy) {
      elt_node = ys[0];
      elt_out = ev.output(0);
    }
  }

  auto post_ops = [&]() {
    dnnl::post_ops ops;
    append_activation(ops, n.node());
    if (add_node >= 0) {
      ops.append_sum(1.0f);
      append_activation(ops, view_.node(static_cast<size_t>(add_node)));
    }
    if (mul_node >= 0) {
      if (view_.node(static_cast<size_t>(sig_node)).op() == fb::OpType::HardSigmoid) {
        ops.append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f);
      } else if (!host_silu) {
        ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
      }
      append_activation(ops, view_.node(static_cast<size_t>(mul_node)));
    }
    if (elt_node >= 0) {
      const fb::Node& e = view_.node(static_cast<size_t>(elt_node));
      NodeView ev(view_, e);
      if (e.op() == fb::OpType::HardSigmoid) {
        const ir::HardSigmoidAttrs a = attrs_of<ir::HardSigmoidAttrs>(ev);
        ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, a.beta);
        ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
      } else {
        EltwiseSpec spec;
        eltwise_of(ev, &spec);
        ops.append_eltwise(1.0f, static_cast<algorithm>(spec.algorithm), spec.alpha, spec.beta);
      }
      append_activation(ops, e);
    }
    return ops;
  };
  // A first-layer 3x3 Conv (at most 4 input channels, read as the method's NCHW input is) to 32,
  // 48 or 64 channels, at most a clamp (ReLU, ReLU6) or a SiLU after: Tessera's kernel
  // (stem_conv.h), with no reorder of the input first.
  if (group == 1 && act_ == dt::f32 && d_.silu_isa == SiluIsa::Avx512 && add_node < 0 &&
      elt_node < 0 && (mul_node < 0 || host_silu) && dx.size() == 4 && dy.size() == 4 &&
      dw.size() == 4 && dx[0] == dy[0] && dw[0] == dy[1] && dw[1] == dx[1] && dw[2] == 3 &&
      dw[3] == 3 && win.kernel[0] == 3 && win.kernel[1] == 3 && win.stride[0] == win.stride[1] &&
      win.dilation[0] == 0 && win.dilation[1] == 0 && vals_[static_cast<size_t>(w)].constant &&
      (b < 0 || vals_[static_cast<size_t>(b)].constant) && !view_.value(y).graph_output &&
      (n.node().activation() == fb::Activation::None ||
       n.node().activation() == fb::Activation::Relu ||
       n.node().activation() == fb::Activation::Clip)) {
    const StemConvShape ss{
        dx[0],           dx[1], dx[2], dx[3], dy[1], dy[2], dy[3], win.stride[0], win.pad_begin[0],
        win.pad_begin[1]};
    TESSERA_ASSIGN_OR_RETURN(memory xm, get(x));
    if (stem_conv_applies(ss) &&
        xm.get_desc() == memory::desc(dx, act_, memory::format_tag::abcd)) {
      return lower_stem_conv(n, ss, sig_node, mul_node, mul_out);
    }
  }
  dnnl::post_ops ops = post_ops();
  const memory::dims strides = {win.stride[0], win.stride[1]};
  const memory::dims dilation = {win.dilation[0], win.dilation[1]};
  const memory::dims pad_l = {win.pad_begin[0], win.pad_begin[1]};
  const memory::dims pad_r = {win.pad_end[0], win.pad_end[1]};
  const memory::desc bias_md = b >= 0 ? plain({dw[0]}, dt::f32) : memory::desc();
  algorithm alg = use_winograd(dw, dy, group, win) ? algorithm::convolution_winograd
                                                   : algorithm::convolution_direct;
  // A Conv keeps its input's layout where oneDNN would reorder it for a kernel of its own choice.
  // A grouped (not depthwise) Conv reading a channels-last tensor stays channels-last: left to
  // choose, oneDNN 2.6 gives it a channel-blocked layout (aBcd8b on AVX-512), and every RegNetY
  // block then paid a reorder into it and one back out (49 reorders per run). Kept
  // channels-last, RegNetY-400MF went from 8.4 to 7.8 ms at 1 thread and 5.0 to 4.5 at 2,
  // ResNeXt-50 65.6 to 63.9 at 1 (docs/performance.md, "Grouped convolutions").
  memory::format_tag keep = memory::format_tag::undef;
  // A first-layer Conv (at most 4 input channels, read as the method's NCHW input is) that
  // writes 16 channels: oneDNN 2.6's jit kernel reads NCHW and writes aBcd16b, which with 16
  // channels is the same bytes as channels-last. Left to choose, it reordered the whole input to
  // channels-last for brgconv first: MnasNet's and MobileNetV3-Small's 1x3x224x224 input, 0.04 ms
  // of a 1.2 and 0.9 ms run at 1 thread; the two steps took 0.11 ms, the jit kernel alone 0.06
  // (docs/performance.md, twenty-second session). Kept as abcd: src abcd, dst aBcd16b, and the
  // output is seen as channels-last.
  auto nchw_in = [&keep] { return keep == memory::format_tag::abcd; };
  if (dx.size() == 4) {
    TESSERA_ASSIGN_OR_RETURN(memory xm, get(x));
    const memory::desc& xd = xm.get_desc();
    if (group > 1 && group != dx[1] && xd == memory::desc(dx, act_, memory::format_tag::acdb)) {
      keep = memory::format_tag::acdb;
    } else if (group == 1 && dx[1] <= 4 && dy[1] == 16 && act_ == dt::f32 && add_node < 0 &&
               alg == algorithm::convolution_direct && !view_.value(y).graph_output &&
               xd == memory::desc(dx, act_, memory::format_tag::abcd) &&
               !shares_winograd_concat_layout(y)) {
      keep = memory::format_tag::abcd;
    } else if (group == 1 && win.kernel[0] == 1 && win.kernel[1] == 1 &&
               xd == memory::desc(dx, act_, memory::format_tag::aBcd16b)) {
      // Likewise a 1x1 Conv reading a channel-blocked tensor (a DenseNet chain, a SqueezeNet
      // Concat): oneDNN's jit_1x1 kernel takes aBcd16b in and out, where left to choose it
      // reorders the whole input to channels-last for brgconv_1x1 first.
      keep = memory::format_tag::aBcd16b;
    }
  }
  // A grouped convolution with 4, 8 or 16 channels a group that stays channels-last, 3x3 with
  // one row and column of padding before, at most a ReLU after: Tessera's kernel, 2.5x as fast
  // as oneDNN 2.6's with 4 channels a group (grouped_conv.h).
  if (keep == memory::format_tag::acdb && act_ == dt::f32 && d_.silu_isa == SiluIsa::Avx512 &&
      add_node < 0 && mul_node < 0 && elt_node < 0 &&
      (n.node().activation() == fb::Activation::None ||
       n.node().activation() == fb::Activation::Relu) &&
      vals_[static_cast<size_t>(w)].constant && (b < 0 || vals_[static_cast<size_t>(b)].constant) &&
      dy.size() == 4 && dx[0] == dy[0] && dx[1] == dy[1] && dw.size() == 4 && dw[0] == dx[1] &&
      dw[2] == 3 && dw[3] == 3 && win.kernel[0] == 3 && win.kernel[1] == 3 &&
      win.dilation[0] == 0 && win.dilation[1] == 0 && win.pad_begin[0] == 1 &&
      win.pad_begin[1] == 1 && win.pad_end[0] <= 1 && win.pad_end[1] <= 1 &&
      win.stride[0] == win.stride[1] && dx[1] % group == 0 && dw[1] == dx[1] / group) {
    GroupedConvShape gs;
    gs.batch = dx[0];
    gs.h = dx[2];
    gs.w = dx[3];
    gs.channels = dx[1];
    gs.out_h = dy[2];
    gs.out_w = dy[3];
    gs.channels_per_group = static_cast<int>(dw[1]);
    gs.stride = static_cast<int>(win.stride[0]);
    if (grouped_conv_applies(gs)) return lower_grouped_conv(n, gs);
  }
  // A 1x1 Conv to 24 or 40 channels reading a channels-last tensor, stride 1, no padding, at
  // most a residual Add (channels-last too) and a ReLU after: Tessera's kernel, which computes
  // no padding channels where oneDNN 2.6 computes 32 or 48 (narrow_conv.h).
  if (act_ == dt::f32 && d_.silu_isa == SiluIsa::Avx512 && mul_node < 0 && elt_node < 0 &&
      plain_pointwise(n) && dy.size() == 4 && dx[0] == dy[0] && dx[2] == dy[2] && dx[3] == dy[3] &&
      dw[0] == dy[1]) {
    const fb::Activation conv_act = n.node().activation();
    const fb::Activation add_act = add_node >= 0
                                       ? view_.node(static_cast<size_t>(add_node)).activation()
                                       : fb::Activation::None;
    const bool acts = add_node >= 0
                          ? conv_act == fb::Activation::None &&
                                (add_act == fb::Activation::None || add_act == fb::Activation::Relu)
                          : (conv_act == fb::Activation::None || conv_act == fb::Activation::Relu);
    NarrowConvShape ns{dx[0] * dx[2] * dx[3], dx[1], dy[1]};
    bool inputs_fit = acts;
    if (inputs_fit) {
      TESSERA_ASSIGN_OR_RETURN(memory xm, get(x));
      // Channels-last, or channel-blocked as lower_conv_with_depthwise leaves it for this kernel.
      if (xm.get_desc() == memory::desc(dx, act_, memory::format_tag::aBcd16b)) {
        ns.blocked_input = true;
        ns.image_pixels = dx[2] * dx[3];
      } else {
        inputs_fit = xm.get_desc() == memory::desc(dx, act_, memory::format_tag::acdb);
      }
      inputs_fit = inputs_fit && narrow_conv_applies(ns);
    }
    if (inputs_fit && add_node >= 0) {
      TESSERA_ASSIGN_OR_RETURN(memory r, get(residual));
      inputs_fit = r.get_desc() == memory::desc(dy, act_, memory::format_tag::acdb);
    }
    if (inputs_fit) return lower_narrow_conv(n, index, ns, add_node, residual, add_out);
  }
  auto make_pd = [&](const memory::desc& dst_md) {
    auto create = [&](bool in_kept_layout) {
      const memory::format_tag keep_dst = nchw_in() ? memory::format_tag::aBcd16b : keep;
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, alg,
          in_kept_layout ? memory::desc(dx, act_, keep) : any(dx, act_), any(wdims, act_), bias_md,
          in_kept_layout ? memory::desc(dy, act_, keep_dst) : dst_md, strides, dilation, pad_l,
          pad_r);
      return dnnl::convolution_forward::primitive_desc(desc, attr(&ops), options_.engine);
    };
    if (keep == memory::format_tag::undef || dst_md.data.format_kind != dnnl_format_kind_any) {
      return create(false);
    }
    dnnl::convolution_forward::primitive_desc p;
    try {
      p = create(true);
    } catch (const dnnl::error&) {
      if (!nchw_in()) throw;
      keep = memory::format_tag::undef;  // no kernel takes this post-op in that layout
      return create(false);
    }
    // No optimised kernel for it in that layout (for NCHW in, only the jit one saves the time).
    const std::string_view impl = p.impl_info_str();
    if (impl.substr(0, 3) == "ref" || (nchw_in() && impl.substr(0, 4) != "jit:")) {
      keep = memory::format_tag::undef;
      return create(false);
    }
    if (nchw_in()) {
      ++d_.nchw_input_convs;
    } else {
      ++(keep == memory::format_tag::acdb ? d_.channels_last_grouped_convs : d_.blocked_1x1_convs);
    }
    return p;
  };
  dnnl::convolution_forward::primitive_desc pd;
  bool have_pd = false;
  if (elt_node >= 0) {
    // An activation the convolution kernels cannot apply as a post-op runs as its own step.
    try {
      pd = make_pd(any(dy, act_));
      have_pd = true;
    } catch (const dnnl::error&) {
      elt_node = -1;
      ops = post_ops();
    }
  }
  if (!have_pd) {
    try {
      pd = make_pd(any(dy, act_));
    } catch (const dnnl::error&) {
      if (alg != algorithm::convolution_winograd) throw;
      // oneDNN's Winograd kernels have limits of their own (some paddings and shapes); this
      // convolution is outside them, so it is direct. The summary counts the Winograd ones.
      alg = algorithm::convolution_direct;
      pd = make_pd(any(dy, act_));
    }
  }
  if (alg == algorithm::convolution_winograd) ++d_.winograd_convs;
  if (winograd_shape(group, win)) ++d_.winograd_eligible;
  if (add_node < 0 && mul_node < 0 && elt_node < 0 && shares_winograd_concat_layout(y)) {
    const memory::desc blocked(dy, act_, memory::format_tag::aBcd16b);
    if (pd.dst_desc() != blocked) {
      try {
        pd = make_pd(blocked);
        ++d_.concat_layout_convs;
      } catch (const dnnl::error&) {
        // No kernel writes that layout for this convolution: the Concat copies instead.
      }
    }
  }

  memory dst;
  if (add_node >= 0) {
    TESSERA_ASSIGN_OR_RETURN(memory r, get(residual));
    // Not where the residual is the Conv's own input (y + conv(y)): the kernel would write over
    // pixels it has yet to read.
    bool in_place = residual != x && overwritable(residual, index, add_node);
    if (in_place && r.get_desc() != pd.dst_desc()) {
      try {
        pd = make_pd(r.get_desc());
      } catch (const dnnl::error&) {
        in_place = false;  // keep the preferred layout and copy the residual instead
      }
    }
    if (in_place) {
      dst = r;
      ++d_.in_place_sums;
    } else {
      dst = fresh(pd.dst_desc());
      TESSERA_RETURN_IF_ERROR(add_reorder(r, dst, n.name()));
    }
    ++d_.fused_sums;
  } else {
    dst = fresh(pd.dst_desc());
  }
  TESSERA_ASSIGN_OR_RETURN(memory src, as(x, pd.src_desc()));
  TESSERA_ASSIGN_OR_RETURN(
      memory weights,
      weights_as(w, wdims, pd.weights_desc(), alg == algorithm::convolution_winograd));
  std::vector<std::pair<int, memory>> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (b >= 0) {
    TESSERA_ASSIGN_OR_RETURN(memory bias, plain_view(b, {dw[0]}, dt::f32));
    args.push_back({DNNL_ARG_BIAS, bias});
  }
  args.push_back({DNNL_ARG_DST, dst});
  add_step(pd, dnnl::convolution_forward(pd), args, "conv", n.name());
  if (host_silu) add_host_silu(&d_.steps.back(), dst, mul_node);
  if (nchw_in()) {
    // aBcd16b with 16 channels, seen as the channels-last tensor it also is.
    dst =
        wrap(memory::desc(dy, act_, memory::format_tag::acdb), dst.get_data_handle(), arg_of(dst));
  }
  if (add_node >= 0) {
    done_[static_cast<size_t>(add_node)] = true;
    set(add_out, dst);
    set(y, dst, true);  // y itself is never read again
  } else if (mul_node >= 0) {
    fused_silu(y, sig_node, mul_node, mul_out, dst);
  } else if (elt_node >= 0) {
    done_[static_cast<size_t>(elt_node)] = true;
    ++d_.fused_eltwise;
    set(elt_out, dst);
    set(y, dst, true);  // read only by the fused node
  } else {
    set(y, dst);
  }
  return Status::ok();
}

void Builder::find_silu(int y, const fb::Node& producer, int* sig_node, int* mul_node,
                        int* mul_out) const {
  const Span<const int32_t> ys = view_.consumers(y);
  if (producer.activation() != fb::Activation::None || ys.size() != 2 ||
      view_.value(y).graph_output) {
    return;
  }
  for (int k = 0; k < 2; ++k) {
    const int sn = ys[static_cast<size_t>(k)], mn = ys[static_cast<size_t>(1 - k)];
    const fb::Node& sig = view_.node(static_cast<size_t>(sn));
    const fb::Node& mul = view_.node(static_cast<size_t>(mn));
    if ((sig.op() != fb::OpType::Sigmoid && sig.op() != fb::OpType::HardSigmoid) ||
        mul.op() != fb::OpType::Mul || sig.activation() != fb::Activation::None ||
        done_[static_cast<size_t>(sn)] || done_[static_cast<size_t>(mn)]) {
      continue;
    }
    NodeView sv(view_, sig), mv(view_, mul);
    if (sig.op() == fb::OpType::HardSigmoid) {
      // x * HardSigmoid(x) is HardSwish (as opsets before 14 export it) only with PyTorch's
      // constants, those of oneDNN's eltwise_hardswish.
      const ir::HardSigmoidAttrs a = attrs_of<ir::HardSigmoidAttrs>(sv);
      if (std::fabs(a.alpha - 1.0f / 6.0f) > 1e-6f || a.beta != 0.5f) continue;
    }
    const int s = sv.output(0);
    if (sv.num_inputs() != 1 || sv.input(0) != y || mv.num_inputs() != 2 || s < 0 ||
        view_.value(s).graph_output || view_.consumers(s).size() != 1 ||
        !((mv.input(0) == y && mv.input(1) == s) || (mv.input(0) == s && mv.input(1) == y)) ||
        dims_[static_cast<size_t>(mv.output(0))] != dims_[static_cast<size_t>(y)]) {
      continue;
    }
    *sig_node = sn;
    *mul_node = mn;
    *mul_out = mv.output(0);
    return;
  }
}

Status Builder::lower_matmul(const NodeView& n) {
  const int a = n.input(0), b = n.input(1), y = n.output(0);
  const DimVector& da = dims_[static_cast<size_t>(a)];
  const DimVector& db = dims_[static_cast<size_t>(b)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  dnnl::post_ops ops;
  append_activation(ops, n.node());
  const bool gemm = n.op() == fb::OpType::Gemm;
  const bool weights_path = gemm || (db.size() == 2 && vals_[static_cast<size_t>(b)].constant);
  if (!weights_path) {
    const size_t rank = dy.size();
    TESSERA_ASSIGN_OR_RETURN(memory src, plain_view(a, expand_rank(da, rank), act_));
    TESSERA_ASSIGN_OR_RETURN(memory wei, plain_view(b, expand_rank(db, rank), act_));
    const memory::desc dst_md = plain(dy, act_);
    dnnl::matmul::desc desc(src.get_desc(), wei.get_desc(), dst_md);
    dnnl::matmul::primitive_desc pd(desc, attr(&ops), options_.engine);
    memory dst = fresh(dst_md);
    add_step(pd, dnnl::matmul(pd),
             {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}}, "matmul",
             n.name());
    set(y, dst);
    return Status::ok();
  }
  int64_t trans_a = 0, trans_b = 0;
  float beta = 1.0f;
  if (gemm) {
    const ir::GemmAttrs attrs = attrs_of<ir::GemmAttrs>(n);
    trans_a = attrs.transA;
    trans_b = attrs.transB;
    beta = attrs.beta;
  }
  const int64_t k = gemm ? (trans_a ? da[0] : da[1]) : da.back();
  const int64_t m = numel(da) / k;
  const int64_t cols = trans_b ? db[0] : db[1];
  // A as a row-major [M, K] (or its transpose viewed with strides).
  memory src;
  if (trans_a) {
    TESSERA_ASSIGN_OR_RETURN(memory at, plain_view(a, da, act_));
    src = view(a, at, memory::desc({m, k}, act_, memory::dims{1, m}));
  } else {
    TESSERA_ASSIGN_OR_RETURN(src, plain_view(a, {m, k}, act_));
  }
  const memory::desc dst_md = plain({m, cols}, act_);
  const memory::desc bias_md = plain({1, cols}, dt::f32);
  const int c = gemm ? n.input(2) : -1;
  dnnl::matmul::desc desc =
      c >= 0 ? dnnl::matmul::desc(src.get_desc(), any({k, cols}, act_), bias_md, dst_md)
             : dnnl::matmul::desc(src.get_desc(), any({k, cols}, act_), dst_md);
  dnnl::matmul::primitive_desc pd(desc, attr(&ops), options_.engine);
  TESSERA_ASSIGN_OR_RETURN(memory braw, get(b));
  memory bview = wrap(
      trans_b ? memory::desc({k, cols}, dt::f32, memory::dims{1, k}) : plain({k, cols}, dt::f32),
      braw.get_data_handle(), -1);
  memory weights = fresh(pd.weights_desc());
  reorder_now(bview, weights);
  memory dst = fresh(dst_md);
  dnnl::matmul prim(pd);
  if (c >= 0) {
    TESSERA_ASSIGN_OR_RETURN(memory craw, get(c));
    memory bias = fresh(bias_md);
    const float* from = static_cast<const float*>(craw.get_data_handle());
    float* to = static_cast<float*>(bias.get_data_handle());
    for (int64_t i = 0; i < cols; ++i) to[i] = beta * from[i];
    add_step(pd, prim,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_WEIGHTS, weights},
              {DNNL_ARG_BIAS, bias},
              {DNNL_ARG_DST, dst}},
             "gemm", n.name());
  } else {
    add_step(pd, prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}},
             "matmul", n.name());
  }
  if (dy == DimVector{m, cols}) {
    set(y, dst);
  } else {
    set(y, view(y, dst, plain(dy, act_)), true);
  }
  return Status::ok();
}

Status Builder::lower_pool(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const Window win = read_window(n);
  algorithm alg = algorithm::pooling_max;
  if (n.op() == fb::OpType::AveragePool) {
    const int64_t include = attrs_of<ir::PoolAttrs>(n).count_include_pad;
    alg = include ? algorithm::pooling_avg_include_padding : algorithm::pooling_avg_exclude_padding;
  }
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  dnnl::pooling_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, alg, src.get_desc(),
      any(dims_[static_cast<size_t>(y)], act_), {win.stride[0], win.stride[1]},
      {win.kernel[0], win.kernel[1]}, {win.dilation[0], win.dilation[1]},
      {win.pad_begin[0], win.pad_begin[1]}, {win.pad_end[0], win.pad_end[1]});
  dnnl::pooling_v2_forward::primitive_desc pd(desc, attr(), options_.engine);
  memory dst = fresh(pd.dst_desc());
  add_step(pd, dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, "pool",
           n.name());
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_global_pool(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  const DimVector pooled = {dx[0], dx[1], 1, 1};
  std::optional<OneThread> one;
  if (channels_last_on_one_thread(src.get_desc())) one.emplace(*this);
  dnnl::pooling_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, algorithm::pooling_avg_exclude_padding, src.get_desc(),
      any(pooled, act_), {1, 1}, {dx[2], dx[3]}, {0, 0}, {0, 0}, {0, 0});
  dnnl::pooling_v2_forward::primitive_desc pd(desc, attr(), options_.engine);
  memory dst = fresh(pd.dst_desc());
  add_step(pd, dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, "pool",
           n.name());
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  if (dy == pooled) {
    set(y, dst);
  } else {  // ReduceMean with keepdims=0: [N, C]
    memory p = dst;
    if (!is_plain(p.get_desc())) {
      p = fresh(plain(pooled, act_));
      TESSERA_RETURN_IF_ERROR(add_reorder(dst, p, n.name()));
    }
    set(y, wrap(plain(dy, act_), p.get_data_handle(), -1));
  }
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_binary(const NodeView& n, int index) {
  int a = n.input(0), b = n.input(1);
  const int y = n.output(0);
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const fb::OpType op = n.op();
  const bool commutative = op == fb::OpType::Add || op == fb::OpType::Mul ||
                           op == fb::OpType::Min || op == fb::OpType::Max;
  if (dims_[static_cast<size_t>(a)] != dy) std::swap(a, b);  // check_node: then commutative
  if (commutative && dims_[static_cast<size_t>(b)] == dy) {
    // Both full: take the layout of the one that is not plain (the producer's choice), and
    // prefer writing over an operand nothing reads later.
    TESSERA_ASSIGN_OR_RETURN(memory ma, get(a));
    TESSERA_ASSIGN_OR_RETURN(memory mb, get(b));
    if ((is_plain(ma.get_desc()) && !is_plain(mb.get_desc())) ||
        (!overwritable(a, index) && overwritable(b, index) && ma.get_desc() == mb.get_desc())) {
      std::swap(a, b);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(memory src0, activation_input(a));  // dims_[a] == dy
  memory src1;
  if (dims_[static_cast<size_t>(b)] == dy) {
    TESSERA_ASSIGN_OR_RETURN(src1, as(b, src0.get_desc()));
  } else {
    TESSERA_ASSIGN_OR_RETURN(
        src1, plain_view(b, expand_rank(dims_[static_cast<size_t>(b)], dy.size()), act_));
  }
  algorithm alg = algorithm::binary_add;
  switch (op) {
    case fb::OpType::Sub:
      alg = algorithm::binary_sub;
      break;
    case fb::OpType::Mul:
      alg = algorithm::binary_mul;
      break;
    case fb::OpType::Div:
      alg = algorithm::binary_div;
      break;
    case fb::OpType::Min:
      alg = algorithm::binary_min;
      break;
    case fb::OpType::Max:
      alg = algorithm::binary_max;
      break;
    default:
      break;
  }
  dnnl::post_ops ops;
  append_activation(ops, n.node());
  std::optional<OneThread> one;
  if (dims_[static_cast<size_t>(b)] != dy && channels_last_on_one_thread(src0.get_desc())) {
    one.emplace(*this);
  }
  dnnl::binary::desc desc(alg, src0.get_desc(), src1.get_desc(), src0.get_desc());
  dnnl::binary::primitive_desc pd(desc, attr(&ops), options_.engine);
  auto is_ref = [](const dnnl::binary::primitive_desc& p) {
    return std::string_view(p.impl_info_str()).substr(0, 3) == "ref";
  };
  if (is_ref(pd) && dims_[static_cast<size_t>(b)] != dy && dy.size() == 4) {
    // A broadcast operand (a squeeze-excitation scale, [N, C, 1, 1]) next to a src0 in a layout
    // oneDNN's optimised binary kernels do not take (aBcd8b on an AVX-512 machine) gets its
    // reference kernel, tens of times slower. Try the operand viewed in other layouts (its bytes
    // read the same when unpadded), then src0 reordered to channels-last as well.
    const memory::format_tag tags[] = {memory::format_tag::acdb, memory::format_tag::aBcd8b,
                                       memory::format_tag::aBcd16b};
    auto try_src1 = [&](const memory::desc& s0) -> bool {
      for (const memory::format_tag tag : tags) {
        const memory::desc md(src1.get_desc().dims(), src1.get_desc().data_type(), tag);
        if (md.get_size() != src1.get_desc().get_size() || !same_bytes(md, src1.get_desc())) {
          continue;
        }
        dnnl::binary::primitive_desc p2(dnnl::binary::desc(alg, s0, md, s0), attr(&ops),
                                        options_.engine);
        if (is_ref(p2)) continue;
        src1 = view(b, src1, md);
        pd = p2;
        return true;
      }
      return false;
    };
    if (!try_src1(src0.get_desc())) {
      const memory::desc nhwc(dy, act_, memory::format_tag::acdb);
      dnnl::binary::primitive_desc p2(dnnl::binary::desc(alg, nhwc, src1.get_desc(), nhwc),
                                      attr(&ops), options_.engine);
      if (!is_ref(p2) || try_src1(nhwc)) {
        if (!is_ref(p2)) pd = p2;
        TESSERA_ASSIGN_OR_RETURN(src0, as(a, nhwc));
      }
    }
  }
  const bool in_place = src0 == vals_[static_cast<size_t>(a)].mem && overwritable(a, index);
  memory dst = in_place ? src0 : fresh(src0.get_desc());
  add_step(pd, dnnl::binary(pd),
           {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}}, "binary",
           n.name());
  set(y, dst);
  return Status::ok();
}

Status Builder::lower_eltwise(const NodeView& n, int index) {
  const int x = n.input(0), y = n.output(0);
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  const bool in_place = src == vals_[static_cast<size_t>(x)].mem && overwritable(x, index);
  memory dst = in_place ? src : fresh(src.get_desc());
  auto run = [&](algorithm alg, float alpha, float beta, const memory& from) {
    dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, alg, from.get_desc(),
                                     alpha, beta);
    dnnl::eltwise_forward::primitive_desc pd(desc, attr(), options_.engine);
    add_step(pd, dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, dst}}, "eltwise",
             n.name());
  };
  if (n.op() == fb::OpType::HardSigmoid) {
    const ir::HardSigmoidAttrs attrs = attrs_of<ir::HardSigmoidAttrs>(n);
    run(algorithm::eltwise_linear, attrs.alpha, attrs.beta, src);
    run(algorithm::eltwise_clip, 0.0f, 1.0f, dst);
  } else {
    EltwiseSpec s;
    eltwise_of(n, &s);
    run(static_cast<algorithm>(s.algorithm), s.alpha, s.beta, src);
  }
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_softmax(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const int64_t axis = normalized_axis(attrs_of<ir::SoftmaxAttrs>(n).axis, dx.size());
  TESSERA_ASSIGN_OR_RETURN(memory src, plain_view(x, dx, act_));
  dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, src.get_desc(),
                                   static_cast<int>(axis));
  dnnl::softmax_forward::primitive_desc pd(desc, attr(), options_.engine);
  memory dst = fresh(src.get_desc());
  add_step(pd, dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, "softmax",
           n.name());
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

bool Builder::shares_winograd_concat_layout(int y) const {
  const Span<const int32_t> ys = view_.consumers(y);
  if (ys.size() != 1 || view_.value(y).graph_output) return false;
  const fb::Node& c = view_.node(static_cast<size_t>(ys[0]));
  if (c.op() != fb::OpType::Concat) return false;
  NodeView cv(view_, c);
  const DimVector& dc = dims_[static_cast<size_t>(cv.output(0))];
  if (dc.size() != 4 || dc[0] != 1 ||
      normalized_axis(attrs_of<ir::ConcatAttrs>(cv).axis, dc.size()) != 1) {
    return false;
  }
  bool winograd = false;
  for (int i = 0; i < cv.num_inputs(); ++i) {
    const int v = cv.input(i);
    if (v < 0 || dims_[static_cast<size_t>(v)][1] % 16 != 0) return false;  // blocks of 16
    const int32_t p = view_.value(v).producer;
    if (p < 0) return false;
    const fb::Node& pn = view_.node(static_cast<size_t>(p));
    if (pn.op() != fb::OpType::Conv) continue;
    NodeView pv(view_, pn);
    if (use_winograd(dims_[static_cast<size_t>(pv.input(1))], dims_[static_cast<size_t>(v)],
                     attrs_of<ir::ConvAttrs>(pv).group, read_window(pv))) {
      winograd = true;
    }
  }
  return winograd;
}

Status Builder::lower_concat(const NodeView& n, int index) {
  const int y = n.output(0);
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const int64_t axis = normalized_axis(attrs_of<ir::ConcatAttrs>(n).axis, dy.size());
  TESSERA_ASSIGN_OR_RETURN(bool shuffled, lower_concat_into_shuffle(n, axis));
  if (shuffled) return Status::ok();
  TESSERA_ASSIGN_OR_RETURN(bool chained, lower_concat_in_chain(n, index, axis));
  if (chained) return Status::ok();
  std::vector<memory> srcs;
  std::vector<memory::desc> mds;
  // Same layout for every part: the first part's when all share it, else row-major.
  bool same = true;
  for (int i = 0; i < n.num_inputs(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(memory m, get(n.input(i)));
    srcs.push_back(m);
    if (m.get_desc().data_type() != act_ || vals_[static_cast<size_t>(n.input(i))].constant) {
      same = false;
    }
  }
  for (size_t i = 0; i < srcs.size() && same; ++i) {
    memory::desc md = srcs[i].get_desc();
    if (is_plain(md) != is_plain(srcs[0].get_desc())) same = false;
    if (!is_plain(md)) {
      // Blocked parts must keep the same format: compare with the first part's strides pattern.
      const dnnl_memory_desc_t& a = md.data;
      const dnnl_memory_desc_t& b = srcs[0].get_desc().data;
      if (a.format_desc.blocking.inner_nblks != b.format_desc.blocking.inner_nblks) same = false;
      for (int k = 0; same && k < a.format_desc.blocking.inner_nblks; ++k) {
        if (a.format_desc.blocking.inner_blks[k] != b.format_desc.blocking.inner_blks[k] ||
            a.format_desc.blocking.inner_idxs[k] != b.format_desc.blocking.inner_idxs[k]) {
          same = false;
        }
      }
      // Padded channel blocks along the concat axis would leave holes.
      if (a.padded_dims[axis] != a.dims[axis]) same = false;
    }
  }
  if (!same) {
    for (int i = 0; i < n.num_inputs(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(
          srcs[static_cast<size_t>(i)],
          plain_view(n.input(i), dims_[static_cast<size_t>(n.input(i))], act_));
    }
  }
  for (const memory& m : srcs) mds.push_back(m.get_desc());
  dnnl::concat::primitive_desc pd(static_cast<int>(axis), mds, options_.engine, attr());
  memory dst = fresh(pd.dst_desc());
  if (place_parts_in(n, index, srcs, axis, dst)) {
    ++d_.copy_free_concats;
    set(y, dst);
    add_activation_step(n.node(), y, n.name());
    return Status::ok();
  }
  Step s;
  s.primitive = dnnl::concat(pd);
  for (size_t i = 0; i < srcs.size(); ++i) {
    s.args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), srcs[i].get()});
  }
  s.args.push_back({DNNL_ARG_DST, dst.get()});
  std::snprintf(s.name.data(), s.name.size(), "concat:%.*s", static_cast<int>(n.name().size()),
                n.name().data());
  s.impl = pd.impl_info_str();
  s.scratchpad = pd.scratchpad_desc();
  s.threads = step_threads_;
  d_.steps.push_back(std::move(s));
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

// The strides of `md` when it is a strided layout without blocks, padding or offset (plain,
// channels-last, ...); empty otherwise.
memory::dims strided_layout(const memory::desc& md) {
  const dnnl_memory_desc_t& c = md.data;
  if (c.format_kind != dnnl_blocked || c.format_desc.blocking.inner_nblks != 0 || c.offset0 != 0) {
    return {};
  }
  for (int d = 0; d < c.ndims; ++d) {
    if (c.padded_dims[d] != c.dims[d] || c.padded_offsets[d] != 0) return {};
  }
  return memory::dims(c.format_desc.blocking.strides, c.format_desc.blocking.strides + c.ndims);
}

// A Concat of g equal parts along the channels whose only reader is a ChannelShuffle of group g
// (ShuffleNet: Concat, then the channel shuffle): part i lands on output channels i, g + i,
// 2g + i, ..., so each part is one reorder, from whatever layout it is in, into a strided view of
// the shuffle's output (channels-last when 4-D, else row-major); the Concat's own output is never
// built and the shuffle node is done. Returns false (nothing done) where that does not hold.
Result<bool> Builder::lower_concat_into_shuffle(const NodeView& n, int64_t axis) {
  const int y = n.output(0);
  const Span<const int32_t> readers = view_.consumers(y);
  if (axis != 1 || readers.size() != 1 || view_.value(y).graph_output ||
      n.node().activation() != fb::Activation::None) {
    return false;
  }
  const size_t k = static_cast<size_t>(readers[0]);
  const fb::Node& shuffle = view_.node(k);
  if (shuffle.op() != fb::OpType::ChannelShuffle || done_[k]) return false;
  const NodeView sv(view_, shuffle);
  if (!check_node(sv).is_ok() || sv.input(0) != y) return false;
  const int64_t group = attrs_of<ir::ChannelShuffleAttrs>(sv).group;
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  if (group != n.num_inputs() || dy.size() < 2 || dy[1] % group != 0) return false;
  DimVector part_dims = dy;
  part_dims[1] = dy[1] / group;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int v = n.input(i);
    if (v < 0 || dims_[static_cast<size_t>(v)] != part_dims) return false;
  }
  const int out = sv.output(0);
  // The output channels-last when 4-D: what the convolutions after it read (ShuffleNetV2's
  // Slices keep it too), so that no reorder to it follows.
  const memory::desc out_md =
      dy.size() == 4 ? memory::desc(dy, act_, memory::format_tag::acdb) : plain(dy, act_);
  const memory::dims p = strided_layout(out_md);
  memory::dims strides = p;
  strides[1] = group * p[1];
  memory dst = fresh(out_md);
  for (int i = 0; i < n.num_inputs(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(n.input(i)));
    memory::desc md(part_dims, act_, strides);
    md.data.offset0 = i * p[1];
    TESSERA_RETURN_IF_ERROR(add_reorder(src, wrap(md, dst.get_data_handle(), -1), sv.name()));
  }
  set(out, dst);
  done_[k] = true;
  add_activation_step(shuffle, out, sv.name());
  return true;
}

// A Concat without copies: when every part is a buffer of its own that nothing reads after the
// Concat, and its region of the output has the part's layout (the axis outermost among the dims
// longer than 1, e.g. channels at batch 1 in a plain or channel-blocked layout), the part's
// buffer moves into that region: every step that writes or reads the part then works in place
// in the output, and no concat step runs.
bool Builder::place_parts_in(const NodeView& n, int index, const std::vector<memory>& parts,
                             int64_t axis, memory& dst) {
  std::vector<BufferMove> moves;
  memory::dims offsets(dst.get_desc().dims().size(), 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    const int v = n.input(static_cast<int>(i));
    if (!overwritable(v, index)) return false;
    const memory::desc md = parts[i].get_desc();
    const auto* base = static_cast<const uint8_t*>(parts[i].get_data_handle());
    size_t owned = owned_.size();
    for (size_t b = 0; b < owned_.size(); ++b) {
      if (owned_[b].base == base && owned_[b].size == md.get_size() && !owned_[b].pinned) owned = b;
    }
    if (owned == owned_.size() || arg_of(parts[i]) >= 0 || is_chain_buffer(base)) return false;
    for (const BufferMove& m : moves) {
      if (m.owned == owned) return false;  // the same buffer twice
    }
    const int64_t offset = region_offset(dst.get_desc(), md, offsets);
    if (offset < 0) return false;
    moves.push_back({owned, static_cast<size_t>(offset)});
    offsets[static_cast<size_t>(axis)] += md.dims()[static_cast<size_t>(axis)];
  }
  move_buffers(moves, static_cast<uint8_t*>(dst.get_data_handle()));
  return true;
}

void Builder::move_buffers(const std::vector<BufferMove>& moves, uint8_t* to) {
  // New handles first (views into a moved buffer move with it), then apply them: moving a
  // buffer's owning memory frees its allocation.
  std::vector<std::pair<memory, void*>> handles;
  for (memory& m : d_.memories) {
    const auto* h = static_cast<const uint8_t*>(m.get_data_handle());
    for (const BufferMove& mv : moves) {
      const OwnedBuffer& b = owned_[mv.owned];
      if (h != nullptr && h >= b.base && h < b.base + b.size) {
        handles.push_back({m, to + mv.offset + (h - b.base)});
      }
    }
  }
  for (auto& [m, h] : handles) m.set_data_handle(h);
  // The moved buffers are gone: plan_arena must not look for them.
  for (const BufferMove& mv : moves) {
    release_large(owned_[mv.owned].base);
    owned_[mv.owned].size = 0;
  }
}

// A chain of Concats that each extend the one before (a DenseNet block: Concat(x0, y1),
// Concat(x0, y1, y2), ...; every layer's output is read by every later Concat) shares one
// row-major buffer sized for the chain's last Concat: each part is placed once, at its channel
// offset, and each Concat's output is a view of the buffer's first channels (contiguous at batch
// 1 in a row-major layout). Returns false (nothing done) where that does not hold.
Result<bool> Builder::lower_concat_in_chain(const NodeView& n, int index, int64_t axis) {
  const int y = n.output(0);
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  if (n.num_inputs() < 1 || axis != 1 || dy.size() < 2 || dy[0] != 1) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int v = n.input(i);
    if (v < 0 || vals_[static_cast<size_t>(v)].constant || vals_[static_cast<size_t>(v)].arg >= 0 ||
        dims_[static_cast<size_t>(v)].size() != dy.size()) {
      return false;
    }
  }
  // The chain's buffer: the one the first part already sits at the start of, or a new one
  // when a later Concat extends this one.
  // (Looked up without converting anything: a part that is not row-major yet is in no chain,
  // and a Concat that turns out not to be one must not leave a reorder behind.)
  const ConcatChain* chain = nullptr;
  {
    const Val& v0 = vals_[static_cast<size_t>(n.input(0))];
    const DimVector& d0 = dims_[static_cast<size_t>(n.input(0))];
    std::vector<memory> forms{v0.mem};
    forms.insert(forms.end(), v0.converted.begin(), v0.converted.end());
    for (const memory& f : forms) {
      if (!f) continue;
      for (const ConcatChain& c : chains_) {
        if (c.base == static_cast<const uint8_t*>(f.get_data_handle()) &&
            f.get_desc() == memory::desc(d0, act_, c.tag)) {
          chain = &c;
        }
      }
    }
  }
  auto whole_blocks = [&]() {
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (dims_[static_cast<size_t>(n.input(i))][1] % 16 != 0) return false;
    }
    return true;
  };
  if (chain != nullptr && chain->tag != memory::format_tag::abcd && !whole_blocks()) {
    return false;  // a part that does not fill whole blocks of the chain's layout: it copies
  }
  if (chain == nullptr) {
    // New chain: the most channels any later Concat that extends this one's inputs gathers.
    const Span<const int32_t> ins = view_.node_inputs(static_cast<size_t>(index));
    int64_t channels = 0;
    for (size_t k = static_cast<size_t>(index) + 1; k < view_.num_nodes(); ++k) {
      const fb::Node& other = view_.node(k);
      if (other.op() != fb::OpType::Concat) continue;
      const Span<const int32_t> oins = view_.node_inputs(k);
      if (oins.size() <= ins.size() || !std::equal(ins.begin(), ins.end(), oins.begin())) continue;
      NodeView on(view_, other);
      if (normalized_axis(attrs_of<ir::ConcatAttrs>(on).axis, dy.size()) != 1) continue;
      const DimVector& od = dims_[static_cast<size_t>(on.output(0))];
      if (od.size() != dy.size() || !std::equal(od.begin() + 2, od.end(), dy.begin() + 2)) continue;
      channels = std::max<int64_t>(channels, od[1]);
    }
    if (channels <= dy[1]) return false;  // nothing extends it: the single-Concat path
    DimVector whole = dy;
    whole[1] = channels;
    // Channel-blocked by 16 when every part so far and the widest Concat allow it (DenseNet:
    // 64 + 32 k channels): at batch 1 a prefix of whole blocks is itself a dense aBcd16b
    // tensor, so each Concat is still a view of the buffer's start, and the Winograd 3x3
    // Convs (aBcd16b) write their part in place instead of through a reorder to row-major.
    const bool blocked = channels % 16 == 0 && dy.size() == 4 && !options_.bf16 && whole_blocks();
    const memory::format_tag tag = blocked ? memory::format_tag::aBcd16b : memory::format_tag::abcd;
    memory big = fresh(memory::desc(whole, act_, tag));
    chains_.push_back(
        {static_cast<const uint8_t*>(big.get_data_handle()), big.get_desc().get_size(), big, tag});
    if (blocked) ++d_.blocked_concat_chains;
    chain = &chains_.back();
  }
  // Each part at its offset: already there, or moved there (its own buffer, not pinned).
  const size_t elem = memory::data_type_size(act_);
  int64_t inner = 1;
  for (size_t d = 2; d < dy.size(); ++d) inner *= dy[d];
  size_t offset = 0;
  std::vector<BufferMove> moves;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const int v = n.input(i);
    TESSERA_ASSIGN_OR_RETURN(memory part,
                             as(v, memory::desc(dims_[static_cast<size_t>(v)], act_, chain->tag)));
    const size_t bytes = static_cast<size_t>(dims_[static_cast<size_t>(v)][1] * inner) * elem;
    if (offset + bytes > chain->size) return false;
    const uint8_t* h = static_cast<const uint8_t*>(part.get_data_handle());
    if (h != chain->base + offset) {
      size_t owned = owned_.size();
      for (size_t b = 0; b < owned_.size(); ++b) {
        if (owned_[b].base == h && owned_[b].size == bytes && !owned_[b].pinned) owned = b;
      }
      if (owned == owned_.size() || arg_of(part) >= 0 || is_chain_buffer(h)) return false;
      for (const BufferMove& m : moves) {
        if (m.owned == owned) return false;
      }
      moves.push_back({owned, static_cast<size_t>(offset)});
    }
    offset += bytes;
  }
  // A part's bytes are under this and later Concats' outputs: never written in place again.
  for (int i = 0; i < n.num_inputs(); ++i) vals_[static_cast<size_t>(n.input(i))].shared = true;
  uint8_t* base = static_cast<uint8_t*>(chain->buffer.get_data_handle());
  move_buffers(moves, base);
  // The output: the first `offset` bytes, in the chain's layout; never written in place (later
  // Concats of the chain read the parts under it).
  memory out = wrap(memory::desc(dy, act_, chain->tag), base, -1);
  ++d_.copy_free_concats;
  set(y, out, true);
  add_activation_step(n.node(), y, n.name());
  return true;
}

Status Builder::lower_reshape(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const dt type = vals_[static_cast<size_t>(x)].arg >= 0 ? dt::f32 : act_;
  TESSERA_ASSIGN_OR_RETURN(memory m, plain_view(x, dims_[static_cast<size_t>(x)], type));
  set(y, view(x, m, plain(dims_[static_cast<size_t>(y)], type)), true);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_transpose(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const Span<const int64_t> declared = attrs_of<ir::TransposeAttrs>(n).perm;
  std::vector<int64_t> perm(declared.begin(), declared.end());
  if (perm.empty()) {
    for (size_t i = dx.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  TESSERA_ASSIGN_OR_RETURN(memory m, plain_view(x, dx, act_));
  const memory::dims in_strides = strides_of(dx);
  memory::dims strides(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) strides[i] = in_strides[static_cast<size_t>(perm[i])];
  memory src = view(x, m, memory::desc(dy, act_, strides));
  memory dst = fresh(plain(dy, act_));
  TESSERA_RETURN_IF_ERROR(add_reorder(src, dst, n.name()));
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

// ChannelShuffle with `group` g: output channel j*g + i is input channel i*(C/g) + j. An input
// in a strided layout (plain or channels-last, as the producer left it) is one reorder into a
// row-major output, between two views of the channel axis as [C/g, g]: the input's read with
// strides (s_c, (C/g)*s_c), the output's written with (g*p_c, p_c); the shuffle and the layout
// change the consumers (Slice, Reshape) need are the same pass. A blocked layout runs oneDNN's
// shuffle_forward, whose group_size is C/g (it reads the axis as [C/group_size, group_size] and
// transposes it); a layout no shuffle implementation takes is reordered to plain once.
Status Builder::lower_shuffle(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const int64_t group = attrs_of<ir::ChannelShuffleAttrs>(n).group;
  const int64_t per_group = dx[1] / group;
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  const memory::dims s = strided_layout(src.get_desc());
  if (!s.empty()) {
    const memory::dims p = strides_of(dx);
    memory::dims dims = {dx[0], per_group, group};
    memory::dims from = {s[0], s[1], per_group * s[1]};
    memory::dims to = {p[0], group * p[1], p[1]};
    for (size_t d = 2; d < dx.size(); ++d) {
      dims.push_back(dx[d]);
      from.push_back(s[d]);
      to.push_back(p[d]);
    }
    const dt type = src.get_desc().data_type();
    memory dst = fresh(plain(dx, type));
    memory in = view(x, src, memory::desc(dims, type, from));
    memory out = wrap(memory::desc(dims, type, to), dst.get_data_handle(), -1);
    TESSERA_RETURN_IF_ERROR(add_reorder(in, out, n.name()));
    set(y, dst);
    add_activation_step(n.node(), y, n.name());
    return Status::ok();
  }
  dnnl::shuffle_forward::primitive_desc pd;
  for (int attempt = 0; attempt < 2 && !pd; ++attempt) {
    if (attempt == 1) {
      TESSERA_ASSIGN_OR_RETURN(src, plain_view(x, dx, act_));
    }
    dnnl::shuffle_forward::desc desc(dnnl::prop_kind::forward_inference, src.get_desc(), 1,
                                     static_cast<int>(per_group));
    pd = dnnl::shuffle_forward::primitive_desc(desc, options_.engine, attr(),
                                               /*allow_empty=*/true);
  }
  if (!pd) {
    return Status::error(Error::NotSupported,
                         "onednn: ChannelShuffle node '%.*s': no shuffle implementation for "
                         "this shape",
                         static_cast<int>(n.name().size()), n.name().data());
  }
  memory dst = fresh(pd.dst_desc());
  add_step(pd, dnnl::shuffle_forward(pd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}, "shuffle",
           n.name());
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_layer_norm(const NodeView& n) {
  const int x = n.input(0), scale = n.input(1), bias = n.input(2), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const ir::LayerNormalizationAttrs attrs = attrs_of<ir::LayerNormalizationAttrs>(n);
  const int64_t axis = normalized_axis(attrs.axis, dx.size());
  const float epsilon = attrs.epsilon;
  // Row-major X viewed as [outer, normalized]: oneDNN normalizes over the last dim.
  const DimVector norm(dx.begin() + axis, dx.end());
  const int64_t inner = numel(norm);
  const DimVector rows = {numel(dx) / inner, inner};
  TESSERA_ASSIGN_OR_RETURN(memory src, plain_view(x, rows, act_));
  memory dst = fresh(plain(dx, act_));
  memory dst_rows = wrap(plain(rows, act_), dst.get_data_handle(), -1);
  TESSERA_ASSIGN_OR_RETURN(memory gamma, broadcast_constant(scale, norm));
  memory beta;
  auto flags = dnnl::normalization_flags::use_scale;
  if (bias >= 0) {
    TESSERA_ASSIGN_OR_RETURN(beta, broadcast_constant(bias, norm));
    flags |= dnnl::normalization_flags::use_shift;
  }
  dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, src.get_desc(),
                                               epsilon, flags);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, attr(), options_.engine);
  gamma = wrap(plain({inner}, dt::f32), gamma.get_data_handle(), -1);
  dnnl::layer_normalization_forward prim(pd);
  if (bias >= 0) {
    beta = wrap(plain({inner}, dt::f32), beta.get_data_handle(), -1);
    add_step(pd, prim,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_SCALE, gamma},
              {DNNL_ARG_SHIFT, beta},
              {DNNL_ARG_DST, dst_rows}},
             "layer_norm", n.name());
  } else {
    add_step(pd, prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_SCALE, gamma}, {DNNL_ARG_DST, dst_rows}},
             "layer_norm", n.name());
  }
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_conv_transpose(const NodeView& n) {
  const int x = n.input(0), w = n.input(1), b = n.input(2), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dw = dims_[static_cast<size_t>(w)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const int64_t group = attrs_of<ir::ConvTransposeAttrs>(n).group;
  DeconvWindow win;
  const char* why = nullptr;
  read_deconv_window(n, &win, &why);  // check_node passed
  const size_t sp = static_cast<size_t>(win.spatial);
  const DimVector kernel(dw.begin() + 2, dw.end());
  const int64_t kvol = numel(kernel);
  const int64_t cin_g = dx[1] / group, cout_g = dw[1], cout = cout_g * group;
  // ONNX weights [Cin, Cout/g, k...] = [g, Cin/g, Cout/g, k...] row-major; oneDNN wants the
  // logical order [(g,) Cout/g, Cin/g, k...]: the same bytes with swapped strides.
  const memory::dims kstrides = strides_of(kernel);
  DimVector wdims, wstrides;
  if (group > 1) {
    wdims = {group, cout_g, cin_g};
    wstrides = {cin_g * cout_g * kvol, kvol, cout_g * kvol};
  } else {
    wdims = {cout_g, cin_g};
    wstrides = {kvol, cout_g * kvol};
  }
  wdims.insert(wdims.end(), kernel.begin(), kernel.end());
  wstrides.insert(wstrides.end(), kstrides.begin(), kstrides.end());

  dnnl::post_ops ops;
  append_activation(ops, n.node());
  const memory::dims strides(win.stride, win.stride + sp);
  const memory::dims dilation(win.dilation, win.dilation + sp);
  const memory::dims pad_l(win.pad_begin, win.pad_begin + sp);
  const memory::dims pad_r(win.pad_end, win.pad_end + sp);
  const memory::desc bias_md = b >= 0 ? plain({cout}, dt::f32) : memory::desc();
  dnnl::deconvolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, algorithm::deconvolution_direct, any(dx, act_),
      any(wdims, act_), bias_md, any(dy, act_), strides, dilation, pad_l, pad_r);
  dnnl::deconvolution_forward::primitive_desc pd(desc, attr(&ops), options_.engine);
  TESSERA_ASSIGN_OR_RETURN(memory src, as(x, pd.src_desc()));
  // Weights reordered once, now.
  TESSERA_ASSIGN_OR_RETURN(memory wplain, get(w));
  memory wview = wrap(memory::desc(wdims, dt::f32, wstrides), wplain.get_data_handle(), -1);
  memory weights = fresh(pd.weights_desc());
  reorder_now(wview, weights);
  memory dst = fresh(pd.dst_desc());
  dnnl::deconvolution_forward prim(pd);
  if (b >= 0) {
    TESSERA_ASSIGN_OR_RETURN(memory bias, plain_view(b, {cout}, dt::f32));
    add_step(pd, prim,
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_WEIGHTS, weights},
              {DNNL_ARG_BIAS, bias},
              {DNNL_ARG_DST, dst}},
             "deconv", n.name());
  } else {
    add_step(pd, prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}},
             "deconv", n.name());
  }
  set(y, dst);
  return Status::ok();
}

Status Builder::lower_slice(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  SliceSpec spec;
  const char* why = nullptr;
  read_slice(n, &spec, &why);  // check_node passed
  // A window of unit steps out of a 4-D X in channels-last or a channel-blocked layout (a split
  // into channel halves, ShuffleNetV2's): copied out in X's own layout, with no row-major copy
  // of X first. ShuffleNetV2 on one thread spent 0.59 ms of its 3.2 ms in reorders, the one
  // ahead of each block's two Slices among them.
  {
    TESSERA_ASSIGN_OR_RETURN(memory m, get(x));
    const memory::desc& md = m.get_desc();
    const bool unit =
        std::all_of(spec.step.begin(), spec.step.end(), [](int64_t k) { return k == 1; });
    if (unit && dx.size() == 4 && md.data_type() == act_ &&
        !vals_[static_cast<size_t>(x)].constant) {
      for (const memory::format_tag tag :
           {memory::format_tag::acdb, memory::format_tag::aBcd16b, memory::format_tag::aBcd8b}) {
        if (md != memory::desc(dx, act_, tag)) continue;
        const memory::desc sub = md.submemory_desc(spec.size, spec.start, /*allow_empty=*/true);
        if (sub.is_zero()) break;  // a window across a channel block: as below
        memory dst = fresh(memory::desc(spec.size, act_, tag));
        TESSERA_RETURN_IF_ERROR(add_reorder(view(x, m, sub), dst, n.name()));
        set(y, dst);
        add_activation_step(n.node(), y, n.name());
        return Status::ok();
      }
    }
  }
  // The window as a strided view of row-major X (offset to its first element), copied out.
  TESSERA_ASSIGN_OR_RETURN(memory m, plain_view(x, dx, act_));
  const memory::dims in_strides = strides_of(dx);
  memory::dims strides(dx.size());
  int64_t offset = 0;
  for (size_t d = 0; d < dx.size(); ++d) {
    strides[d] = in_strides[d] * spec.step[d];
    offset += spec.start[d] * in_strides[d];
  }
  // Set on a row-major desc directly: dnnl_memory_desc_init_by_strides rejects strides whose
  // extents interleave (a step on an inner dim), although the elements never overlap.
  memory::desc md = plain(spec.size, act_);
  for (size_t d = 0; d < dx.size(); ++d) md.data.format_desc.blocking.strides[d] = strides[d];
  md.data.offset0 = offset;
  memory src = view(x, m, md);
  memory dst = fresh(plain(spec.size, act_));
  TESSERA_RETURN_IF_ERROR(add_reorder(src, dst, n.name()));
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_split(const NodeView& n) {
  const int x = n.input(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const int64_t axis = normalized_axis(attrs_of<ir::SplitAttrs>(n).axis, dx.size());
  // Each part is a sub-memory of X in X's own layout when oneDNN can describe it (no blocking
  // across the split), else of a row-major copy; each is copied out by a reorder.
  TESSERA_ASSIGN_OR_RETURN(memory m, get(x));
  const bool keep = m.get_desc().data_type() == act_ && !vals_[static_cast<size_t>(x)].constant;
  memory::dims offsets(dx.size(), 0);
  std::vector<memory::desc> parts;
  for (int i = 0; i < n.num_outputs() && keep; ++i) {
    const DimVector& dy = dims_[static_cast<size_t>(n.output(i))];
    memory::desc sub = m.get_desc().submemory_desc(dy, offsets, /*allow_empty=*/true);
    if (sub.is_zero()) break;
    parts.push_back(sub);
    offsets[static_cast<size_t>(axis)] += dy[static_cast<size_t>(axis)];
  }
  if (parts.size() != static_cast<size_t>(n.num_outputs())) {
    TESSERA_ASSIGN_OR_RETURN(m, plain_view(x, dx, act_));
    parts.clear();
    offsets.assign(dx.size(), 0);
    for (int i = 0; i < n.num_outputs(); ++i) {
      const DimVector& dy = dims_[static_cast<size_t>(n.output(i))];
      parts.push_back(m.get_desc().submemory_desc(dy, offsets));
      offsets[static_cast<size_t>(axis)] += dy[static_cast<size_t>(axis)];
    }
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    const int y = n.output(i);
    memory src = view(x, m, parts[static_cast<size_t>(i)]);
    memory dst = fresh(plain(dims_[static_cast<size_t>(y)], act_));
    TESSERA_RETURN_IF_ERROR(add_reorder(src, dst, n.name()));
    set(y, dst);
  }
  add_activation_step(n.node(), n.output(0), n.name());
  return Status::ok();
}

Status Builder::lower_pad(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const DimVector& dy = dims_[static_cast<size_t>(y)];
  const float value = attrs_of<ir::PadAttrs>(n).value;
  DimVector begin, end;
  const char* why = nullptr;
  read_pads(n, &begin, &end, &why);  // check_node passed
  // The destination holds the pad value from init on; each execute copies X into its interior.
  // Marked shared below, so no later step overwrites it in place.
  // Pinned: steps only write its interior, so it must keep its border out of the shared arena.
  memory dst = fresh_pinned(plain(dy, act_));
  memory filled = act_ == dt::f32 ? dst : fresh(plain(dy, dt::f32));
  float* data = static_cast<float*>(filled.get_data_handle());
  std::fill(data, data + numel(dy), value);
  if (filled != dst) {
    reorder_now(filled, dst);
  }
  TESSERA_ASSIGN_OR_RETURN(memory src, get(x));
  memory inner = wrap(dst.get_desc().submemory_desc(dx, begin), dst.get_data_handle(), -1);
  TESSERA_RETURN_IF_ERROR(add_reorder(src, inner, n.name()));
  set(y, dst, /*shared=*/true);
  add_activation_step(n.node(), y, n.name());  // Relu/Clip: idempotent on the border
  return Status::ok();
}

Status Builder::lower_prelu(const NodeView& n) {
  const int x = n.input(0), slope = n.input(1), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  TESSERA_ASSIGN_OR_RETURN(
      memory weights,
      plain_view(slope, expand_rank(dims_[static_cast<size_t>(slope)], dx.size()), act_));
  auto make_pd = [&](const memory::desc& src_md) {
    dnnl::prelu_forward::desc desc(dnnl::prop_kind::forward_inference, src_md, weights.get_desc());
    return dnnl::prelu_forward::primitive_desc(desc, attr(), options_.engine);
  };
  dnnl::prelu_forward::primitive_desc pd;
  try {
    pd = make_pd(src.get_desc());
  } catch (const dnnl::error&) {  // a blocked layout this broadcast has no kernel for
    TESSERA_ASSIGN_OR_RETURN(src, as(x, plain(dx, act_)));
    pd = make_pd(src.get_desc());
  }
  memory dst = fresh(src.get_desc());
  add_step(pd, dnnl::prelu_forward(pd),
           {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}}, "prelu",
           n.name());
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower_batch_norm(const NodeView& n) {
  const int x = n.input(0), y = n.output(0);
  const DimVector& dx = dims_[static_cast<size_t>(x)];
  const float epsilon = attrs_of<ir::BatchNormalizationAttrs>(n).epsilon;
  TESSERA_ASSIGN_OR_RETURN(memory src, activation_input(x));
  const DimVector channels = {dx[1]};
  memory params[4];  // scale, B, mean, var
  for (int i = 0; i < 4; ++i) {
    TESSERA_ASSIGN_OR_RETURN(params[i], plain_view(n.input(i + 1), channels, dt::f32));
  }
  dnnl::batch_normalization_forward::desc desc(
      dnnl::prop_kind::forward_inference, src.get_desc(), epsilon,
      dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
          dnnl::normalization_flags::use_shift);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, attr(), options_.engine);
  memory dst = fresh(pd.dst_desc());
  add_step(pd, dnnl::batch_normalization_forward(pd),
           {{DNNL_ARG_SRC, src},
            {DNNL_ARG_SCALE, params[0]},
            {DNNL_ARG_SHIFT, params[1]},
            {DNNL_ARG_MEAN, params[2]},
            {DNNL_ARG_VARIANCE, params[3]},
            {DNNL_ARG_DST, dst}},
           "batch_norm", n.name());
  set(y, dst);
  add_activation_step(n.node(), y, n.name());
  return Status::ok();
}

Status Builder::lower(int index) {
  const fb::Node* node = &view_.node(static_cast<size_t>(index));
  NodeView n(view_, *node);
  TESSERA_RETURN_IF_ERROR(check_node(n));
  switch (lowering_of(node->op()).lowering) {
    case Lowering::Conv:
      return lower_conv(n, index);
    case Lowering::MatMul:
      return lower_matmul(n);
    case Lowering::Pool:
      return lower_pool(n);
    case Lowering::GlobalPool:
    case Lowering::SpatialMean:
      return lower_global_pool(n);
    case Lowering::Binary:
      return lower_binary(n, index);
    case Lowering::Softmax:
      return lower_softmax(n);
    case Lowering::Concat:
      return lower_concat(n, index);
    case Lowering::Reshape:
      return lower_reshape(n);
    case Lowering::Transpose:
      return lower_transpose(n);
    case Lowering::Shuffle:
      return lower_shuffle(n);
    case Lowering::LayerNorm:
      return lower_layer_norm(n);
    case Lowering::ConvTranspose:
      return lower_conv_transpose(n);
    case Lowering::Slice:
      return lower_slice(n);
    case Lowering::Split:
      return lower_split(n);
    case Lowering::Pad:
      return lower_pad(n);
    case Lowering::PRelu:
      return lower_prelu(n);
    case Lowering::BatchNorm:
      return lower_batch_norm(n);
    case Lowering::Eltwise:
      return lower_eltwise(n, index);
    case Lowering::None:
      break;  // check_node rejects these
  }
  return Status::error(Error::NotSupported, "onednn: %s node '%.*s' is not lowered",
                       fb::EnumNameOpType(node->op()), static_cast<int>(n.name().size()),
                       n.name().data());
}

Status Builder::finish() {
  // Outputs: copied (and converted to fp32 row-major) into the caller's tensors.
  const size_t n_in = d_.num_inputs;
  for (size_t i = 0; i < d_.num_outputs; ++i) {
    const int v = view_.outputs()[i];
    TESSERA_ASSIGN_OR_RETURN(memory src, get(v));
    memory out =
        wrap(plain(dims_[static_cast<size_t>(v)], dt::f32), nullptr, static_cast<int>(n_in + i));
    TESSERA_RETURN_IF_ERROR(add_reorder(src, out, "output"));
  }
  // The activations and each step's scratchpad share the arena (plan_arena()).
  TESSERA_RETURN_IF_ERROR(plan_arena());
  // The constants' pool was sized from an estimate: the pages past what they took go back.
  if (pool_ != kNoPool) d_.large_buffers[pool_].discard_after(pool_used_);
  return Status::ok();
}

// Activation buffers share one arena: each lives from the step that first writes it to the last
// step that touches it, and buffers whose lifetimes do not overlap share bytes (ir::plan_memory:
// largest first, lowest offset that fits). Besides the memory it saves, a layer's output then
// lands in bytes an earlier layer just used, still in cache, instead of in cold pages. A step's
// user-mode scratchpad is in the arena too, live at that step only: it shares bytes with what
// is not live there, in the arena's huge pages (one scratchpad of its own, in small pages, cost
// GoogLeNet's first run 19 ms of page faults in the Winograd step that used most of its 15 MB).
Status Builder::plan_arena() {
  const size_t nb = owned_.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  std::vector<bool> movable(nb, false);
  for (size_t i = 0; i < nb; ++i) movable[i] = !owned_[i].pinned;
  auto buffer_of = [&](const void* h) -> int {
    const uint8_t* p = static_cast<const uint8_t*>(h);
    if (p == nullptr) return -1;
    for (size_t i = 0; i < nb; ++i) {
      if (p >= owned_[i].base && p < owned_[i].base + owned_[i].size) return static_cast<int>(i);
    }
    return -1;
  };
  for (size_t k = 0; k < d_.steps.size(); ++k) {
    for (const dnnl_exec_arg_t& a : d_.steps[k].args) {
      if (a.arg == DNNL_ARG_SCRATCHPAD) continue;
      void* h = nullptr;
      if (dnnl_memory_get_data_handle(a.memory, &h) != dnnl_success) continue;
      const int b = buffer_of(h);
      if (b < 0) continue;
      const size_t bi = static_cast<size_t>(b);
      if (first[bi] < 0) {
        first[bi] = static_cast<int>(k);
        // Read before any step writes it: its build-time contents matter (weights, a bias).
        if (a.arg != DNNL_ARG_DST) movable[bi] = false;
      }
      last[bi] = static_cast<int>(k);
    }
  }
  std::vector<ir::PlanItem> items;
  std::vector<size_t> which;
  for (size_t i = 0; i < nb; ++i) {
    if (!movable[i] || first[i] < 0) continue;
    items.push_back({owned_[i].size, first[i], last[i]});
    which.push_back(i);
  }
  const size_t activations = items.size();
  std::vector<size_t> scratch_steps;
  for (size_t k = 0; k < d_.steps.size(); ++k) {
    const size_t bytes = d_.steps[k].scratchpad.get_size();
    if (bytes == 0) continue;
    items.push_back({bytes, static_cast<int>(k), static_cast<int>(k)});
    scratch_steps.push_back(k);
    d_.scratchpad_bytes = std::max(d_.scratchpad_bytes, bytes);
  }
  if (items.empty()) return Status::ok();
  constexpr size_t kAlign = 64;  // every item's offset, and its size as plan_memory counts it
  const ir::MemoryPlan plan = ir::plan_memory(items, kAlign);
  d_.arena =
      allocate(memory::desc({static_cast<int64_t>(plan.arena_size)}, dt::u8, memory::dims{1}));
  uint8_t* arena = static_cast<uint8_t*>(d_.arena.get_data_handle());
  d_.arena_bytes = plan.arena_size;
  for (size_t j = 0; j < activations; ++j)
    d_.activation_bytes += (items[j].size + kAlign - 1) / kAlign * kAlign;
  // New handles first (every view into a moved buffer moves with it), then apply them: moving
  // a buffer's owning memory frees its old allocation.
  std::vector<std::pair<memory, void*>> moves;
  for (memory& m : d_.memories) {
    const int b = buffer_of(m.get_data_handle());
    if (b < 0) continue;
    for (size_t j = 0; j < which.size(); ++j) {
      if (which[j] != static_cast<size_t>(b)) continue;
      const uint8_t* old = static_cast<const uint8_t*>(m.get_data_handle());
      moves.push_back({m, arena + plan.offsets[j] + (old - owned_[which[j]].base)});
    }
  }
  for (auto& [m, h] : moves) m.set_data_handle(h);
  for (size_t j : which) release_large(owned_[j].base);
  for (size_t j = 0; j < scratch_steps.size(); ++j) {
    Step& s = d_.steps[scratch_steps[j]];
    memory m = wrap(s.scratchpad, arena + plan.offsets[activations + j], -1);
    s.args.push_back({DNNL_ARG_SCRATCHPAD, m.get()});
  }
  return Status::ok();
}

// Below these a step runs inline on one thread. Measured with oneDNN 2.6 at 2 threads
// (docs/performance.md, "Small steps on one thread"): EfficientNet's squeeze-excitation
// convolutions (about 55 K multiply-accumulates) took 1.7-3.6 us inline against 3.9-4.9 split.
constexpr int64_t kSmallMacs = 256 * 1024;     // Conv and MatMul: multiply-accumulates
constexpr int64_t kSmallElements = 32 * 1024;  // everything else: elements read or written

// A global pool or a broadcast binary over a channels-last tensor (EfficientNet's and
// MobileNetV3's squeeze-excitation: the pool of the depthwise output, then that output times the
// scale) ran slower at 2 threads than at 1 on the Intel Xeon guest: EfficientNet-B0's 16 scale
// multiplies 0.39 ms on one thread against 0.79 on two, its global pools 0.27 against 0.38. In
// other layouts they gained from the second thread (DenseNet-121's row-major scale-and-shift
// binaries 5.3 ms on one, 3.1 on two; RegNet's aBcd8b pools 0.26 against 0.13), so the rule is
// for channels-last alone, up to 1 M elements (4 MiB, the two cores' L2).
constexpr int64_t kCrossCoreElements = 1024 * 1024;

bool Builder::channels_last_on_one_thread(const memory::desc& src) const {
  const memory::dims d = src.dims();
  return options_.threads > 1 && step_threads_ == 0 && d.size() == 4 &&
         src == memory::desc(d, src.data_type(), memory::format_tag::acdb) &&
         d[0] * d[1] * d[2] * d[3] < kCrossCoreElements;
}

bool Builder::too_small_to_split(size_t k) const {
  const fb::Node& node = view_.node(k);
  NodeView n(view_, node);
  const int y = n.output(0);
  const int x = n.input(0);
  if (y < 0 || x < 0) return false;
  const int64_t out = numel(dims_[static_cast<size_t>(y)]);
  const int64_t in = numel(dims_[static_cast<size_t>(x)]);
  switch (lowering_of(node.op()).lowering) {
    case Lowering::Conv:
    case Lowering::ConvTranspose: {
      // Conv weights [O, I/g, kh, kw]: each output takes I/g x kh x kw; ConvTranspose weights
      // [I, O/g, kh, kw]: each input gives O/g x kh x kw.
      const DimVector& w = dims_[static_cast<size_t>(n.input(1))];
      int64_t per = 1;
      for (size_t d = 1; d < w.size(); ++d) per *= w[d];
      return (node.op() == fb::OpType::Conv ? out : in) * per < kSmallMacs;
    }
    case Lowering::MatMul: {
      const DimVector& a = dims_[static_cast<size_t>(x)];
      return a.empty() || out * a.back() < kSmallMacs;
    }
    default:
      return std::max(out, in) < kSmallElements;
  }
}

Status Builder::build() {
  TESSERA_RETURN_IF_ERROR(resolve());
  d_.num_inputs = view_.inputs().size();
  d_.num_outputs = view_.outputs().size();
  for (size_t i = 0; i < d_.num_inputs; ++i) {
    const int v = view_.inputs()[i];
    Val& val = vals_[static_cast<size_t>(v)];
    val.arg = static_cast<int>(i);
    val.mem = wrap(plain(dims_[static_cast<size_t>(v)], dt::f32), nullptr, static_cast<int>(i));
    d_.arg_numel.push_back(numel(dims_[static_cast<size_t>(v)]));
  }
  for (size_t i = 0; i < d_.num_outputs; ++i) {
    d_.arg_numel.push_back(numel(dims_[static_cast<size_t>(view_.outputs()[i])]));
  }
  const size_t num_nodes = view_.num_nodes();
  for (size_t k = 0; k < num_nodes; ++k) {
    if (done_[k]) continue;
    if (options_.threads > 1 && too_small_to_split(k)) {
      // Created for a team of one, so that it runs inline: no parallel region to open and join.
      OneThread one(*this);
      TESSERA_RETURN_IF_ERROR(lower(static_cast<int>(k)));
    } else {
      TESSERA_RETURN_IF_ERROR(lower(static_cast<int>(k)));
    }
  }
  return finish();
}

}  // namespace

Result<std::unique_ptr<Delegate>> build_delegate(const PayloadGraph& view,
                                                 const BackendInitContext& context,
                                                 const BuildOptions& options) {
  auto delegate = std::make_unique<Delegate>();
  std::snprintf(delegate->id, sizeof delegate->id, "%.*s",
                static_cast<int>(context.delegate_id().size()), context.delegate_id().data());
  delegate->engine = options.engine;
  delegate->threads = options.threads;
  delegate->bf16 = options.bf16;
  delegate->silu_isa = silu_isa_for_onednn();
  try {
    delegate->stream = dnnl::stream(options.engine);
    OmpThreadsScope team(options.threads);  // primitives partition work for this team size
    Builder builder(view, context, options, *delegate);
    TESSERA_RETURN_IF_ERROR(builder.build());
  } catch (const dnnl::error& e) {
    return Status::error(Error::DelegateInvalidCompatibility, "onednn: %s (status %d)", e.what(),
                         static_cast<int>(e.status));
  }
  return delegate;
}

}  // namespace tessera::onednn
