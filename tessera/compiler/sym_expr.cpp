#include "tessera/compiler/sym_expr.h"

#include <algorithm>

namespace tessera::compiler {
namespace {

int compare_atom(const SymAtom& a, const SymAtom& b) {
  const bool ad = a.div != nullptr, bd = b.div != nullptr;
  if (ad != bd) return ad ? 1 : -1;
  if (!ad) return a.symbol < b.symbol ? -1 : (a.symbol > b.symbol ? 1 : 0);
  if (a.div == b.div) return 0;
  int c = SymExpr::compare(a.div->first, b.div->first);
  return c != 0 ? c : SymExpr::compare(a.div->second, b.div->second);
}

int compare_atoms(const std::vector<SymAtom>& a, const std::vector<SymAtom>& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    int c = compare_atom(a[i], b[i]);
    if (c != 0) return c;
  }
  return 0;
}

int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Removes the atoms of `sub` (a sorted multiset) from `atoms`; false if not all present.
bool remove_atoms(std::vector<SymAtom>* atoms, const std::vector<SymAtom>& sub) {
  std::vector<SymAtom> out;
  size_t j = 0;
  for (const SymAtom& a : *atoms) {
    if (j < sub.size() && compare_atom(a, sub[j]) == 0) {
      ++j;
    } else {
      out.push_back(a);
    }
  }
  if (j != sub.size()) return false;
  *atoms = std::move(out);
  return true;
}

std::optional<int64_t> eval_atom(const SymAtom& a, const std::vector<int64_t>& symbols) {
  if (!a.div) {
    if (a.symbol < 0 || static_cast<size_t>(a.symbol) >= symbols.size()) return std::nullopt;
    return symbols[a.symbol];
  }
  auto n = a.div->first.eval(symbols);
  auto d = a.div->second.eval(symbols);
  if (!n || !d || *d == 0) return std::nullopt;
  if (*n == INT64_MIN && *d == -1) return std::nullopt;
  return floor_div_int(*n, *d);
}

void atom_rpn(const SymAtom& a, std::vector<ir::ShapeTerm>* out) {
  if (!a.div) {
    out->push_back({fb::ShapeOp::Sym, a.symbol});
    return;
  }
  auto n = a.div->first.to_rpn();
  auto d = a.div->second.to_rpn();
  if (n.empty()) n.push_back({fb::ShapeOp::Const, a.div->first.const_value()});
  if (d.empty()) d.push_back({fb::ShapeOp::Const, a.div->second.const_value()});
  out->insert(out->end(), n.begin(), n.end());
  out->insert(out->end(), d.begin(), d.end());
  out->push_back({fb::ShapeOp::FloorDiv, 0});
}

}  // namespace

SymExpr::SymExpr(int64_t c) {
  if (c != 0) terms_.push_back({c, {}});
}

SymExpr SymExpr::symbol(int index) {
  SymExpr e;
  SymAtom a;
  a.symbol = index;
  e.terms_.push_back({1, {a}});
  return e;
}

bool SymExpr::is_const() const {
  return terms_.empty() || (terms_.size() == 1 && terms_[0].atoms.empty());
}

int64_t SymExpr::const_value() const {
  if (terms_.empty()) return 0;
  return terms_[0].atoms.empty() ? terms_[0].coeff : 0;
}

int SymExpr::compare(const SymExpr& a, const SymExpr& b) {
  if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
  for (size_t i = 0; i < a.terms_.size(); ++i) {
    int c = compare_atoms(a.terms_[i].atoms, b.terms_[i].atoms);
    if (c != 0) return c;
    if (a.terms_[i].coeff != b.terms_[i].coeff) return a.terms_[i].coeff < b.terms_[i].coeff ? -1 : 1;
  }
  return 0;
}

void SymExpr::normalize() {
  for (Term& t : terms_) {
    std::sort(t.atoms.begin(), t.atoms.end(),
              [](const SymAtom& x, const SymAtom& y) { return compare_atom(x, y) < 0; });
  }
  std::sort(terms_.begin(), terms_.end(),
            [](const Term& x, const Term& y) { return compare_atoms(x.atoms, y.atoms) < 0; });
  std::vector<Term> merged;
  for (Term& t : terms_) {
    if (!merged.empty() && compare_atoms(merged.back().atoms, t.atoms) == 0) {
      merged.back().coeff = static_cast<int64_t>(static_cast<uint64_t>(merged.back().coeff) +
                                                 static_cast<uint64_t>(t.coeff));
    } else {
      merged.push_back(std::move(t));
    }
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(), [](const Term& t) { return t.coeff == 0; }),
               merged.end());
  terms_ = std::move(merged);
}

