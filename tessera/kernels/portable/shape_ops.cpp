// Data movement: Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, ChannelShuffle, Concat,
// Split, Slice, Gather, Pad, Cast. Every dtype is handled by element size (Cast converts between
// all of them).
#include <cmath>
#include <cstring>
#include <limits>

#include "tessera/kernels/portable/loops.h"
#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

int64_t esize_of(const Tensor* t) { return static_cast<int64_t>(element_size(t->dtype())); }

void contiguous_strides(Span<const int64_t> sizes, int64_t* strides) {
  int64_t s = 1;
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= sizes[d];
  }
}

// ---- plain copies ------------------------------------------------------------------------------

struct CopyState {
  int64_t nbytes;
};

Status run_copy(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto* s = static_cast<const CopyState*>(state);
  if (s->nbytes > 0 && out[0]->data() != in[0]->data()) {
    // Program verification refuses a step whose output shares bytes with its input (a hostile
    // file did: fuzz/corpus/program_load/regression-copy-between-overlapping-tensors); memmove
    // costs nothing more here and stays safe for callers that bind tensors themselves.
    std::memmove(out[0]->data(), in[0]->data(), static_cast<size_t>(s->nbytes));
  }
  return Status::ok();
}

Result<PreparedKernel> make_copy(OpContext& ctx) {
  TESSERA_ASSIGN_OR_RETURN(CopyState * s, ctx.make_state<CopyState>());
  s->nbytes = ctx.input(0)->numel() * esize_of(ctx.input(0));
  return PreparedKernel{run_copy, s};
}

Status expect_unary_io(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  return ctx.expect_output_dtype(0, ctx.input(0)->dtype());
}

// Checks that the Ints attribute `name` has at most kMaxDims entries.
Status check_dims_attr(const OpContext& ctx, const char* name, Span<const int64_t> v) {
  if (v.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.error(Error::InvalidProgram, "attribute '%s' has %zu entries (at most %d)", name,
                     v.size(), kMaxDims);
  }
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_identity(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, ctx.input(0)->sizes()));
  return make_copy(ctx);
}

Result<PreparedKernel> prepare_reshape_like(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  Shape computed;
  bool have_computed = false;
  switch (ctx.op()) {
    case Op::Flatten: {
      TESSERA_ASSIGN_OR_RETURN(const ir::FlattenAttrs attrs, ctx.read_attrs<ir::FlattenAttrs>());
      int64_t axis = attrs.axis;
      if (axis < -rank || axis > rank) {
        return ctx.error(Error::InvalidProgram, "axis %lld is out of range for rank %d",
                         static_cast<long long>(axis), rank);
      }
      if (axis < 0) axis += rank;
      int64_t outer = 1, inner = 1;
      for (int d = 0; d < rank; ++d) (d < axis ? outer : inner) *= x->size(d);
      computed.push(outer);
      computed.push(inner);
      have_computed = true;
      break;
    }
    case Op::Squeeze: {
      TESSERA_ASSIGN_OR_RETURN(const ir::AxesAttrs attrs, ctx.read_attrs<ir::AxesAttrs>());
      const Span<const int64_t> axes = attrs.axes;
      TESSERA_RETURN_IF_ERROR(check_dims_attr(ctx, "axes", axes));
      if (axes.empty()) break;
      bool squeeze[kMaxDims] = {};
      for (int64_t a : axes) {
        TESSERA_ASSIGN_OR_RETURN(int d, ctx.normalize_axis(a, rank, "axis"));
        if (squeeze[d]) return ctx.error(Error::InvalidProgram, "axis %d is repeated", d);
        if (x->size(d) != 1) {
          return ctx.error(Error::InvalidProgram, "cannot squeeze dim %d of size %lld", d,
                           static_cast<long long>(x->size(d)));
        }
        squeeze[d] = true;
      }
      for (int d = 0; d < rank; ++d) {
        if (!squeeze[d]) computed.push(x->size(d));
      }
      have_computed = true;
      break;
    }
    case Op::Unsqueeze: {
      TESSERA_ASSIGN_OR_RETURN(const ir::AxesAttrs attrs, ctx.read_attrs<ir::AxesAttrs>());
      const Span<const int64_t> axes = attrs.axes;
      TESSERA_RETURN_IF_ERROR(check_dims_attr(ctx, "axes", axes));
      if (axes.empty()) break;
      const int out_rank = rank + static_cast<int>(axes.size());
      if (out_rank > kMaxDims) {
        return ctx.error(Error::NotSupported, "output rank %d exceeds %d", out_rank, kMaxDims);
      }
      bool inserted[kMaxDims] = {};
      for (int64_t a : axes) {
        TESSERA_ASSIGN_OR_RETURN(int d, ctx.normalize_axis(a, out_rank, "axis"));
        if (inserted[d]) return ctx.error(Error::InvalidProgram, "axis %d is repeated", d);
        inserted[d] = true;
      }
      for (int d = 0, src = 0; d < out_rank; ++d) computed.push(inserted[d] ? 1 : x->size(src++));
      have_computed = true;
      break;
    }
    default:
      break;
  }
  if (have_computed) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  } else if (ctx.output(0)->numel() != x->numel()) {
    char a[96], b[96];
    format_sizes(ctx.output(0)->sizes(), a, sizeof a);
    format_sizes(x->sizes(), b, sizeof b);
    return ctx.error(Error::ShapeMismatch, "output shape %s has %lld elements, input %s has %lld",
                     a, static_cast<long long>(ctx.output(0)->numel()), b,
                     static_cast<long long>(x->numel()));
  }
  return make_copy(ctx);
}

