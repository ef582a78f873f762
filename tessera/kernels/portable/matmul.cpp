// Gemm (alpha, beta, transA, transB, optional broadcast C) and MatMul (numpy semantics: batched
// broadcasting, 1-D operands). Float32, on the shared blocked GEMM.
#include "tessera/kernels/portable/gemm.h"
#include "tessera/kernels/portable/loops.h"
#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

// ---- Gemm --------------------------------------------------------------------------------------

struct GemmState {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  bool use_c;             // C present and beta != 0
  StridedLoop<1> c_loop;  // reads C broadcast to [M, N]
  bool clamp;
  float lo, hi;
  float* scratch;         // packed B panel (transB)
};

Status run_gemm(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const GemmState*>(state);
  const float* a = in[0]->data_as<const float>();
  const float* b = in[1]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  if (s.use_c) {
    const float* c = in[2]->data_as<const float>();
    const int64_t cs = s.c_loop.strides[0][s.c_loop.rank - 1];
    const float beta = s.beta;
    for_each_row(s.c_loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
      const float* cr = c + off[0];
      float* yr = y + out_off;
      for (int64_t i = 0; i < n; ++i) yr[i] = beta * cr[i * cs];
    });
  }
  GemmArgs args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.a = s.trans_a ? MatrixView{a, 1, s.m} : MatrixView{a, s.k, 1};
  args.b = s.trans_b ? MatrixView{b, 1, s.k} : MatrixView{b, s.n, 1};
  args.c = y;
  args.ldc = s.n;
  args.alpha = s.alpha;
  args.accumulate = s.use_c;
  args.clamp = s.clamp;
  args.clamp_min = s.lo;
  args.clamp_max = s.hi;
  gemm(args, s.scratch);
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_gemm(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 3));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i)) TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(i, {ScalarType::Float32}));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* a = ctx.input(0);
  const Tensor* b = ctx.input(1);
  const Tensor* c = ctx.input(2);
  if (a->dim() != 2 || b->dim() != 2) {
    return ctx.error(Error::InvalidProgram, "A and B must be 2-D, got ranks %d and %d", a->dim(),
                     b->dim());
  }
  TESSERA_ASSIGN_OR_RETURN(const ir::GemmAttrs attrs, ctx.read_attrs<ir::GemmAttrs>());
  const int64_t trans_a = attrs.transA, trans_b = attrs.transB;
  const float alpha = attrs.alpha, beta = attrs.beta;
  if ((trans_a != 0 && trans_a != 1) || (trans_b != 0 && trans_b != 1)) {
    return ctx.error(Error::InvalidProgram, "transA and transB must be 0 or 1");
  }
  const int64_t m = trans_a ? a->size(1) : a->size(0);
  const int64_t k = trans_a ? a->size(0) : a->size(1);
  const int64_t kb = trans_b ? b->size(1) : b->size(0);
  const int64_t n = trans_b ? b->size(0) : b->size(1);
  if (k != kb) {
    char sa[96], sb[96];
    format_sizes(a->sizes(), sa, sizeof sa);
    format_sizes(b->sizes(), sb, sizeof sb);
    return ctx.error(Error::ShapeMismatch, "A %s and B %s have inner dims %lld and %lld", sa, sb,
                     static_cast<long long>(k), static_cast<long long>(kb));
  }
  Shape computed;
  computed.push(m);
  computed.push(n);
  TESSERA_ASSIGN_OR_RETURN(GemmState * s, ctx.make_state<GemmState>());
  if (c != nullptr) {
    Shape bc;
    bool ok = c->dim() <= 2 && broadcast_shapes(computed.span(), c->sizes(), &bc) &&
              bc.d[0] == m && bc.d[1] == n;
    if (!ok) {
      char sc[96], so[96];
      format_sizes(c->sizes(), sc, sizeof sc);
      format_sizes(computed.span(), so, sizeof so);
      return ctx.error(Error::ShapeMismatch, "C shape %s does not broadcast to %s", sc, so);
    }
    s->c_loop.rank = 2;
    s->c_loop.sizes[0] = m;
    s->c_loop.sizes[1] = n;
    broadcast_strides(c->sizes(), computed, s->c_loop.strides[0]);
    coalesce(s->c_loop);
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));
  s->m = m;
  s->n = n;
  s->k = k;
  s->trans_a = trans_a != 0;
  s->trans_b = trans_b != 0;
  s->alpha = alpha;
  s->beta = beta;
  s->use_c = c != nullptr && beta != 0.0f;
  s->clamp = ctx.activation().enabled;
  s->lo = ctx.activation().min;
  s->hi = ctx.activation().max;
  ctx.mark_activation_fused();
  if (s->trans_b && m > 0 && n > 0 && k > 0) {
    TESSERA_ASSIGN_OR_RETURN(s->scratch, ctx.make_scratch(gemm_scratch_floats(k, n)));
  }
  return PreparedKernel{run_gemm, s};
}

