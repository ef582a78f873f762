#include "tessera/kernels/portable/op_context.h"

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "tessera/ir/op.h"

namespace tessera::portable {

Shape::Shape(Span<const int64_t> s) {
  rank = static_cast<int>(s.size() <= kMaxDims ? s.size() : kMaxDims);
  for (int i = 0; i < rank; ++i) d[i] = s[i];
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= d[i];
  return n;
}

bool Shape::push(int64_t v) {
  if (rank >= kMaxDims) return false;
  d[rank++] = v;
  return true;
}

OpContext::OpContext(const KernelNode& kn, MemoryAllocator& allocator)
    : kn_(kn), node_(kn.node), attrs_(kn.node), allocator_(&allocator) {}

const char* OpContext::op_name() const { return ir::op_name(node_->op()); }

Status OpContext::error(Error code, const char* format, ...) const {
  char message[Status::kMaxMessage];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::string_view name = node_name();
  return Status::error(code, "%s node '%.*s': %s", op_name(), static_cast<int>(name.size()),
                       name.data(), message);
}

void OpContext::fill_label(Label* label) const {
  std::string_view name = node_name();
  std::snprintf(label->text, sizeof label->text, "%s node '%.*s'", op_name(),
                static_cast<int>(name.size()), name.data());
}

Status OpContext::out_of_memory(size_t bytes) const {
  return error(Error::MemoryAllocationFailed, "allocator exhausted (needed %zu more bytes)", bytes);
}

Result<float*> OpContext::make_scratch(size_t n) { return make_array<float>(n); }

static Status check_tensor(const OpContext& ctx, const Tensor* t, const char* kind, size_t i) {
  if (t == nullptr) return Status::ok();
  Checked c;
  int64_t n = 1;
  for (int d = 0; d < t->dim(); ++d) {
    if (t->size(d) < 0) {
      return ctx.error(Error::InvalidProgram, "%s %zu has negative size %lld at dim %d", kind, i,
                       static_cast<long long>(t->size(d)), d);
    }
    n = c.mul(n, t->size(d));
  }
  if (!c.ok() || n > (int64_t{1} << 56)) {
    return ctx.error(Error::InvalidProgram, "%s %zu has too many elements", kind, i);
  }
  if (!t->is_default_dim_order()) {
    return ctx.error(Error::NotSupported, "%s %zu has a non-default dim order", kind, i);
  }
  if (!is_valid_scalar_type(static_cast<int>(t->dtype()))) {
    return ctx.error(Error::InvalidProgram, "%s %zu has an invalid dtype %d", kind, i,
                     static_cast<int>(t->dtype()));
  }
  return Status::ok();
}

Status OpContext::validate_common() {
  for (size_t i = 0; i < kn_.inputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(check_tensor(*this, kn_.inputs[i], "input", i));
  }
  for (size_t i = 0; i < kn_.outputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(check_tensor(*this, kn_.outputs[i], "output", i));
  }
  switch (node_->activation()) {
    case fb::Activation::None:
      activation_ = Activation{};
      break;
    case fb::Activation::Relu:
      activation_ = Activation{true, 0.0f, INFINITY};
      break;
    case fb::Activation::Clip: {
      float lo = node_->activation_min();
      float hi = node_->activation_max();
      if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
        return error(Error::InvalidProgram, "fused Clip activation has an invalid range [%g, %g]",
                     static_cast<double>(lo), static_cast<double>(hi));
      }
      activation_ = Activation{true, lo, hi};
      break;
    }
    default:
      return error(Error::InvalidProgram, "unknown fused activation %d",
                   static_cast<int>(node_->activation()));
  }
  return Status::ok();
}

Status OpContext::expect_inputs(size_t min, size_t max) const {
  size_t n = kn_.inputs.size();
  // Trailing absent optional inputs do not count.
  while (n > min && kn_.inputs[n - 1] == nullptr) --n;
  if (n < min || n > max) {
    if (min == max) return error(Error::InvalidProgram, "expected %zu inputs, got %zu", min, n);
    if (max == SIZE_MAX) {
      return error(Error::InvalidProgram, "expected at least %zu inputs, got %zu", min, n);
    }
    return error(Error::InvalidProgram, "expected %zu to %zu inputs, got %zu", min, max, n);
  }
  for (size_t i = 0; i < min; ++i) {
    if (kn_.inputs[i] == nullptr) {
      return error(Error::InvalidProgram, "required input %zu is absent", i);
    }
  }
  return Status::ok();
}

Status OpContext::expect_outputs(size_t min, size_t max) const {
  size_t n = kn_.outputs.size();
  if (n < min || n > max) {
    if (min == max) return error(Error::InvalidProgram, "expected %zu outputs, got %zu", min, n);
    if (max == SIZE_MAX) {
      return error(Error::InvalidProgram, "expected at least %zu outputs, got %zu", min, n);
    }
    return error(Error::InvalidProgram, "expected %zu to %zu outputs, got %zu", min, max, n);
  }
  for (size_t i = 0; i < n; ++i) {
    if (kn_.outputs[i] == nullptr) return error(Error::InvalidProgram, "output %zu is absent", i);
  }
  return Status::ok();
}

Status OpContext::expect_output_shape(size_t i, Span<const int64_t> computed) const {
  const Tensor* out = output(i);
  Span<const int64_t> got = out->sizes();
  bool same = got.size() == computed.size();
  for (size_t d = 0; same && d < got.size(); ++d) same = got[d] == computed[d];
  if (same) return Status::ok();
  char a[96], b[96];
  format_sizes(got, a, sizeof a);
  format_sizes(computed, b, sizeof b);
  if (num_outputs() == 1) {
    return error(Error::ShapeMismatch, "output shape %s does not match computed %s", a, b);
  }
  return error(Error::ShapeMismatch, "output %zu shape %s does not match computed %s", i, a, b);
}

Status OpContext::expect_input_dtype(size_t i, std::initializer_list<ScalarType> allowed) const {
  ScalarType t = input(i)->dtype();
  for (ScalarType a : allowed) {
    if (a == t) return Status::ok();
  }
  return error(Error::NotSupported, "dtype %s of input %zu is not supported", dtype_name(t), i);
}

Status OpContext::expect_same_dtype(size_t i, ScalarType t) const {
  ScalarType got = input(i)->dtype();
  if (got == t) return Status::ok();
  return error(Error::InvalidProgram, "input %zu has dtype %s, expected %s", i, dtype_name(got),
               dtype_name(t));
}

Status OpContext::expect_output_dtype(size_t i, ScalarType t) const {
  ScalarType got = output(i)->dtype();
  if (got == t) return Status::ok();
  return error(Error::InvalidProgram, "output %zu has dtype %s, expected %s", i, dtype_name(got),
               dtype_name(t));
}

Result<int> OpContext::normalize_axis(int64_t axis, int rank, const char* what) const {
  if (axis < -rank || axis >= rank) {
    return error(Error::InvalidProgram, "%s %lld is out of range for rank %d", what,
                 static_cast<long long>(axis), rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace tessera::portable