// ---- Transpose and Slice: strided gathers ------------------------------------------------------

namespace {

struct StridedCopyState {
  StridedLoop<1> loop;
  size_t esize;
};

Status run_strided_copy(const void* state, Span<const Tensor* const> in,
                        Span<Tensor* const> out) {
  const auto* s = static_cast<const StridedCopyState*>(state);
  strided_copy(s->loop, out[0]->data(), in[0]->data(), s->esize);
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_transpose(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  TESSERA_ASSIGN_OR_RETURN(const ir::TransposeAttrs attrs, ctx.read_attrs<ir::TransposeAttrs>());
  const Span<const int64_t> perm_attr = attrs.perm;
  TESSERA_RETURN_IF_ERROR(check_dims_attr(ctx, "perm", perm_attr));
  int perm[kMaxDims];
  if (perm_attr.empty()) {
    for (int d = 0; d < rank; ++d) perm[d] = rank - 1 - d;
  } else {
    if (static_cast<int>(perm_attr.size()) != rank) {
      return ctx.error(Error::InvalidProgram, "perm has %zu entries for a rank-%d input",
                       perm_attr.size(), rank);
    }
    bool seen[kMaxDims] = {};
    for (int d = 0; d < rank; ++d) {
      int64_t p = perm_attr[d];
      if (p < 0 || p >= rank || seen[p]) {
        return ctx.error(Error::InvalidProgram, "perm is not a permutation of 0..%d", rank - 1);
      }
      seen[p] = true;
      perm[d] = static_cast<int>(p);
    }
  }
  int64_t in_strides[kMaxDims];
  contiguous_strides(x->sizes(), in_strides);
  TESSERA_ASSIGN_OR_RETURN(StridedCopyState * s, ctx.make_state<StridedCopyState>());
  Shape computed;
  s->loop.rank = rank;
  for (int d = 0; d < rank; ++d) {
    computed.push(x->size(perm[d]));
    s->loop.sizes[d] = x->size(perm[d]);
    s->loop.strides[0][d] = in_strides[perm[d]];
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  coalesce(s->loop);
  s->esize = element_size(x->dtype());
  return PreparedKernel{run_strided_copy, s};
}

// ChannelShuffle: X [N, C, spatial...] read as [N, g, C/g, S] and written as [N, C/g, g, S], so
// output channel j*g + i is input channel i*(C/g) + j.
Result<PreparedKernel> prepare_channel_shuffle(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  if (rank < 2) {
    return ctx.error(Error::InvalidProgram, "input has rank %d; needs [N, C, ...]", rank);
  }
  TESSERA_ASSIGN_OR_RETURN(const ir::ChannelShuffleAttrs attrs,
                           ctx.read_attrs<ir::ChannelShuffleAttrs>());
  const int64_t g = attrs.group;
  const int64_t c = x->size(1);
  if (g < 1 || c % g != 0) {
    return ctx.error(Error::InvalidProgram, "group %lld does not divide the %lld channels",
                     static_cast<long long>(g), static_cast<long long>(c));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, x->sizes()));
  int64_t spatial = 1;
  for (int d = 2; d < rank; ++d) spatial *= x->size(d);
  TESSERA_ASSIGN_OR_RETURN(StridedCopyState * s, ctx.make_state<StridedCopyState>());
  s->loop.rank = 4;
  const int64_t sizes[4] = {x->size(0), c / g, g, spatial};
  const int64_t strides[4] = {c * spatial, spatial, (c / g) * spatial, 1};
  for (int d = 0; d < 4; ++d) {
    s->loop.sizes[d] = sizes[d];
    s->loop.strides[0][d] = strides[d];
  }
  coalesce(s->loop);
  s->esize = element_size(x->dtype());
  return PreparedKernel{run_strided_copy, s};
}

Result<PreparedKernel> prepare_slice(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  TESSERA_ASSIGN_OR_RETURN(const ir::SliceAttrs attrs, ctx.read_attrs<ir::SliceAttrs>());
  const Span<const int64_t> starts = attrs.starts, ends = attrs.ends, axes = attrs.axes,
                            steps = attrs.steps;
  const size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n)) {
    return ctx.error(Error::InvalidProgram,
                     "starts, ends, axes and steps must have the same length (%zu, %zu, %zu, %zu)",
                     starts.size(), ends.size(), axes.size(), steps.size());
  }
  if (n > static_cast<size_t>(rank)) {
    return ctx.error(Error::InvalidProgram, "%zu slice entries for a rank-%d input", n, rank);
  }
  int64_t start[kMaxDims], step[kMaxDims];
  Shape computed(x->sizes());
  bool seen[kMaxDims] = {};
  for (int d = 0; d < rank; ++d) {
    start[d] = 0;
    step[d] = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    int d = static_cast<int>(i);
    if (!axes.empty()) {
      TESSERA_ASSIGN_OR_RETURN(d, ctx.normalize_axis(axes[i], rank, "axis"));
    }
    if (seen[d]) return ctx.error(Error::InvalidProgram, "axis %d is repeated", d);
    seen[d] = true;
    const int64_t dim = x->size(d);
    const int64_t st = steps.empty() ? 1 : steps[i];
    if (st == 0) return ctx.error(Error::InvalidProgram, "step for axis %d is 0", d);
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;  // cannot overflow: dim >= 0
    if (e < 0) e += dim;
    int64_t size;
    if (st > 0) {
      b = b < 0 ? 0 : (b > dim ? dim : b);
      e = e < 0 ? 0 : (e > dim ? dim : e);
      size = e > b ? 1 + (e - b - 1) / st : 0;
    } else {
      b = b < 0 ? 0 : (b > dim - 1 ? dim - 1 : b);
      e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
      if (b <= e) {
        size = 0;
      } else if (st == std::numeric_limits<int64_t>::min()) {
        size = 1;  // -st would overflow; any step beyond the axis takes one element
      } else {
        size = 1 + (b - e - 1) / -st;
      }
    }
    start[d] = b;
    step[d] = st;
    computed.d[d] = size;
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  int64_t in_strides[kMaxDims];
  contiguous_strides(x->sizes(), in_strides);
  TESSERA_ASSIGN_OR_RETURN(StridedCopyState * s, ctx.make_state<StridedCopyState>());
  s->loop.rank = rank;
  int64_t offset = 0;
  bool empty = computed.numel() == 0;
  for (int d = 0; d < rank; ++d) {
    s->loop.sizes[d] = computed.d[d];
    // A size-1 dim is dropped by coalesce, so its (possibly huge) step never matters.
    s->loop.strides[0][d] = computed.d[d] > 1 ? in_strides[d] * step[d] : 0;
    if (!empty) offset += start[d] * in_strides[d];
  }
  s->loop.offset[0] = offset;
  coalesce(s->loop);
  s->esize = element_size(x->dtype());
  return PreparedKernel{run_strided_copy, s};
}

// ---- Concat and Split --------------------------------------------------------------------------

namespace {

// Concat: for each outer index, each input contributes one contiguous chunk.
// Split: the reverse. `chunk` holds bytes per outer index for each of `count` tensors.
struct ChunkState {
  int64_t outer;
  int64_t count;
  const int64_t* chunk;  // allocator memory
};

Status run_concat(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto* s = static_cast<const ChunkState*>(state);
  auto* dst = static_cast<uint8_t*>(out[0]->data());
  for (int64_t o = 0; o < s->outer; ++o) {
    for (int64_t i = 0; i < s->count; ++i) {
      const int64_t c = s->chunk[i];
      if (c == 0) continue;
      std::memcpy(dst, static_cast<const uint8_t*>(in[i]->data()) + o * c, static_cast<size_t>(c));
      dst += c;
    }
  }
  return Status::ok();
}

Status run_split(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto* s = static_cast<const ChunkState*>(state);
  const auto* src = static_cast<const uint8_t*>(in[0]->data());
  for (int64_t o = 0; o < s->outer; ++o) {
    for (int64_t i = 0; i < s->count; ++i) {
      const int64_t c = s->chunk[i];
      if (c == 0) continue;
      std::memcpy(static_cast<uint8_t*>(out[i]->data()) + o * c, src, static_cast<size_t>(c));
      src += c;
    }
  }
  return Status::ok();
}

// True if `a` and `b` have the same rank and sizes except at `axis`.
bool same_except(const Tensor* a, const Tensor* b, int axis) {
  if (a->dim() != b->dim()) return false;
  for (int d = 0; d < a->dim(); ++d) {
    if (d != axis && a->size(d) != b->size(d)) return false;
  }
  return true;
}

}  // namespace

Result<PreparedKernel> prepare_concat(OpContext& ctx) {
  const size_t n = ctx.num_inputs();
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, SIZE_MAX));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  for (size_t i = 0; i < n; ++i) {
    if (ctx.input(i) == nullptr) return ctx.error(Error::InvalidProgram, "input %zu is absent", i);
  }
  const Tensor* first = ctx.input(0);
  const int rank = first->dim();
  TESSERA_ASSIGN_OR_RETURN(const ir::ConcatAttrs attrs, ctx.read_attrs<ir::ConcatAttrs>());
  const int64_t axis_attr = attrs.axis;
  if (rank == 0) return ctx.error(Error::InvalidProgram, "cannot concatenate scalars");
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx.normalize_axis(axis_attr, rank, "axis"));
  Shape computed(first->sizes());
  computed.d[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_same_dtype(i, first->dtype()));
    if (!same_except(ctx.input(i), first, axis)) {
      char a[96], b[96];
      format_sizes(ctx.input(i)->sizes(), a, sizeof a);
      format_sizes(first->sizes(), b, sizeof b);
      return ctx.error(Error::ShapeMismatch, "input %zu shape %s does not match %s outside axis %d",
                       i, a, b, axis);
    }
    computed.d[axis] += ctx.input(i)->size(axis);
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, first->dtype()));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  TESSERA_ASSIGN_OR_RETURN(ChunkState * s, ctx.make_state<ChunkState>());
  TESSERA_ASSIGN_OR_RETURN(int64_t * chunk, ctx.make_array<int64_t>(n));
  int64_t outer = 1, inner = esize_of(first);
  for (int d = 0; d < axis; ++d) outer *= first->size(d);
  for (int d = axis + 1; d < rank; ++d) inner *= first->size(d);
  for (size_t i = 0; i < n; ++i) chunk[i] = ctx.input(i)->size(axis) * inner;
  *s = ChunkState{computed.numel() == 0 ? 0 : outer, static_cast<int64_t>(n), chunk};
  return PreparedKernel{run_concat, s};
}

