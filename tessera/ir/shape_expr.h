// Evaluation of shape expressions (symbolic dims) against the symbols' values at load.
#pragma once

#include <cstdint>

#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/ir/schema.h"

namespace tessera::ir {

inline constexpr int kMaxShapeExprDepth = 16;
inline constexpr size_t kMaxShapeExprTerms = 64;

/// Value of `dim` given `symbols` (one value per symbol of the method). Errors (InvalidProgram):
/// malformed expression, unknown symbol index, division by zero, overflow, negative result.
/// Evaluating with every symbol at its upper bound must not exceed the dim's stored `value`.
Result<int64_t> eval_dim(const fb::Dim* dim, Span<const int64_t> symbols);

/// eval_dim, and the value held to the dim's stored bound (`value`): the verifier checks a dim
/// at the symbols' upper bounds, and an expression can exceed its bound at other values.
/// Error (InvalidProgram) "evaluates to X, above its bound B"; callers prefix which dim it is.
Result<int64_t> eval_dim_within_bound(const fb::Dim* dim, Span<const int64_t> symbols);

}  // namespace tessera::ir