SymExpr operator+(const SymExpr& a, const SymExpr& b) {
  SymExpr r = a;
  r.terms_.insert(r.terms_.end(), b.terms_.begin(), b.terms_.end());
  r.normalize();
  return r;
}

SymExpr operator-(const SymExpr& a) {
  SymExpr r = a;
  for (SymExpr::Term& t : r.terms_) t.coeff = -t.coeff;
  return r;
}

SymExpr operator-(const SymExpr& a, const SymExpr& b) { return a + (-b); }

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  SymExpr r;
  for (const SymExpr::Term& x : a.terms_) {
    for (const SymExpr::Term& y : b.terms_) {
      SymExpr::Term t;
      t.coeff = static_cast<int64_t>(static_cast<uint64_t>(x.coeff) * static_cast<uint64_t>(y.coeff));
      t.atoms = x.atoms;
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      r.terms_.push_back(std::move(t));
    }
  }
  r.normalize();
  return r;
}

SymExpr SymExpr::floor_div(const SymExpr& a, const SymExpr& b) {
  if (b.is_const()) {
    const int64_t c = b.const_value();
    if (c == 1) return a;
    if (c != 0 && a.is_const()) {
      if (a.const_value() == INT64_MIN && c == -1) return a;
      return SymExpr(floor_div_int(a.const_value(), c));
    }
    if (c > 0) {
      bool exact = std::all_of(a.terms_.begin(), a.terms_.end(),
                               [&](const Term& t) { return t.coeff % c == 0; });
      if (exact) {
        SymExpr r = a;
        for (Term& t : r.terms_) t.coeff /= c;
        return r;
      }
    }
  } else if (a == b) {
    return SymExpr(1);
  } else if (b.terms_.size() == 1 && b.terms_[0].coeff > 0) {
    // Division by a monomial: exact when every term of `a` contains it.
    const Term& m = b.terms_[0];
    SymExpr r = a;
    bool exact = !r.terms_.empty();
    for (Term& t : r.terms_) {
      if (t.coeff % m.coeff != 0 || !remove_atoms(&t.atoms, m.atoms)) {
        exact = false;
        break;
      }
      t.coeff /= m.coeff;
    }
    if (exact) {
      r.normalize();
      return r;
    }
  }
  // floor(floor(x / p) / q) == floor(x / (p * q)) for positive constants p, q.
  if (b.is_const() && b.const_value() > 0 && a.terms_.size() == 1 && a.terms_[0].coeff == 1 &&
      a.terms_[0].atoms.size() == 1 && a.terms_[0].atoms[0].div &&
      a.terms_[0].atoms[0].div->second.is_const() && a.terms_[0].atoms[0].div->second.const_value() > 0) {
    const auto& inner = *a.terms_[0].atoms[0].div;
    return floor_div(inner.first, SymExpr(inner.second.const_value() * b.const_value()));
  }
  SymExpr r;
  SymAtom atom;
  atom.div = std::make_shared<const std::pair<SymExpr, SymExpr>>(a, b);
  r.terms_.push_back({1, {atom}});
  return r;
}

SymExpr SymExpr::ceil_div(const SymExpr& a, const SymExpr& b) {
  return floor_div(a + b - SymExpr(1), b);
}

bool SymExpr::mentions(int index) const {
  std::vector<int> syms;
  collect_symbols(&syms);
  return std::find(syms.begin(), syms.end(), index) != syms.end();
}

void SymExpr::collect_symbols(std::vector<int>* out) const {
  for (const Term& t : terms_) {
    for (const SymAtom& a : t.atoms) {
      if (a.div) {
        a.div->first.collect_symbols(out);
        a.div->second.collect_symbols(out);
      } else if (std::find(out->begin(), out->end(), a.symbol) == out->end()) {
        out->push_back(a.symbol);
      }
    }
  }
}

std::optional<int64_t> SymExpr::eval(const std::vector<int64_t>& symbols) const {
  int64_t sum = 0;
  for (const Term& t : terms_) {
    int64_t prod = t.coeff;
    for (const SymAtom& a : t.atoms) {
      auto v = eval_atom(a, symbols);
      if (!v || __builtin_mul_overflow(prod, *v, &prod)) return std::nullopt;
    }
    if (__builtin_add_overflow(sum, prod, &sum)) return std::nullopt;
  }
  return sum;
}