Result<PreparedKernel> prepare_split(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  const size_t n = ctx.num_outputs();
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, SIZE_MAX));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  if (rank == 0) return ctx.error(Error::InvalidProgram, "cannot split a scalar");
  TESSERA_ASSIGN_OR_RETURN(const ir::SplitAttrs attrs, ctx.read_attrs<ir::SplitAttrs>());
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx.normalize_axis(attrs.axis, rank, "axis"));
  const Span<const int64_t> split = attrs.split;
  if (!split.empty() && split.size() != n) {
    return ctx.error(Error::InvalidProgram, "'split' has %zu entries for %zu outputs",
                     split.size(), n);
  }
  if (!split.empty()) {
    int64_t sum = 0;
    for (size_t i = 0; i < split.size(); ++i) {
      if (split[i] < 0 || split[i] > x->size(axis)) {
        return ctx.error(Error::InvalidProgram, "'split'[%zu] is %lld, expected 0 to %lld", i,
                         static_cast<long long>(split[i]),
                         static_cast<long long>(x->size(axis)));
      }
      sum += split[i];
      if (sum > x->size(axis)) break;  // keeps the sum far from overflowing
    }
    if (sum != x->size(axis)) {
      return ctx.error(Error::InvalidProgram, "'split' adds up to %lld, axis %d has %lld",
                       static_cast<long long>(sum), axis, static_cast<long long>(x->size(axis)));
    }
  }
  const int64_t num_outputs = attrs.num_outputs;
  if (num_outputs != 0 && num_outputs != static_cast<int64_t>(n)) {
    return ctx.error(Error::InvalidProgram, "num_outputs is %lld but the node has %zu outputs",
                     static_cast<long long>(num_outputs), n);
  }
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const Tensor* y = ctx.output(i);
    TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(i, x->dtype()));
    if (!same_except(y, x, axis) || (!split.empty() && split[i] != y->size(axis))) {
      Shape want(x->sizes());
      want.d[axis] = split.empty() ? y->size(axis) : split[i];
      return ctx.expect_output_shape(i, want.span());
    }
    total += y->size(axis);
  }
  if (total != x->size(axis)) {
    return ctx.error(Error::ShapeMismatch, "outputs add up to %lld along axis %d, input has %lld",
                     static_cast<long long>(total), axis, static_cast<long long>(x->size(axis)));
  }
  TESSERA_ASSIGN_OR_RETURN(ChunkState * s, ctx.make_state<ChunkState>());
  TESSERA_ASSIGN_OR_RETURN(int64_t * chunk, ctx.make_array<int64_t>(n));
  int64_t outer = 1, inner = esize_of(x);
  for (int d = 0; d < axis; ++d) outer *= x->size(d);
  for (int d = axis + 1; d < rank; ++d) inner *= x->size(d);
  for (size_t i = 0; i < n; ++i) chunk[i] = ctx.output(i)->size(axis) * inner;
  *s = ChunkState{x->numel() == 0 ? 0 : outer, static_cast<int64_t>(n), chunk};
  return PreparedKernel{run_split, s};
}

