// Broadcasting elementwise ops: Add Sub Mul Div Pow Min Max (float32, int64, int32; Min and Max
// variadic), Equal Less Greater (float32, int64, int32, int8, uint8, bool -> bool), Where (any
// dtype), PRelu (float32).
#include <cmath>
#include <cstring>
#include <type_traits>

#include "tessera/kernels/portable/loops.h"
#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

constexpr size_t kMaxVariadicInputs = 16;

// ---- arithmetic --------------------------------------------------------------------------------

struct AddF {
  static float f(float a, float b) { return a + b; }
};
struct SubF {
  static float f(float a, float b) { return a - b; }
};
struct MulF {
  static float f(float a, float b) { return a * b; }
};
struct DivF {
  static float f(float a, float b) { return a / b; }
};
struct PowF {
  static float f(float a, float b) { return std::pow(a, b); }
};
// Min and Max propagate NaN, like numpy's minimum/maximum.
struct MinF {
  static float f(float a, float b) { return (a != a || b != b) ? a + b : (b < a ? b : a); }
};
struct MaxF {
  static float f(float a, float b) { return (a != a || b != b) ? a + b : (b > a ? b : a); }
};

using ArithRowFn = void (*)(const float* a, int64_t sa, const float* b, int64_t sb, float* out,
                            int64_t n, float lo, float hi);

template <typename F, bool kClamp>
inline float finish(float a, float b, float lo, float hi) {
  float v = F::f(a, b);
  if constexpr (kClamp) v = v < lo ? lo : (v > hi ? hi : v);
  return v;
}

template <typename F, bool kClamp>
void arith_row(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n,
               float lo, float hi) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = finish<F, kClamp>(a[i], b[i], lo, hi);
  } else if (sa == 1 && sb == 0) {
    const float bv = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = finish<F, kClamp>(a[i], bv, lo, hi);
  } else if (sa == 0 && sb == 1) {
    const float av = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = finish<F, kClamp>(av, b[i], lo, hi);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = finish<F, kClamp>(a[i * sa], b[i * sb], lo, hi);
  }
}

template <typename F>
ArithRowFn arith_fn(bool clamp) {
  return clamp ? arith_row<F, true> : arith_row<F, false>;
}

ArithRowFn arith_fn(Op op, bool clamp) {
  switch (op) {
    case Op::Add: return arith_fn<AddF>(clamp);
    case Op::Sub: return arith_fn<SubF>(clamp);
    case Op::Mul: return arith_fn<MulF>(clamp);
    case Op::Div: return arith_fn<DivF>(clamp);
    case Op::Pow: return arith_fn<PowF>(clamp);
    case Op::Min: return arith_fn<MinF>(clamp);
    default: return arith_fn<MaxF>(clamp);
  }
}

// Step 0 computes op(in0, in1) into the output; step s > 0 computes op(out, in[s + 1]) in place.
struct ArithState {
  ArithRowFn fn;        // without clamp
  ArithRowFn last_fn;   // the last step: with the fused activation's clamp if any
  float lo, hi;
  int64_t steps;
  const StridedLoop<2>* loops;  // allocator memory, `steps` entries
  int64_t copy_bytes;           // one input (Min/Max): plain copy
};

Status run_arith(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const ArithState*>(state);
  float* y = out[0]->data_as<float>();
  if (s.steps == 0) {
    if (s.copy_bytes > 0) std::memcpy(y, in[0]->data(), static_cast<size_t>(s.copy_bytes));
    return Status::ok();
  }
  for (int64_t step = 0; step < s.steps; ++step) {
    const StridedLoop<2>& loop = s.loops[step];
    const float* a = step == 0 ? in[0]->data_as<const float>() : y;
    const float* b = in[step + 1]->data_as<const float>();
    const ArithRowFn fn = step + 1 == s.steps ? s.last_fn : s.fn;
    const int64_t sa = loop.strides[0][loop.rank - 1];
    const int64_t sb = loop.strides[1][loop.rank - 1];
    for_each_row(loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
      fn(a + off[0], sa, b + off[1], sb, y + out_off, n, s.lo, s.hi);
    });
  }
  return Status::ok();
}

