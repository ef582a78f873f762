#include "tessera/ir/shape_expr.h"

namespace tessera::ir {

Result<int64_t> eval_dim(const fb::Dim* dim, Span<const int64_t> symbols) {
  if (dim == nullptr) return Status(Error::InvalidProgram, "missing dim");
  const auto* expr = dim->expr();
  if (expr == nullptr || expr->size() == 0) {
    if (dim->value() < 0) {
      return Status::error(Error::InvalidProgram, "negative dim %lld",
                           static_cast<long long>(dim->value()));
    }
    return dim->value();
  }
  if (expr->size() > kMaxShapeExprTerms) {
    return Status::error(Error::InvalidProgram, "shape expression has %u terms (max %zu)",
                         expr->size(), kMaxShapeExprTerms);
  }
  int64_t stack[kMaxShapeExprDepth];
  int depth = 0;
  for (const fb::ShapeTerm* t : *expr) {
    switch (t->op()) {
      case fb::ShapeOp::Const:
      case fb::ShapeOp::Sym: {
        if (depth == kMaxShapeExprDepth) {
          return Status(Error::InvalidProgram, "shape expression too deep");
        }
        int64_t v = t->value();
        if (t->op() == fb::ShapeOp::Sym) {
          if (v < 0 || static_cast<uint64_t>(v) >= symbols.size()) {
            return Status::error(Error::InvalidProgram,
                                 "shape expression names symbol %lld; the method has %zu",
                                 static_cast<long long>(v), symbols.size());
          }
          v = symbols[static_cast<size_t>(v)];
        }
        stack[depth++] = v;
        break;
      }
      case fb::ShapeOp::Add:
      case fb::ShapeOp::Sub:
      case fb::ShapeOp::Mul:
      case fb::ShapeOp::FloorDiv: {
        if (depth < 2) return Status(Error::InvalidProgram, "shape expression stack underflow");
        int64_t b = stack[--depth];
        int64_t a = stack[depth - 1];
        int64_t r = 0;
        bool overflow = false;
        switch (t->op()) {
          case fb::ShapeOp::Add: overflow = __builtin_add_overflow(a, b, &r); break;
          case fb::ShapeOp::Sub: overflow = __builtin_sub_overflow(a, b, &r); break;
          case fb::ShapeOp::Mul: overflow = __builtin_mul_overflow(a, b, &r); break;
          default:
            if (b == 0) return Status(Error::InvalidProgram, "shape expression divides by zero");
            if (a == INT64_MIN && b == -1) {
              overflow = true;
            } else {
              r = a / b;
              if ((a % b != 0) && ((a < 0) != (b < 0))) --r;
            }
        }
        if (overflow) return Status(Error::InvalidProgram, "shape expression overflows");
        stack[depth - 1] = r;
        break;
      }
      default:
        return Status::error(Error::InvalidProgram, "unknown shape expression op %d",
                             static_cast<int>(t->op()));
    }
  }
  if (depth != 1) {
    return Status::error(Error::InvalidProgram, "shape expression leaves %d values on the stack",
                         depth);
  }
  if (stack[0] < 0) {
    return Status::error(Error::InvalidProgram, "shape expression evaluates to %lld",
                         static_cast<long long>(stack[0]));
  }
  return stack[0];
}

Result<int64_t> eval_dim_within_bound(const fb::Dim* dim, Span<const int64_t> symbols) {
  TESSERA_ASSIGN_OR_RETURN(int64_t x, eval_dim(dim, symbols));
  if (x > dim->value()) {
    return Status::error(Error::InvalidProgram, "evaluates to %lld, above its bound %lld",
                         static_cast<long long>(x), static_cast<long long>(dim->value()));
  }
  return x;
}

}  // namespace tessera::ir