// ---- Gather ------------------------------------------------------------------------------------

namespace {

struct GatherState {
  int64_t outer;      // product of data dims before axis
  int64_t axis_size;
  int64_t inner;      // bytes per gathered slice
  int64_t count;      // number of indices
  bool int64_indices;
  int axis;
  Label label;
};

template <typename I>
Status gather(const GatherState& s, const uint8_t* data, const I* idx, uint8_t* out) {
  // Validate every index first so a bad one leaves the output untouched.
  for (int64_t t = 0; t < s.count; ++t) {
    const int64_t i = static_cast<int64_t>(idx[t]);
    if (i < -s.axis_size || i >= s.axis_size) {
      return Status::error(Error::InvalidArgument,
                           "%s: index %lld is out of range for axis %d of size %lld", s.label.text,
                           static_cast<long long>(i), s.axis, static_cast<long long>(s.axis_size));
    }
  }
  for (int64_t o = 0; o < s.outer; ++o) {
    const uint8_t* base = data + o * s.axis_size * s.inner;
    for (int64_t t = 0; t < s.count; ++t) {
      int64_t i = static_cast<int64_t>(idx[t]);
      if (i < 0) i += s.axis_size;
      std::memcpy(out, base + i * s.inner, static_cast<size_t>(s.inner));
      out += s.inner;
    }
  }
  return Status::ok();
}

Status run_gather(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const GatherState*>(state);
  const auto* data = static_cast<const uint8_t*>(in[0]->data());
  auto* dst = static_cast<uint8_t*>(out[0]->data());
  if (s.int64_indices) return gather(s, data, in[1]->data_as<const int64_t>(), dst);
  return gather(s, data, in[1]->data_as<const int32_t>(), dst);
}

}  // namespace