// The loop reading `a` and `b` broadcast to `out`.
template <int N>
void make_loop(StridedLoop<N>* loop, const Shape& out, std::initializer_list<Span<const int64_t>> shapes) {
  loop->rank = out.rank;
  for (int d = 0; d < out.rank; ++d) loop->sizes[d] = out.d[d];
  int k = 0;
  for (Span<const int64_t> s : shapes) broadcast_strides(s, out, loop->strides[k++]);
  coalesce(*loop);
}

// Integer arithmetic (int64, int32: the shape arithmetic of exported models). Add, Sub, Mul and
// Pow wrap around as two's complement; Div truncates toward zero. A row returns false on a zero
// divisor or a negative exponent, which fail the run.
template <typename T>
using Unsigned = std::make_unsigned_t<T>;

struct AddI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    *r = static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
    return true;
  }
};
struct SubI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    *r = static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
    return true;
  }
};
struct MulI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    *r = static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
    return true;
  }
};
struct DivI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    if (b == 0) return false;
    // The one quotient that overflows wraps to the minimum, as the other ops do.
    *r = (b == -1) ? static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(a)) : a / b;
    return true;
  }
};
struct PowI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    if (b < 0) return false;
    Unsigned<T> base = static_cast<Unsigned<T>>(a), acc = 1;
    for (T e = b; e > 0; e >>= 1) {
      if (e & 1) acc = static_cast<Unsigned<T>>(acc * base);
      base = static_cast<Unsigned<T>>(base * base);
    }
    *r = static_cast<T>(acc);
    return true;
  }
};
struct MinI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    *r = b < a ? b : a;
    return true;
  }
};
struct MaxI {
  template <typename T>
  static bool f(T a, T b, T* r) {
    *r = b > a ? b : a;
    return true;
  }
};

using IntRowFn = bool (*)(const void* a, int64_t sa, const void* b, int64_t sb, void* out,
                          int64_t n);

template <typename F, typename T>
bool int_row(const void* av, int64_t sa, const void* bv, int64_t sb, void* outv, int64_t n) {
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  T* out = static_cast<T*>(outv);
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) ok &= F::f(a[i * sa], b[i * sb], &out[i]);
  return ok;
}

template <typename T>
IntRowFn int_fn(Op op) {
  switch (op) {
    case Op::Add:
      return int_row<AddI, T>;
    case Op::Sub:
      return int_row<SubI, T>;
    case Op::Mul:
      return int_row<MulI, T>;
    case Op::Div:
      return int_row<DivI, T>;
    case Op::Pow:
      return int_row<PowI, T>;
    case Op::Min:
      return int_row<MinI, T>;
    default:
      return int_row<MaxI, T>;
  }
}

// As ArithState, for integers; offsets are scaled by the element size.
struct IntArithState {
  IntRowFn fn;
  int64_t esize;
  int64_t steps;
  const StridedLoop<2>* loops;  // allocator memory, `steps` entries
  int64_t copy_bytes;
  const char* failure;  // what a false row means (a string literal)
  Label label;
};

Status run_int_arith(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const IntArithState*>(state);
  auto* y = static_cast<uint8_t*>(out[0]->data());
  if (s.steps == 0) {
    if (s.copy_bytes > 0) std::memcpy(y, in[0]->data(), static_cast<size_t>(s.copy_bytes));
    return Status::ok();
  }
  bool ok = true;
  for (int64_t step = 0; step < s.steps; ++step) {
    const StridedLoop<2>& loop = s.loops[step];
    const auto* a = step == 0 ? static_cast<const uint8_t*>(in[0]->data()) : y;
    const auto* b = static_cast<const uint8_t*>(in[step + 1]->data());
    const int64_t sa = loop.strides[0][loop.rank - 1];
    const int64_t sb = loop.strides[1][loop.rank - 1];
    for_each_row(loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
      ok &= s.fn(a + off[0] * s.esize, sa, b + off[1] * s.esize, sb, y + out_off * s.esize, n);
    });
  }
  if (!ok) {
    return Status::error(Error::InvalidArgument, "%s: %s", s.label.text, s.failure);
  }
  return Status::ok();
}

