#include "tessera/runtime/dim_resolution.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tessera/core/tensor.h"
#include "tessera/ir/shape_expr.h"
#include "tessera/runtime/load_options.h"

namespace tessera::internal {
namespace {

template <typename T>
uint32_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

// Appends printf output to `buf` at `*pos`, never past `size`.
template <typename... Args>
void append(char* buf, size_t size, size_t* pos, const char* format, Args... args) {
  if (*pos >= size) return;
  int written = std::snprintf(buf + *pos, size - *pos, format, args...);
  if (written > 0) *pos = std::min(size - 1, *pos + static_cast<size_t>(written));
}

// A given input shape, matched to the method's input.
struct GivenInput {
  uint32_t input;  // position among the method's inputs
  const fb::Value* value;
  const LoadOptions::InputShape* shape;
};

const char* symbol_name(const fb::Method* m, int64_t index) {
  if (index < 0 || static_cast<uint64_t>(index) >= count(m->symbols())) return "?";
  return m->symbols()->Get(static_cast<uint32_t>(index))->name()->c_str();
}

// The symbol a dim is, if it is exactly one symbol; else -1.
int64_t plain_symbol(const fb::Dim* dim) {
  const auto* expr = dim->expr();
  if (expr == nullptr || expr->size() != 1 || expr->Get(0)->op() != fb::ShapeOp::Sym) return -1;
  return expr->Get(0)->value();
}

// "input 'x'" (or "input 0" for an unnamed input).
const char* input_label(const GivenInput& g, char* buf, size_t size) {
  if (g.value->name() != nullptr && g.value->name()->size() > 0) {
    std::snprintf(buf, size, "input '%s'", g.value->name()->c_str());
  } else {
    std::snprintf(buf, size, "input %u", g.input);
  }
  return buf;
}

const char* given_sizes(const GivenInput& g, char* buf, size_t size) {
  return format_sizes(Span<const int64_t>(g.shape->sizes, g.shape->rank), buf, size);
}

// One dim as the program declares it: 4, batch, (2 * batch).
void format_dim(const fb::Method* m, const fb::Dim* dim, char* buf, size_t size) {
  const auto* expr = dim->expr();
  if (expr == nullptr || expr->size() == 0) {
    std::snprintf(buf, size, "%lld", static_cast<long long>(dim->value()));
    return;
  }
  char stack[ir::kMaxShapeExprDepth][48];
  int depth = 0;
  for (const fb::ShapeTerm* t : *expr) {
    const char* op = nullptr;
    switch (t->op()) {
      case fb::ShapeOp::Const:
      case fb::ShapeOp::Sym:
        if (depth == ir::kMaxShapeExprDepth) break;
        if (t->op() == fb::ShapeOp::Const) {
          std::snprintf(stack[depth++], sizeof stack[0], "%lld",
                        static_cast<long long>(t->value()));
        } else {
          std::snprintf(stack[depth++], sizeof stack[0], "%s", symbol_name(m, t->value()));
        }
        continue;
      case fb::ShapeOp::Add:
        op = "+";
        break;
      case fb::ShapeOp::Sub:
        op = "-";
        break;
      case fb::ShapeOp::Mul:
        op = "*";
        break;
      case fb::ShapeOp::FloorDiv:
        op = "//";
        break;
    }
    if (op == nullptr || depth < 2) {
      std::snprintf(buf, size, "?");
      return;
    }
    char joined[sizeof stack[0]];
    std::snprintf(joined, sizeof joined, "(%s %s %s)", stack[depth - 2], op, stack[depth - 1]);
    std::memcpy(stack[depth - 2], joined, sizeof joined);
    --depth;
  }
  std::snprintf(buf, size, "%s", depth == 1 ? stack[0] : "?");
}

// The program's dims of `value`: "[batch, 4]".
const char* program_dims(const fb::Method* m, const fb::Value* value, char* buf, size_t size) {
  size_t pos = 0;
  buf[0] = '\0';
  append(buf, size, &pos, "%s", "[");
  for (uint32_t d = 0; d < count(value->dims()); ++d) {
    char dim[64];
    format_dim(m, value->dims()->Get(d), dim, sizeof dim);
    append(buf, size, &pos, d == 0 ? "%s" : ", %s", dim);
  }
  append(buf, size, &pos, "%s", "]");
  return buf;
}

// Matches every shape given in `options` to an input of `m`.
Status match_inputs(const fb::Method* m, const LoadOptions& options, GivenInput* given,
                    size_t* num_given) {
  const uint32_t num_inputs = count(m->inputs());
  *num_given = 0;
  for (const LoadOptions::InputShape& shape : options.input_shapes()) {
    uint32_t input = num_inputs;
    if (shape.index >= 0) {
      if (static_cast<uint64_t>(shape.index) >= num_inputs) {
        return Status::error(Error::NotFound,
                             "a shape is given for input %lld; method '%s' has %u input(s)",
                             static_cast<long long>(shape.index), m->name()->c_str(), num_inputs);
      }
      input = static_cast<uint32_t>(shape.index);
    } else {
      char names[160] = {};
      size_t pos = 0;
      for (uint32_t i = 0; i < num_inputs; ++i) {
        const fb::Value* v = m->values()->Get(m->inputs()->Get(i));
        const char* name = v->name() != nullptr ? v->name()->c_str() : "";
        if (input == num_inputs && std::strcmp(name, shape.name) == 0) input = i;
        append(names, sizeof names, &pos, i == 0 ? "'%s'" : ", '%s'", name);
      }
      if (input == num_inputs) {
        return Status::error(Error::NotFound,
                             "a shape is given for input '%s'; method '%s' has no such input "
                             "(inputs: %s)",
                             shape.name, m->name()->c_str(), num_inputs ? names : "none");
      }
    }
    GivenInput g{input, m->values()->Get(m->inputs()->Get(input)), &shape};
    char label[96];
    input_label(g, label, sizeof label);
    for (size_t k = 0; k < *num_given; ++k) {
      if (given[k].input == input) {
        return Status::error(Error::InvalidArgument,
                             "the shape of %s (input %u) is given twice, by name and by index",
                             label, input);
      }
    }
    if (g.value->kind() != fb::ValueKind::Tensor) {
      return Status::error(Error::InvalidArgument, "%s is not a tensor; it has no shape to give",
                           label);
    }
    if (count(g.value->dims()) != shape.rank) {
      char want[160], got[160];
      return Status::error(Error::ShapeMismatch,
                           "%s has rank %u in the program (%s); the given shape %s has rank %zu",
                           label, count(g.value->dims()),
                           program_dims(m, g.value, want, sizeof want),
                           given_sizes(g, got, sizeof got), shape.rank);
    }
    given[(*num_given)++] = g;
  }
  return Status::ok();
}

// Checks that every set_dim name is a symbol of `m`.
Status check_dim_names(const fb::Method* m, const LoadOptions& options) {
  const uint32_t n = count(m->symbols());
  for (const LoadOptions::DimValue& d : options.dims()) {
    bool known = false;
    for (uint32_t i = 0; i < n; ++i) known |= m->symbols()->Get(i)->name()->string_view() == d.name;
    if (known) continue;
    char names[128] = {};
    size_t pos = 0;
    for (uint32_t i = 0; i < n; ++i) {
      append(names, sizeof names, &pos, i ? ", '%s'" : "'%s'",
             m->symbols()->Get(i)->name()->c_str());
    }
    return Status::error(Error::InvalidArgument, "method '%s' has no symbolic dim '%s' (it has %s)",
                         m->name()->c_str(), d.name, n ? names : "none");
  }
  return Status::ok();
}

}  // namespace

Status resolve_dims(const fb::Method* m, const LoadOptions& options, Span<int64_t> values) {
  const uint32_t n = count(m->symbols());
  if (values.size() < n) {
    return Status::error(Error::InvalidArgument, "room for %zu symbol values; method '%s' has %u",
                         values.size(), m->name()->c_str(), n);
  }
  TESSERA_RETURN_IF_ERROR(check_dim_names(m, options));
  GivenInput given[LoadOptions::kMaxInputShapes];
  size_t num_given = 0;
  TESSERA_RETURN_IF_ERROR(match_inputs(m, options, given, &num_given));

  char label[96], other[96], sizes[160], other_sizes[160];
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Symbol* sym = m->symbols()->Get(i);
    const char* name = sym->name()->c_str();
    // The first given input dim that is this symbol, and every other one must agree with it.
    const GivenInput* from = nullptr;
    uint32_t from_dim = 0;
    int64_t inferred = 0;
    for (size_t k = 0; k < num_given; ++k) {
      const GivenInput& g = given[k];
      for (uint32_t d = 0; d < g.shape->rank; ++d) {
        if (plain_symbol(g.value->dims()->Get(d)) != static_cast<int64_t>(i)) continue;
        const int64_t size = g.shape->sizes[d];
        if (from == nullptr) {
          from = &g;
          from_dim = d;
          inferred = size;
        } else if (size != inferred) {
          return Status::error(
              Error::InvalidArgument,
              "the given input shapes disagree on symbolic dim '%s': %s has shape %s (dim %u = "
              "%lld) and %s has shape %s (dim %u = %lld)",
              name, input_label(*from, label, sizeof label),
              given_sizes(*from, sizes, sizeof sizes), from_dim, static_cast<long long>(inferred),
              input_label(g, other, sizeof other), given_sizes(g, other_sizes, sizeof other_sizes),
              d, static_cast<long long>(size));
        }
      }
    }

    int64_t v = 0;
    const bool explicit_value = options.find_dim(name, &v);
    if (explicit_value && from != nullptr && inferred != v) {
      return Status::error(Error::InvalidArgument,
                           "symbolic dim '%s' is set to %lld (LoadOptions::set_dim; tessera-run "
                           "--dim %s=%lld), but %s has shape %s, whose dim %u makes it %lld",
                           name, static_cast<long long>(v), name, static_cast<long long>(v),
                           input_label(*from, label, sizeof label),
                           given_sizes(*from, sizes, sizeof sizes), from_dim,
                           static_cast<long long>(inferred));
    }
    if (!explicit_value && from != nullptr) {
      v = inferred;
      if (v < sym->min() || v > sym->max()) {
        return Status::error(
            Error::InvalidArgument,
            "symbolic dim '%s' = %lld (dim %u of %s, shape %s) is outside the "
            "bounds [%lld, %lld] the program was compiled for",
            name, static_cast<long long>(v), from_dim, input_label(*from, label, sizeof label),
            given_sizes(*from, sizes, sizeof sizes), static_cast<long long>(sym->min()),
            static_cast<long long>(sym->max()));
      }
    } else if (!explicit_value) {
      if (sym->min() != sym->max()) {
        return Status::error(Error::InvalidArgument,
                             "symbolic dim '%s' needs a value between %lld and %lld: set it in "
                             "LoadOptions (tessera-run --dim %s=N), or give the shape of an input "
                             "that has it as a dim (LoadOptions::set_input_shape; tessera-run "
                             "--input)",
                             name, static_cast<long long>(sym->min()),
                             static_cast<long long>(sym->max()), name);
      }
      v = sym->min();
    }
    if (v < sym->min() || v > sym->max()) {
      return Status::error(Error::InvalidArgument,
                           "symbolic dim '%s' = %lld is outside the bounds [%lld, %lld] the "
                           "program was compiled for",
                           name, static_cast<long long>(v), static_cast<long long>(sym->min()),
                           static_cast<long long>(sym->max()));
    }
    values[i] = v;
  }