Result<PreparedKernel> prepare_gather(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 2));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  const Tensor* data = ctx.input(0);
  const Tensor* indices = ctx.input(1);
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(1, {ScalarType::Int64, ScalarType::Int32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, data->dtype()));
  const int rank = data->dim();
  if (rank == 0) return ctx.error(Error::InvalidProgram, "data must have rank >= 1");
  TESSERA_ASSIGN_OR_RETURN(const ir::GatherAttrs attrs, ctx.read_attrs<ir::GatherAttrs>());
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx.normalize_axis(attrs.axis, rank, "axis"));
  if (rank - 1 + indices->dim() > kMaxDims) {
    return ctx.error(Error::NotSupported, "output rank %d exceeds %d", rank - 1 + indices->dim(),
                     kMaxDims);
  }
  Shape computed;
  for (int d = 0; d < axis; ++d) computed.push(data->size(d));
  for (int d = 0; d < indices->dim(); ++d) computed.push(indices->size(d));
  for (int d = axis + 1; d < rank; ++d) computed.push(data->size(d));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  TESSERA_ASSIGN_OR_RETURN(GatherState * s, ctx.make_state<GatherState>());
  int64_t outer = 1, inner = esize_of(data);
  for (int d = 0; d < axis; ++d) outer *= data->size(d);
  for (int d = axis + 1; d < rank; ++d) inner *= data->size(d);
  s->outer = outer;
  s->axis_size = data->size(axis);
  s->inner = inner;
  s->count = indices->numel();
  s->int64_indices = indices->dtype() == ScalarType::Int64;
  s->axis = axis;
  ctx.fill_label(&s->label);
  return PreparedKernel{run_gather, s};
}