Status broadcast_error(const OpContext& ctx, const Tensor* a, const Tensor* b) {
  char sa[96], sb[96];
  format_sizes(a->sizes(), sa, sizeof sa);
  format_sizes(b->sizes(), sb, sizeof sb);
  return ctx.error(Error::ShapeMismatch, "shapes %s and %s cannot be broadcast together", sa, sb);
}

// The broadcast shape of every present input.
Status broadcast_inputs(const OpContext& ctx, size_t n, Shape* out) {
  *out = Shape(ctx.input(0)->sizes());
  for (size_t i = 1; i < n; ++i) {
    Shape next;
    if (!broadcast_shapes(out->span(), ctx.input(i)->sizes(), &next)) {
      return broadcast_error(ctx, ctx.input(i - 1), ctx.input(i));
    }
    *out = next;
  }
  return Status::ok();
}

// The loops of the steps of an n-input op: step 0 reads inputs 0 and 1, step s > 0 the output
// and input s + 1.
Result<const StridedLoop<2>*> make_step_loops(OpContext& ctx, size_t n, const Shape& out) {
  TESSERA_ASSIGN_OR_RETURN(StridedLoop<2> * loops, ctx.make_array<StridedLoop<2>>(n - 1));
  for (size_t step = 0; step + 1 < n; ++step) {
    new (&loops[step]) StridedLoop<2>();
    Span<const int64_t> a = step == 0 ? ctx.input(0)->sizes() : out.span();
    make_loop(&loops[step], out, {a, ctx.input(step + 1)->sizes()});
  }
  return static_cast<const StridedLoop<2>*>(loops);
}

// Integer Add Sub Mul Div Pow Min Max; a fused activation is left to the generic wrapper, which
// rejects it (float32 outputs only).
Result<PreparedKernel> prepare_int_arithmetic(OpContext& ctx, const Shape& out, ScalarType t) {
  const size_t n = ctx.num_inputs();
  TESSERA_ASSIGN_OR_RETURN(IntArithState * s, ctx.make_state<IntArithState>());
  s->fn = t == ScalarType::Int64 ? int_fn<int64_t>(ctx.op()) : int_fn<int32_t>(ctx.op());
  s->esize = static_cast<int64_t>(element_size(t));
  s->steps = static_cast<int64_t>(n) - 1;
  s->failure = ctx.op() == Op::Pow ? "negative integer exponent" : "integer division by zero";
  ctx.fill_label(&s->label);
  if (n == 1) {
    s->copy_bytes = out.numel() * s->esize;
    return PreparedKernel{run_int_arith, s};
  }
  TESSERA_ASSIGN_OR_RETURN(s->loops, make_step_loops(ctx, n, out));
  return PreparedKernel{run_int_arith, s};
}

}  // namespace

Result<PreparedKernel> prepare_arithmetic(OpContext& ctx) {
  const bool variadic = ctx.op() == Op::Min || ctx.op() == Op::Max;
  const size_t n = ctx.num_inputs();
  if (variadic) {
    TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, kMaxVariadicInputs));
    for (size_t i = 0; i < n; ++i) {
      if (ctx.input(i) == nullptr) {
        return ctx.error(Error::InvalidProgram, "input %zu is absent", i);
      }
    }
  } else {
    TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 2));
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(
      ctx.expect_input_dtype(0, {ScalarType::Float32, ScalarType::Int64, ScalarType::Int32}));
  const ScalarType t = ctx.input(0)->dtype();
  for (size_t i = 1; i < n; ++i) TESSERA_RETURN_IF_ERROR(ctx.expect_same_dtype(i, t));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, t));
  Shape out;
  TESSERA_RETURN_IF_ERROR(broadcast_inputs(ctx, n, &out));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, out.span()));
  if (t != ScalarType::Float32) return prepare_int_arithmetic(ctx, out, t);

  TESSERA_ASSIGN_OR_RETURN(ArithState * s, ctx.make_state<ArithState>());
  const Activation& act = ctx.activation();
  s->fn = arith_fn(ctx.op(), false);
  s->last_fn = arith_fn(ctx.op(), act.enabled);
  s->lo = act.min;
  s->hi = act.max;
  s->steps = static_cast<int64_t>(n) - 1;
  if (n == 1) {
    s->copy_bytes = out.numel() * 4;
    return PreparedKernel{run_arith, s};  // the generic wrapper applies any activation
  }
  ctx.mark_activation_fused();
  TESSERA_ASSIGN_OR_RETURN(s->loops, make_step_loops(ctx, n, out));
  return PreparedKernel{run_arith, s};
}

