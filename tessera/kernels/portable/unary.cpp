// Float32 elementwise functions: Relu Clip LeakyRelu Sigmoid Tanh HardSigmoid HardSwish Erf Gelu
// Sqrt Exp Neg Reciprocal Abs Mish Elu. A fused activation is applied in the same loop.
#include <cmath>

#include "tessera/kernels/portable/ops.h"

namespace tessera::portable {
namespace {

using Op = fb::OpType;

struct Params {
  float alpha, beta;  // LeakyRelu, HardSigmoid, Elu; Clip's min and max
  float lo, hi;       // fused activation
};

struct ReluF {
  static float f(float x, const Params&) { return x < 0.0f ? 0.0f : x; }
};
// ONNX: min(max(x, min), max), so min > max yields max.
struct ClipF {
  static float f(float x, const Params& p) {
    const float t = x < p.alpha ? p.alpha : x;
    return t > p.beta ? p.beta : t;
  }
};
struct LeakyReluF {
  static float f(float x, const Params& p) { return x < 0.0f ? p.alpha * x : x; }
};
struct SigmoidF {
  static float f(float x, const Params&) {
    if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
    const float e = std::exp(x);
    return e / (1.0f + e);
  }
};
struct TanhF {
  static float f(float x, const Params&) { return std::tanh(x); }
};
struct HardSigmoidF {
  // alpha * x + beta rounded once (the product of two floats is exact in double).
  static float f(float x, const Params& p) {
    const float v = static_cast<float>(static_cast<double>(p.alpha) * x + p.beta);
    return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
  }
};
struct HardSwishF {
  // x * clamp(x / 6 + 0.5, 0, 1), written as (x + 3) / 6 to avoid cancellation near x = -3.
  static float f(float x, const Params&) {
    const float v = (x + 3.0f) / 6.0f;
    return x * (v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v));
  }
};
struct EluF {
  // alpha * (exp(x) - 1) for x < 0, with expm1 in double (exact near 0, no cancellation).
  static float f(float x, const Params& p) {
    return x < 0.0f ? static_cast<float>(p.alpha * std::expm1(static_cast<double>(x))) : x;
  }
};
struct MishF {
  // x * tanh(softplus(x)), softplus(x) = log1p(exp(x)) computed in double (exp overflows in
  // float for x > 88; tanh of a softplus above 20 is 1 in float).
  static float f(float x, const Params&) {
    const double sp =
        x > 20.0f ? static_cast<double>(x) : std::log1p(std::exp(static_cast<double>(x)));
    return static_cast<float>(static_cast<double>(x) * std::tanh(sp));
  }
};
struct ErfF {
  static float f(float x, const Params&) { return std::erf(x); }
};
struct GeluF {
  // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2): no cancellation for negative x.
  static float f(float x, const Params&) {
    return 0.5f * x * std::erfc(-x * 0.70710678118654752f);
  }
};
struct GeluTanhF {
  // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
  static float f(float x, const Params&) {
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + std::exp(-2.0f * u));
  }
};
struct SqrtF {
  static float f(float x, const Params&) { return std::sqrt(x); }
};
struct ExpF {
  static float f(float x, const Params&) { return std::exp(x); }
};
struct NegF {
  static float f(float x, const Params&) { return -x; }
};
struct ReciprocalF {
  static float f(float x, const Params&) { return 1.0f / x; }
};
struct AbsF {
  static float f(float x, const Params&) { return std::fabs(x); }
};

using UnaryFn = void (*)(const float* x, float* y, int64_t n, const Params& p);

template <typename F, bool kClamp>
void unary_loop(const float* x, float* y, int64_t n, const Params& p) {
  for (int64_t i = 0; i < n; ++i) {
    float v = F::f(x[i], p);
    if constexpr (kClamp) v = v < p.lo ? p.lo : (v > p.hi ? p.hi : v);
    y[i] = v;
  }
}

template <typename F>
UnaryFn unary_fn(bool clamp) {
  return clamp ? unary_loop<F, true> : unary_loop<F, false>;
}

struct UnaryState {
  UnaryFn fn;
  int64_t n;
  Params params;
};