// ---- Pad ---------------------------------------------------------------------------------------

namespace {

enum class PadMode { Constant, Reflect, Edge };

struct PadState {
  int rank;
  PadMode mode;
  int64_t esize;
  int64_t in_sizes[kMaxDims];
  int64_t out_sizes[kMaxDims];
  int64_t begin[kMaxDims];
  int64_t in_strides[kMaxDims];
  uint8_t value[8];  // the constant in the tensor's dtype
};

// Maps an output coordinate shifted by the begin pad to an input coordinate; -1 when it falls
// in the constant padding.
inline int64_t pad_source(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : n - 1;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - r;
    }
  }
  return -1;
}

void fill(uint8_t* dst, int64_t n, const uint8_t* value, int64_t esize) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * esize, value, static_cast<size_t>(esize));
}

Status run_pad(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const PadState*>(state);
  const auto* src = static_cast<const uint8_t*>(in[0]->data());
  auto* dst = static_cast<uint8_t*>(out[0]->data());
  const int r = s.rank;
  const int64_t es = s.esize;
  if (r == 0) {
    std::memcpy(dst, src, static_cast<size_t>(es));
    return Status::ok();
  }
  int64_t rows = 1;
  for (int d = 0; d < r; ++d) {
    if (s.out_sizes[d] == 0) return Status::ok();
    if (d < r - 1) rows *= s.out_sizes[d];
  }
  const int64_t n_out = s.out_sizes[r - 1];
  const int64_t n_in = s.in_sizes[r - 1];
  const int64_t b = s.begin[r - 1];
  int64_t idx[kMaxDims] = {};
  for (int64_t row = 0; row < rows; ++row, dst += n_out * es) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r - 1 && inside; ++d) {
      const int64_t i = pad_source(idx[d] - s.begin[d], s.in_sizes[d], s.mode);
      if (i < 0) inside = false;
      off += i * s.in_strides[d];
    }
    if (!inside) {
      fill(dst, n_out, s.value, es);
    } else {
      const uint8_t* src_row = src + off * es;
      if (s.mode == PadMode::Constant) {
        // Output columns [lo, hi) come from the input; the rest is the constant.
        int64_t lo = b < 0 ? 0 : (b > n_out ? n_out : b);
        int64_t hi = b + n_in;
        hi = hi < lo ? lo : (hi > n_out ? n_out : hi);
        fill(dst, lo, s.value, es);
        if (hi > lo) {
          std::memcpy(dst + lo * es, src_row + (lo - b) * es, static_cast<size_t>((hi - lo) * es));
        }
        fill(dst + hi * es, n_out - hi, s.value, es);
      } else {
        for (int64_t j = 0; j < n_out; ++j) {
          const int64_t i = pad_source(j - b, n_in, s.mode);
          std::memcpy(dst + j * es, src_row + i * es, static_cast<size_t>(es));
        }
      }
    }
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < s.out_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok();
}