// ---- MatMul ------------------------------------------------------------------------------------

namespace {

struct MatMulState {
  int64_t m, n, k;
  bool folded;             // B has no batch: one GEMM over all of A's rows
  int64_t folded_m;
  StridedLoop<2> batch;    // over the output batch dims; strides in elements of A and B
  bool clamp;
  float lo, hi;
};

void matmul_one(const MatMulState& s, int64_t m, const float* a, const float* b, float* y) {
  GemmArgs args;
  args.m = m;
  args.n = s.n;
  args.k = s.k;
  args.a = MatrixView{a, s.k, 1};
  args.b = MatrixView{b, s.n, 1};
  args.c = y;
  args.ldc = s.n;
  args.clamp = s.clamp;
  args.clamp_min = s.lo;
  args.clamp_max = s.hi;
  gemm(args, nullptr);
}

Status run_matmul(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const MatMulState*>(state);
  const float* a = in[0]->data_as<const float>();
  const float* b = in[1]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  if (s.folded) {
    matmul_one(s, s.folded_m, a, b, y);
    return Status::ok();
  }
  const int64_t out_block = s.m * s.n;
  const int64_t sa = s.batch.strides[0][s.batch.rank - 1];
  const int64_t sb = s.batch.strides[1][s.batch.rank - 1];
  for_each_row(s.batch, [&](const int64_t* off, int64_t out_off, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
      matmul_one(s, s.m, a + off[0] + i * sa, b + off[1] + i * sb,
                 y + (out_off + i) * out_block);
    }
  });
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_matmul(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 2));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(1, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* a = ctx.input(0);
  const Tensor* b = ctx.input(1);
  if (a->dim() < 1 || b->dim() < 1) {
    return ctx.error(Error::InvalidProgram, "operands must have rank >= 1, got %d and %d",
                     a->dim(), b->dim());
  }
  const bool a_vec = a->dim() == 1, b_vec = b->dim() == 1;
  const int64_t m = a_vec ? 1 : a->size(a->dim() - 2);
  const int64_t k = a->size(a->dim() - 1);
  const int64_t kb = b_vec ? b->size(0) : b->size(b->dim() - 2);
  const int64_t n = b_vec ? 1 : b->size(b->dim() - 1);
  if (k != kb) {
    char sa[96], sb[96];
    format_sizes(a->sizes(), sa, sizeof sa);
    format_sizes(b->sizes(), sb, sizeof sb);
    return ctx.error(Error::ShapeMismatch, "A %s and B %s have inner dims %lld and %lld", sa, sb,
                     static_cast<long long>(k), static_cast<long long>(kb));
  }
  Span<const int64_t> a_batch = a_vec ? Span<const int64_t>() : a->sizes().first(a->dim() - 2);
  Span<const int64_t> b_batch = b_vec ? Span<const int64_t>() : b->sizes().first(b->dim() - 2);
  Shape batch;
  if (!broadcast_shapes(a_batch, b_batch, &batch)) {
    char sa[96], sb[96];
    format_sizes(a->sizes(), sa, sizeof sa);
    format_sizes(b->sizes(), sb, sizeof sb);
    return ctx.error(Error::ShapeMismatch, "batch dims of A %s and B %s do not broadcast", sa, sb);
  }
  Shape computed = batch;
  if (!a_vec) computed.push(m);
  if (!b_vec) computed.push(n);
  if (computed.rank > kMaxDims) {
    return ctx.error(Error::NotSupported, "output rank exceeds %d", kMaxDims);
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, computed.span()));

  TESSERA_ASSIGN_OR_RETURN(MatMulState * s, ctx.make_state<MatMulState>());
  s->m = m;
  s->n = n;
  s->k = k;
  s->clamp = ctx.activation().enabled;
  s->lo = ctx.activation().min;
  s->hi = ctx.activation().max;
  ctx.mark_activation_fused();
  int64_t b_batch_numel = 1, a_batch_numel = 1;
  for (int64_t d : b_batch) b_batch_numel *= d;
  for (int64_t d : a_batch) a_batch_numel *= d;
  if (b_batch_numel == 1 && a_batch_numel == batch.numel()) {
    // A's batch dims are the output's: A is one contiguous [batch * M, K] matrix.
    s->folded = true;
    s->folded_m = a_batch_numel * m;
    return PreparedKernel{run_matmul, s};
  }
  s->batch.rank = batch.rank;
  for (int d = 0; d < batch.rank; ++d) s->batch.sizes[d] = batch.d[d];
  broadcast_strides(a_batch, batch, s->batch.strides[0]);
  broadcast_strides(b_batch, batch, s->batch.strides[1]);
  for (int d = 0; d < batch.rank; ++d) {
    s->batch.strides[0][d] *= m * k;
    s->batch.strides[1][d] *= k * n;
  }
  coalesce(s->batch);
  return PreparedKernel{run_matmul, s};
}

}  // namespace tessera::portable