Status run_unary(const void* state, Span<const Tensor* const> in, Span<Tensor* const> out) {
  const auto& s = *static_cast<const UnaryState*>(state);
  s.fn(in[0]->data_as<const float>(), out[0]->data_as<float>(), s.n, s.params);
  return Status::ok();
}

}  // namespace

Result<PreparedKernel> prepare_unary(OpContext& ctx) {
  TESSERA_RETURN_IF_ERROR(ctx.expect_inputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_outputs(1, 1));
  TESSERA_RETURN_IF_ERROR(ctx.expect_input_dtype(0, {ScalarType::Float32}));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_dtype(0, ScalarType::Float32));
  TESSERA_RETURN_IF_ERROR(ctx.expect_output_shape(0, ctx.input(0)->sizes()));
  const bool clamp = ctx.activation().enabled;
  Params p{0.0f, 0.0f, ctx.activation().min, ctx.activation().max};
  UnaryFn fn = nullptr;
  switch (ctx.op()) {
    case Op::Relu: fn = unary_fn<ReluF>(clamp); break;
    case Op::Clip: {
      TESSERA_ASSIGN_OR_RETURN(const ir::ClipAttrs a, ctx.read_attrs<ir::ClipAttrs>());
      p.alpha = a.min;
      p.beta = a.max;
      if (std::isnan(p.alpha) || std::isnan(p.beta)) {
        return ctx.error(Error::InvalidProgram, "min and max must not be NaN");
      }
      fn = unary_fn<ClipF>(clamp);
      break;
    }
    case Op::LeakyRelu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::LeakyReluAttrs a, ctx.read_attrs<ir::LeakyReluAttrs>());
      p.alpha = a.alpha;
      fn = unary_fn<LeakyReluF>(clamp);
      break;
    }
    case Op::Sigmoid: fn = unary_fn<SigmoidF>(clamp); break;
    case Op::Tanh: fn = unary_fn<TanhF>(clamp); break;
    case Op::HardSigmoid: {
      TESSERA_ASSIGN_OR_RETURN(const ir::HardSigmoidAttrs a,
                               ctx.read_attrs<ir::HardSigmoidAttrs>());
      p.alpha = a.alpha;
      p.beta = a.beta;
      fn = unary_fn<HardSigmoidF>(clamp);
      break;
    }
    case Op::HardSwish: fn = unary_fn<HardSwishF>(clamp); break;
    case Op::Erf: fn = unary_fn<ErfF>(clamp); break;
    case Op::Gelu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::GeluAttrs a, ctx.read_attrs<ir::GeluAttrs>());
      const std::string_view approx = a.approximate;
      if (approx == "none") {
        fn = unary_fn<GeluF>(clamp);
      } else if (approx == "tanh") {
        fn = unary_fn<GeluTanhF>(clamp);
      } else {
        return ctx.error(Error::InvalidProgram, "approximate is '%.*s', expected none or tanh",
                         static_cast<int>(approx.size()), approx.data());
      }
      break;
    }
    case Op::Sqrt: fn = unary_fn<SqrtF>(clamp); break;
    case Op::Exp: fn = unary_fn<ExpF>(clamp); break;
    case Op::Neg: fn = unary_fn<NegF>(clamp); break;
    case Op::Reciprocal: fn = unary_fn<ReciprocalF>(clamp); break;
    case Op::Abs: fn = unary_fn<AbsF>(clamp); break;
    case Op::Mish:
      fn = unary_fn<MishF>(clamp);
      break;
    case Op::Elu: {
      TESSERA_ASSIGN_OR_RETURN(const ir::EluAttrs a, ctx.read_attrs<ir::EluAttrs>());
      p.alpha = a.alpha;
      fn = unary_fn<EluF>(clamp);
      break;
    }
    default: return ctx.error(Error::Internal, "not a unary op");
  }
  if (clamp) ctx.mark_activation_fused();
  TESSERA_ASSIGN_OR_RETURN(UnaryState * s, ctx.make_state<UnaryState>());
  *s = UnaryState{fn, ctx.input(0)->numel(), p};
  return PreparedKernel{run_unary, s};
}

}  // namespace tessera::portable