// ---- comparisons -------------------------------------------------------------------------------

namespace {

struct EqualF {
  template <typename T>
  static bool f(T a, T b) { return a == b; }
};
struct LessF {
  template <typename T>
  static bool f(T a, T b) { return a < b; }
};
struct GreaterF {
  template <typename T>
  static bool f(T a, T b) { return a > b; }
};

using CompareRowFn = void (*)(const void* a, int64_t sa, const void* b, int64_t sb, uint8_t* out,
                              int64_t n);

template <typename F, typename T>
void compare_row(const void* av, int64_t sa, const void* bv, int64_t sb, uint8_t* out, int64_t n) {
  const T* a = static_cast<const T*>(av);
  const T* b = static_cast<const T*>(bv);
  for (int64_t i = 0; i < n; ++i) out[i] = F::f(a[i * sa], b[i * sb]) ? 1 : 0;
}

template <typename F>
CompareRowFn compare_fn(ScalarType t) {
  switch (t) {
    case ScalarType::Int64: return compare_row<F, int64_t>;
    case ScalarType::Int32: return compare_row<F, int32_t>;
    case ScalarType::Int8:
      return compare_row<F, int8_t>;
    case ScalarType::UInt8:
    case ScalarType::Bool:
      return compare_row<F, uint8_t>;
    default: return compare_row<F, float>;
  }
}

struct CompareState {
  CompareRowFn fn;
  int64_t esize;
  StridedLoop<2> loop;
};

Status run_compare(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const CompareState*>(state);
  const auto* a = static_cast<const uint8_t*>(in[0]->data());
  const auto* b = static_cast<const uint8_t*>(in[1]->data());
  auto* y = static_cast<uint8_t*>(out[0]->data());
  const int64_t sa = s.loop.strides[0][s.loop.rank - 1];
  const int64_t sb = s.loop.strides[1][s.loop.rank - 1];
  for_each_row(s.loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
    s.fn(a + off[0] * s.esize, sa, b + off[1] * s.esize, sb, y + out_off, n);
  });
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_compare(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 2));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(
      ctx.expect_input_dtype(0, {ScalarType::Float32, ScalarType::Int64, ScalarType::Int32,
                                 ScalarType::Int8, ScalarType::UInt8, ScalarType::Bool}));
  const ScalarType t = ctx.input(0)->dtype();
  TESSERA_RETURN_IF_ERROR(ctx.expect_same_dtype(1, t));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Bool));
  Shape out;
  TESSERA_RETURN_IF_ERROR(broadcast_inputs(ctx, 2, &out));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, out.span()));
  TESSERA_ASSIGN_OR_RETURN(CompareState * s, ctx.make_state<CompareState>());
  switch (ctx.op()) {
    case Op::Equal: s->fn = compare_fn<EqualF>(t); break;
    case Op::Less: s->fn = compare_fn<LessF>(t); break;
    default: s->fn = compare_fn<GreaterF>(t); break;
  }
  s->esize = static_cast<int64_t>(element_size(t));
  make_loop(&s->loop, out, {ctx.input(0)->sizes(), ctx.input(1)->sizes()});
  return PreparedKernel{run_compare, s};
}

// ---- Where -------------------------------------------------------------------------------------