namespace {

template <typename Better>
int64_t corner_extreme(const SymExpr& e, const std::vector<ir::Symbol>& symbols, Better better) {
  if (e.is_const()) return e.const_value();
  std::vector<int> used;
  e.collect_symbols(&used);
  std::vector<int64_t> values(symbols.size(), 0);
  for (size_t i = 0; i < symbols.size(); ++i) values[i] = symbols[i].max;
  const size_t n = std::min<size_t>(used.size(), 12);
  bool have = false;
  int64_t best = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    for (size_t k = 0; k < n; ++k) {
      const int s = used[k];
      if (s < 0 || static_cast<size_t>(s) >= symbols.size()) continue;
      values[s] = (mask >> k) & 1 ? symbols[s].min : symbols[s].max;
    }
    auto v = e.eval(values);
    if (v && (!have || better(*v, best))) {
      best = *v;
      have = true;
    }
  }
  return best;
}

}  // namespace

int64_t SymExpr::upper_bound(const std::vector<ir::Symbol>& symbols) const {
  return corner_extreme(*this, symbols, [](int64_t a, int64_t b) { return a > b; });
}

int64_t SymExpr::lower_bound(const std::vector<ir::Symbol>& symbols) const {
  return corner_extreme(*this, symbols, [](int64_t a, int64_t b) { return a < b; });
}

std::vector<ir::ShapeTerm> SymExpr::to_rpn() const {
  std::vector<ir::ShapeTerm> out;
  if (is_const()) return out;
  bool first = true;
  for (const Term& t : terms_) {
    const bool negate = !first && t.coeff < 0;
    const int64_t coeff = negate ? -t.coeff : t.coeff;
    if (t.atoms.empty()) {
      out.push_back({fb::ShapeOp::Const, coeff});
    } else {
      for (size_t i = 0; i < t.atoms.size(); ++i) {
        atom_rpn(t.atoms[i], &out);
        if (i > 0) out.push_back({fb::ShapeOp::Mul, 0});
      }
      if (coeff != 1) {
        out.push_back({fb::ShapeOp::Const, coeff});
        out.push_back({fb::ShapeOp::Mul, 0});
      }
    }
    if (!first) out.push_back({negate ? fb::ShapeOp::Sub : fb::ShapeOp::Add, 0});
    first = false;
  }
  return out;
}

ir::Dim SymExpr::to_dim(const std::vector<ir::Symbol>& symbols) const {
  ir::Dim d(upper_bound(symbols));
  d.expr = to_rpn();
  return d;
}

std::string SymExpr::to_string(const std::vector<ir::Symbol>* symbols) const {
  if (terms_.empty()) return "0";
  std::string s;
  for (size_t i = 0; i < terms_.size(); ++i) {
    const Term& t = terms_[i];
    int64_t coeff = t.coeff;
    if (i > 0) {
      s += coeff < 0 ? " - " : " + ";
      if (coeff < 0) coeff = -coeff;
    }
    std::string factors;
    for (const SymAtom& a : t.atoms) {
      if (!factors.empty()) factors += "*";
      if (a.div) {
        factors += "floor((" + a.div->first.to_string(symbols) + ") / (" +
                   a.div->second.to_string(symbols) + "))";
      } else if (symbols && a.symbol >= 0 && static_cast<size_t>(a.symbol) < symbols->size()) {
        factors += (*symbols)[a.symbol].name;
      } else {
        factors += 's';  // (not "s" + to_string: GCC 12 warns -Wrestrict on that temporary)
        factors += std::to_string(a.symbol);
      }
    }
    if (factors.empty()) {
      s += std::to_string(coeff);
    } else if (coeff == 1) {
      s += factors;
    } else if (coeff == -1) {
      s += "-" + factors;
    } else {
      s += factors + "*" + std::to_string(coeff);
    }
  }
  return s;
}

SymExpr product(const std::vector<SymExpr>& dims, size_t begin, size_t end) {
  SymExpr r(1);
  end = std::min(end, dims.size());
  for (size_t i = begin; i < end; ++i) r = r * dims[i];
  return r;
}

}  // namespace tessera::compiler