  // Every given shape against the program's input with the symbols' values: constant dims,
  // expressions such as 2*batch, and symbols given by set_dim.
  for (size_t k = 0; k < num_given; ++k) {
    const GivenInput& g = given[k];
    int64_t expected[kMaxDims];
    bool same = true;
    for (uint32_t d = 0; d < g.shape->rank; ++d) {
      TESSERA_ASSIGN_OR_RETURN(expected[d], ir::eval_dim(g.value->dims()->Get(d),
                                                         Span<const int64_t>(values.data(), n)));
      same = same && expected[d] == g.shape->sizes[d];
    }
    if (same) continue;
    char want[160], dims[160], symbols[160];
    describe_symbols_of(m, g.value, Span<const int64_t>(values.data(), n), symbols, sizeof symbols);
    return Status::error(
        Error::ShapeMismatch, "%s is given shape %s; the program expects %s (%s%s%s)",
        input_label(g, label, sizeof label), given_sizes(g, sizes, sizeof sizes),
        format_sizes(Span<const int64_t>(expected, g.shape->rank), want, sizeof want),
        program_dims(m, g.value, dims, sizeof dims), symbols[0] ? " with " : "", symbols);
  }
  return Status::ok();
}

const char* describe_symbols_of(const fb::Method* m, const fb::Value* value,
                                Span<const int64_t> values, char* buf, size_t size) {
  if (size == 0) return buf;
  buf[0] = '\0';
  size_t pos = 0;
  int64_t seen[ir::kMaxShapeExprTerms];
  size_t num_seen = 0;
  for (uint32_t d = 0; d < count(value->dims()); ++d) {
    const auto* expr = value->dims()->Get(d)->expr();
    for (uint32_t t = 0; t < count(expr); ++t) {
      if (expr->Get(t)->op() != fb::ShapeOp::Sym) continue;
      const int64_t s = expr->Get(t)->value();
      if (s < 0 || static_cast<uint64_t>(s) >= values.size()) continue;
      bool again = false;
      for (size_t k = 0; k < num_seen; ++k) again |= seen[k] == s;
      if (again || num_seen == ir::kMaxShapeExprTerms) continue;
      seen[num_seen++] = s;
      append(buf, size, &pos, num_seen == 1 ? "%s=%lld" : ", %s=%lld", symbol_name(m, s),
             static_cast<long long>(values[static_cast<size_t>(s)]));
    }
  }
  return buf;
}

}  // namespace tessera::internal
