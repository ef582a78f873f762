// SymExpr: an integer expression over a method's symbols (such as `batch`), kept in a canonical
// polynomial form so that equal shapes compare equal (`batch * 16` == `16 * batch`) and exact
// quotients simplify (`batch * 116 / 58` == `batch * 2`). A quotient that does not simplify is
// kept as an opaque floor-division atom. Used for tensor dims and for the elements of shape
// tensors while importing; lowered to the program's reverse-Polish ir::Dim at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"

namespace tessera::compiler {

class SymExpr;

/// A factor of a monomial: a symbol, or an irreducible floor division.
struct SymAtom {
  int symbol = -1;                                          // >= 0 for a symbol
  std::shared_ptr<const std::pair<SymExpr, SymExpr>> div;   // set for floor(num / den)
};

class SymExpr {
 public:
  struct Term {
    int64_t coeff = 0;
    std::vector<SymAtom> atoms;  // sorted; empty for the constant term
  };

  SymExpr() = default;                 // 0
  SymExpr(int64_t c);                  // NOLINT: implicit from a constant
  static SymExpr symbol(int index);
  /// floor(a / b); simplified when exact. `b` must not be the constant 0.
  static SymExpr floor_div(const SymExpr& a, const SymExpr& b);
  /// ceil(a / b) for non-negative operands.
  static SymExpr ceil_div(const SymExpr& a, const SymExpr& b);

  bool is_const() const;
  /// The constant; only meaningful when is_const().
  int64_t const_value() const;
  /// True if the expression mentions symbol `index` (directly or inside a quotient).
  bool mentions(int index) const;
  /// Every symbol the expression mentions.
  void collect_symbols(std::vector<int>* out) const;

  /// The value with each symbol i at `symbols[i]`; nullopt on division by zero or overflow.
  std::optional<int64_t> eval(const std::vector<int64_t>& symbols) const;
  /// The largest and smallest value over the corners of the symbols' [min, max] boxes.
  int64_t upper_bound(const std::vector<ir::Symbol>& symbols) const;
  int64_t lower_bound(const std::vector<ir::Symbol>& symbols) const;

  /// Reverse-Polish form for ir::Dim (empty for a constant).
  std::vector<ir::ShapeTerm> to_rpn() const;
  /// The ir::Dim for this expression (upper bound as its value).
  ir::Dim to_dim(const std::vector<ir::Symbol>& symbols) const;
  /// Readable form, e.g. "batch*16"; symbols by name when given.
  std::string to_string(const std::vector<ir::Symbol>* symbols = nullptr) const;

  const std::vector<Term>& terms() const { return terms_; }

  friend SymExpr operator+(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator*(const SymExpr& a, const SymExpr& b);
  friend SymExpr operator-(const SymExpr& a);
  friend bool operator==(const SymExpr& a, const SymExpr& b) { return compare(a, b) == 0; }
  friend bool operator!=(const SymExpr& a, const SymExpr& b) { return compare(a, b) != 0; }

  /// Total order on canonical forms (for sorting and equality).
  static int compare(const SymExpr& a, const SymExpr& b);

 private:
  void normalize();
  std::vector<Term> terms_;  // sorted by atoms, no zero coefficients
};

/// Product of `dims[begin, end)`.
SymExpr product(const std::vector<SymExpr>& dims, size_t begin = 0, size_t end = SIZE_MAX);

}  // namespace tessera::compiler