namespace {

using WhereRowFn = void (*)(const uint8_t* c, int64_t sc, const void* x, int64_t sx, const void* y,
                            int64_t sy, void* out, int64_t n);

template <typename T>
void where_row(const uint8_t* c, int64_t sc, const void* xv, int64_t sx, const void* yv,
               int64_t sy, void* outv, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  const T* y = static_cast<const T*>(yv);
  T* out = static_cast<T*>(outv);
  for (int64_t i = 0; i < n; ++i) out[i] = c[i * sc] ? x[i * sx] : y[i * sy];
}

struct WhereState {
  WhereRowFn fn;
  int64_t esize;
  StridedLoop<3> loop;
};

Status run_where(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const WhereState*>(state);
  const auto* c = static_cast<const uint8_t*>(in[0]->data());
  const auto* x = static_cast<const uint8_t*>(in[1]->data());
  const auto* y = static_cast<const uint8_t*>(in[2]->data());
  auto* o = static_cast<uint8_t*>(out[0]->data());
  const int r = s.loop.rank - 1;
  for_each_row(s.loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
    s.fn(c + off[0], s.loop.strides[0][r], x + off[1] * s.esize, s.loop.strides[1][r],
         y + off[2] * s.esize, s.loop.strides[2][r], o + out_off * s.esize, n);
  });
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_where(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(3, 3));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Bool}));
  const ScalarType t = ctx.input(1)->dtype();
  TESSERA_RETURN_IF_ERROR(ctx.expect_same_dtype(2, t));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, t));
  Shape out;
  TESSERA_RETURN_IF_ERROR(broadcast_inputs(ctx, 3, &out));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, out.span()));
  TESSERA_ASSIGN_OR_RETURN(WhereState * s, ctx.make_state<WhereState>());
  s->esize = static_cast<int64_t>(element_size(t));
  switch (s->esize) {
    case 1: s->fn = where_row<uint8_t>; break;
    case 2: s->fn = where_row<uint16_t>; break;
    case 4: s->fn = where_row<uint32_t>; break;
    default: s->fn = where_row<uint64_t>; break;
  }
  make_loop(&s->loop, out,
            {ctx.input(0)->sizes(), ctx.input(1)->sizes(), ctx.input(2)->sizes()});
  return PreparedKernel{run_where, s};
}

// ---- PRelu -------------------------------------------------------------------------------------

namespace {

struct PreluState {
  StridedLoop<2> loop;
};

Status run_prelu(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& loop = static_cast<const PreluState*>(state)->loop;
  const float* x = in[0]->data_as<const float>();
  const float* slope = in[1]->data_as<const float>();
  float* y = out[0]->data_as<float>();
  const int64_t sx = loop.strides[0][loop.rank - 1];
  const int64_t ss = loop.strides[1][loop.rank - 1];
  for_each_row(loop, [&](const int64_t* off, int64_t out_off, int64_t n) {
    const float* xr = x + off[0];
    const float* sr = slope + off[1];
    float* yr = y + out_off;
    if (sx == 1 && ss == 0) {
      const float a = *sr;
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] < 0.0f ? xr[i] * a : xr[i];
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float v = xr[i * sx];
        yr[i] = v < 0.0f ? v * sr[i * ss] : v;
      }
    }
  });
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_prelu(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(2, 2));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(1, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  const Tensor* x = ctx.input(0);
  Shape out;
  Shape xs(x->sizes());
  bool ok = broadcast_shapes(x->sizes(), ctx.input(1)->sizes(), &out) && out.rank == xs.rank;
  for (int d = 0; ok && d < xs.rank; ++d) ok = out.d[d] == xs.d[d];
  if (!ok) {
    char a[96], b[96];
    format_sizes(ctx.input(1)->sizes(), a, sizeof a);
    format_sizes(x->sizes(), b, sizeof b);
    return ctx.error(Error::ShapeMismatch, "slope shape %s does not broadcast to X shape %s", a, b);
  }
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, xs.span()));
  TESSERA_ASSIGN_OR_RETURN(PreluState * s, ctx.make_state<PreluState>());
  make_loop(&s->loop, xs, {x->sizes(), ctx.input(1)->sizes()});
  return PreparedKernel{run_prelu, s};
}

}  // namespace tessera::portable