// Stores `v` as one element of dtype `t` (integers saturate; NaN becomes 0).
void store_scalar(float v, ScalarType t, uint8_t* out);

}  // namespace

Result<PreparedKernel> prepare_pad(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(expect_unary_io(ctx));
  const Tensor* x = ctx.input(0);
  const int rank = x->dim();
  TESSERA_ASSIGN_OR_RETURN(const ir::PadAttrs attrs, ctx.read_attrs<ir::PadAttrs>());
  const std::string_view mode_name = attrs.mode;
  PadMode mode;
  if (mode_name == "constant") {
    mode = PadMode::Constant;
  } else if (mode_name == "reflect") {
    mode = PadMode::Reflect;
  } else if (mode_name == "edge") {
    mode = PadMode::Edge;
  } else {
    // "wrap" is valid ONNX (opset 19) that this kernel does not implement; others are invalid.
    return ctx.error(mode_name == "wrap" ? Error::NotSupported : Error::InvalidProgram,
                     "mode '%.*s' is not supported (constant, reflect, edge)",
                     static_cast<int>(mode_name.size()), mode_name.data());
  }
  const Span<const int64_t> pads = attrs.pads, axes = attrs.axes;
  const float value = attrs.value;
  int axis_of[kMaxDims];
  size_t n_axes = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  if (n_axes > static_cast<size_t>(rank)) {
    return ctx.error(Error::InvalidProgram, "%zu axes for a rank-%d input", n_axes, rank);
  }
  bool seen[kMaxDims] = {};
  for (size_t i = 0; i < n_axes; ++i) {
    int d = static_cast<int>(i);
    if (!axes.empty()) {
      TESSERA_ASSIGN_OR_RETURN(d, ctx.normalize_axis(axes[i], rank, "axis"));
    }
    if (seen[d]) return ctx.error(Error::InvalidProgram, "axis %d is repeated", d);
    seen[d] = true;
    axis_of[i] = d;
  }
  if (!pads.empty() && pads.size() != 2 * n_axes) {
    return ctx.error(Error::InvalidProgram, "pads has %zu entries, expected %zu", pads.size(),
                     2 * n_axes);
  }
  TESSERA_ASSIGN_OR_RETURN(PadState * s, ctx.make_state<PadState>());
  s->rank = rank;
  s->mode = mode;
  s->esize = esize_of(x);
  Shape computed(x->sizes());
  int64_t end[kMaxDims] = {};
  for (int d = 0; d < rank; ++d) s->begin[d] = 0;
  for (size_t i = 0; i < n_axes && !pads.empty(); ++i) {
    const int64_t b = pads[i], e = pads[i + n_axes];
    if (b <= -kMaxAttrValue || b >= kMaxAttrValue || e <= -kMaxAttrValue || e >= kMaxAttrValue) {
      return ctx.error(Error::InvalidProgram, "pad value out of range on axis %d", axis_of[i]);
    }
    s->begin[axis_of[i]] = b;
    end[axis_of[i]] = e;
  }
  for (int d = 0; d < rank; ++d) {
    const int64_t in = x->size(d);
    const int64_t size = in + s->begin[d] + end[d];
    if (size < 0) {
      return ctx.error(Error::InvalidProgram, "pads %lld, %lld make axis %d of size %lld negative",
                       static_cast<long long>(s->begin[d]), static_cast<long long>(end[d]), d,
                       static_cast<long long>(in));
    }
    if (mode != PadMode::Constant && in == 0 && size > 0) {
      return ctx.error(Error::InvalidProgram, "cannot %.*s-pad the empty axis %d",
                       static_cast<int>(mode_name.size()), mode_name.data(), d);
    }
    computed.d[d] = size;
    s->in_sizes[d] = in;
    s->out_sizes[d] = size;
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  contiguous_strides(x->sizes(), s->in_strides);
  store_scalar(value, x->dtype(), s->value);
  return PreparedKernel{run_pad, s};
}

// ---- Cast --------------------------------------------------------------------------------------

namespace {

struct Half {
  uint16_t bits;
};
struct Bool8 {
  uint8_t v;
};

template <typename T>
T float_to_int(float f) {
  if (std::isnan(f)) return 0;
  const double d = std::trunc(static_cast<double>(f));
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;  // exclusive
  if (d <= lo) return std::numeric_limits<T>::min();
  if (d >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(d);
}

template <typename D>
D from_float(float f) {
  if constexpr (std::is_same_v<D, float>) {
    return f;
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half{float_to_half(f)};
  } else if constexpr (std::is_same_v<D, Bool8>) {
    return Bool8{static_cast<uint8_t>(f != 0.0f || std::isnan(f))};
  } else {
    return float_to_int<D>(f);
  }
}

template <typename D>
D from_int(int64_t i) {
  if constexpr (std::is_same_v<D, float>) {
    return static_cast<float>(i);
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half{float_to_half(static_cast<float>(i))};
  } else if constexpr (std::is_same_v<D, Bool8>) {
    return Bool8{static_cast<uint8_t>(i != 0)};
  } else {
    return static_cast<D>(i);  // modular, as numpy and ONNX Runtime
  }
}

template <typename D, typename S>
D convert(S v) {
  if constexpr (std::is_same_v<S, float>) {
    return from_float<D>(v);
  } else if constexpr (std::is_same_v<S, Half>) {
    return from_float<D>(half_to_float(v.bits));
  } else if constexpr (std::is_same_v<S, Bool8>) {
    return from_int<D>(v.v != 0 ? 1 : 0);
  } else {
    return from_int<D>(static_cast<int64_t>(v));
  }
}

using CastFn = void (*)(const void* src, void* dst, int64_t n);

template <typename S, typename D>
void cast_loop(const void* src, void* dst, int64_t n) {
  const auto* s = static_cast<const S*>(src);
  auto* d = static_cast<D*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = convert<D>(s[i]);
}

template <typename S>
CastFn cast_to(ScalarType to) {
  switch (to) {
    case ScalarType::Float32: return cast_loop<S, float>;
    case ScalarType::Float16: return cast_loop<S, Half>;
    case ScalarType::Int64: return cast_loop<S, int64_t>;
    case ScalarType::Int32: return cast_loop<S, int32_t>;
    case ScalarType::Int8: return cast_loop<S, int8_t>;
    case ScalarType::UInt8: return cast_loop<S, uint8_t>;
    case ScalarType::Bool: return cast_loop<S, Bool8>;
  }
  return nullptr;
}

CastFn cast_fn(ScalarType from, ScalarType to) {
  switch (from) {
    case ScalarType::Float32: return cast_to<float>(to);
    case ScalarType::Float16: return cast_to<Half>(to);
    case ScalarType::Int64: return cast_to<int64_t>(to);
    case ScalarType::Int32: return cast_to<int32_t>(to);
    case ScalarType::Int8: return cast_to<int8_t>(to);
    case ScalarType::UInt8: return cast_to<uint8_t>(to);
    case ScalarType::Bool: return cast_to<Bool8>(to);
  }
  return nullptr;
}

void store_scalar(float v, ScalarType t, uint8_t* out) {
  cast_fn(ScalarType::Float32, t)(&v, out, 1);
}

struct CastState {
  CastFn fn;
  int64_t n;
};

Status run_cast(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto* s = static_cast<const CastState*>(state);
  s->fn(in[0]->data(), out[0]->data(), s->n);
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_cast(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_ASSIGN_OR_RETURN(const ir::CastAttrs attrs, ctx.read_attrs<ir::CastAttrs>());
  const int64_t to = attrs.to;
  if (to < 0 || to >= kNumScalarTypes) {
    return ctx.error(Error::InvalidProgram, "'to' is %lld, not a scalar type (0..%d)",
                     static_cast<long long>(to), kNumScalarTypes - 1);
  }
  const ScalarType target = static_cast<ScalarType>(to);
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, target));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, ctx.input(0)->sizes()));
  if (ctx.input(0)->dtype() == target) return make_copy(ctx);
  TESSERA_ASSIGN_OR_RETURN(CastState * s, ctx.make_state<CastState>());
  s->fn = cast_fn(ctx.input(0)->dtype(), target);
  s->n = ctx.input(0)->numel();
  return PreparedKernel{run_cast, s};
}

}  // namespace tessera::portable
