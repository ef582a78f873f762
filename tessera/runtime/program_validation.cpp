#include "tessera/runtime/program_validation.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>
#include <string_view>

#include "tessera/core/scalar_type.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_table.h"
#include "tessera/ir/shape_expr.h"
#include "tessera/runtime/program.h"

namespace tessera::internal {
namespace {

constexpr size_t kMaxSymbols = 16;

template <typename T>
uint32_t count(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

// The FlatBuffers verifier checks the alignment of a vector's length, not of its elements: a
// corrupted offset can leave a vector of 8-byte elements at a 4-byte boundary. Reading it would
// be undefined behaviour, so every such vector is checked before use.
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

Status invalid(const char* where, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
Status invalid(const char* where, const char* fmt, ...) {
  char buf[Status::kMaxMessage];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return Status::error(Error::InvalidProgram, "%s: %s", where, buf);
}

Status validate_symbols(const flatbuffers::Vector<flatbuffers::Offset<fb::Symbol>>* symbols,
                        const char* where, int64_t* upper, size_t* n) {
  *n = count(symbols);
  if (*n > kMaxSymbols) return invalid(where, "%zu symbols (max %zu)", *n, kMaxSymbols);
  for (size_t i = 0; i < *n; ++i) {
    const fb::Symbol* s = symbols->Get(static_cast<uint32_t>(i));
    if (s->min() < 0 || s->min() > s->max()) {
      return invalid(where, "symbol '%s' has bounds [%lld, %lld]", s->name()->c_str(),
                     static_cast<long long>(s->min()), static_cast<long long>(s->max()));
    }
    upper[i] = s->max();
  }
  return Status::ok();
}

Status validate_values(const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values,
                       Span<const int64_t> symbol_upper, const fb::Program* program,
                       uint64_t arena_size, bool planned, const char* where) {
  const uint32_t num_constants = count(program->constants());
  for (uint32_t i = 0; i < count(values); ++i) {
    const fb::Value* v = values->Get(i);
    if (v->kind() != fb::ValueKind::Tensor) {
      if (static_cast<int>(v->kind()) < 0 || v->kind() > fb::ValueKind::MAX) {
        return invalid(where, "value %u has unknown kind %d", i, static_cast<int>(v->kind()));
      }
      if (!elements_aligned(v->ints())) return invalid(where, "value %u int list is misaligned", i);
      continue;
    }
    if (!is_valid_scalar_type(static_cast<int>(v->dtype()))) {
      return invalid(where, "value %u has unknown dtype %d", i, static_cast<int>(v->dtype()));
    }
    uint32_t rank = count(v->dims());
    if (rank > static_cast<uint32_t>(kMaxDims)) {
      return invalid(where, "value %u has rank %u (max %d)", i, rank, kMaxDims);
    }
    if (!elements_aligned(v->ints())) return invalid(where, "value %u int list is misaligned", i);
    for (uint32_t d = 0; d < rank; ++d) {
      const fb::Dim* dim = v->dims()->Get(d);
      if (!elements_aligned(dim->expr())) {
        return invalid(where, "value %u dim %u shape expression is misaligned", i, d);
      }
      if (dim->value() < 0) {
        return invalid(where, "value %u dim %u is negative (%lld)", i, d,
                       static_cast<long long>(dim->value()));
      }
      auto r = ir::eval_dim_within_bound(dim, symbol_upper);
      if (!r.ok()) return invalid(where, "value %u dim %u: %s", i, d, r.status().message());
    }
    uint32_t order = count(v->dim_order());
    if (order != 0) {
      if (order != rank) return invalid(where, "value %u dim order has %u entries", i, order);
      bool seen[kMaxDims] = {};
      for (uint8_t d : *v->dim_order()) {
        if (d >= rank || seen[d]) return invalid(where, "value %u dim order is not a permutation", i);
        seen[d] = true;
      }
    }
    uint64_t nbytes = 0;
    if (!tensor_max_nbytes(v, &nbytes) || nbytes > kMaxArenaBytes) {
      return invalid(where, "value %u is too large", i);
    }
    if (v->constant() >= 0) {
      if (static_cast<uint32_t>(v->constant()) >= num_constants) {
        return invalid(where, "value %u refers to constant %d; the program has %u", i,
                       v->constant(), num_constants);
      }
      for (uint32_t d = 0; d < rank; ++d) {
        if (count(v->dims()->Get(d)->expr()) != 0) {
          return invalid(where, "constant value %u has a symbolic dim", i);
        }
      }
      const fb::ConstantRef* c = program->constants()->Get(static_cast<uint32_t>(v->constant()));
      if (c->size() != nbytes) {
        return invalid(where, "value %u needs %llu bytes but constant %d has %llu", i,
                       static_cast<unsigned long long>(nbytes), v->constant(),
                       static_cast<unsigned long long>(c->size()));
      }
    } else if (v->constant() != -1) {
      return invalid(where, "value %u has constant index %d", i, v->constant());
    }
    if (v->arena_offset() >= 0) {
      if (!planned) return invalid(where, "value %u has an arena offset in a payload graph", i);
      uint64_t off = static_cast<uint64_t>(v->arena_offset());
      if (off % 16 != 0) return invalid(where, "value %u arena offset %llu is misaligned", i,
                                        static_cast<unsigned long long>(off));
      if (off > arena_size || nbytes > arena_size - off) {
        return invalid(where, "value %u [%llu, +%llu) lies outside the %llu-byte arena", i,
                       static_cast<unsigned long long>(off), static_cast<unsigned long long>(nbytes),
                       static_cast<unsigned long long>(arena_size));
      }
    } else if (v->arena_offset() != -1) {
      return invalid(where, "value %u has arena offset %lld", i,
                     static_cast<long long>(v->arena_offset()));
    }
  }
  return Status::ok();
}

Status check_index_list(const flatbuffers::Vector<int32_t>* list, uint32_t num_values,
                        bool allow_absent, const char* what, const char* where) {
  for (uint32_t i = 0; i < count(list); ++i) {
    int32_t v = list->Get(i);
    if (v == -1 && allow_absent) continue;
    if (v < 0 || static_cast<uint32_t>(v) >= num_values) {
      return invalid(where, "%s %u refers to value %d; there are %u", what, i, v, num_values);
    }
  }
  return Status::ok();
}

Status check_tensor_list(const flatbuffers::Vector<int32_t>* list,
                         const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values,
                         const char* what, const char* where) {
  TESSERA_RETURN_IF_ERROR(check_index_list(list, count(values), false, what, where));
  for (uint32_t i = 0; i < count(list); ++i) {
    if (values->Get(static_cast<uint32_t>(list->Get(i)))->kind() != fb::ValueKind::Tensor) {
      return invalid(where, "%s %u is not a tensor", what, i);
    }
  }
  return Status::ok();
}

Status validate_node(const fb::Node* node,
                     const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values,
                     const char* where) {
  const uint32_t num_values = count(values);
  if (node == nullptr) return invalid(where, "kernel instruction without a node");
  if (!ir::is_valid_op(static_cast<int>(node->op()))) {
    return invalid(where, "unknown op %d", static_cast<int>(node->op()));
  }
  if (static_cast<int>(node->activation()) < 0 || node->activation() > fb::Activation::MAX) {
    return invalid(where, "unknown activation %d", static_cast<int>(node->activation()));
  }
  for (uint32_t a = 0; a < count(node->attrs()); ++a) {
    const fb::Attr* attr = node->attrs()->Get(a);
    if (!elements_aligned(attr->ints()) || !elements_aligned(attr->floats())) {
      return invalid(where, "attribute '%s' is misaligned", attr->name()->c_str());
    }
  }
  TESSERA_RETURN_IF_ERROR(check_index_list(node->inputs(), num_values, true, "input", where));
  TESSERA_RETURN_IF_ERROR(check_index_list(node->outputs(), num_values, false, "output", where));
  if (count(node->outputs()) == 0) return invalid(where, "%s node has no outputs", ir::op_name(node->op()));
  // Kernels take and give tensors only (an Int value's storage is no Tensor).
  for (uint32_t k = 0; k < count(node->inputs()) + count(node->outputs()); ++k) {
    const bool is_in = k < count(node->inputs());
    const uint32_t j = is_in ? k : k - count(node->inputs());
    const int32_t v = is_in ? node->inputs()->Get(j) : node->outputs()->Get(j);
    if (v >= 0 && values->Get(static_cast<uint32_t>(v))->kind() != fb::ValueKind::Tensor) {
      return invalid(where, "%s node %s %u (value %d) is not a tensor", ir::op_name(node->op()),
                     is_in ? "input" : "output", j, v);
    }
  }
  // Arity and attribute types, as tessera/ir/ops.def declares them.
  if (Status st = ir::validate_node_against_table(node); !st.is_ok()) {
    return invalid(where, "%s", st.message());
  }
  return Status::ok();
}

// The memory plan never gives a step's output bytes that one of its inputs or another of its
// outputs occupies (their lifetimes overlap at that step), and kernels and backends rely on it: a
// step writes its outputs while it still reads its inputs. A program whose offsets break that is
// refused here rather than computing garbage, or copying between overlapping ranges.
struct ArenaRange {
  uint64_t begin, end;
  int32_t value;
};

bool arena_range(const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values, int32_t v,
                 ArenaRange* r) {
  if (v < 0) return false;
  const fb::Value* val = values->Get(static_cast<uint32_t>(v));
  uint64_t nbytes = 0;
  if (val->kind() != fb::ValueKind::Tensor || val->constant() >= 0 || val->arena_offset() < 0 ||
      !tensor_max_nbytes(val, &nbytes) || nbytes == 0) {
    return false;
  }
  const uint64_t off = static_cast<uint64_t>(val->arena_offset());
  *r = {off, off + nbytes, v};
  return true;
}

Status check_outputs_disjoint(const flatbuffers::Vector<int32_t>* inputs,
                              const flatbuffers::Vector<int32_t>* outputs,
                              const flatbuffers::Vector<flatbuffers::Offset<fb::Value>>* values,
                              const char* where) {
  for (uint32_t o = 0; o < count(outputs); ++o) {
    ArenaRange out;
    if (!arena_range(values, outputs->Get(o), &out)) continue;
    for (uint32_t k = 0; k < count(inputs) + o; ++k) {
      const bool is_in = k < count(inputs);
      ArenaRange other;
      if (!arena_range(values, is_in ? inputs->Get(k) : outputs->Get(k - count(inputs)), &other)) {
        continue;
      }
      if (out.begin < other.end && other.begin < out.end) {
        return invalid(
            where, "output value %d [%llu, %llu) shares arena bytes with %s value %d [%llu, %llu)",
            out.value, static_cast<unsigned long long>(out.begin),
            static_cast<unsigned long long>(out.end), is_in ? "input" : "output", other.value,
            static_cast<unsigned long long>(other.begin),
            static_cast<unsigned long long>(other.end));
      }
    }
  }
  return Status::ok();
}

}  // namespace

bool bounded_nbytes(ScalarType dtype, Span<const int64_t> dims, uint64_t* out) {
  uint64_t n = element_size(dtype);
  uint64_t nonzero = n;
  for (const int64_t dv : dims) {
    if (dv < 0) return false;
    if (dv != 0 && (__builtin_mul_overflow(nonzero, static_cast<uint64_t>(dv), &nonzero) ||
                    nonzero > kMaxArenaBytes)) {
      return false;
    }
    n = dv == 0 ? 0 : n * static_cast<uint64_t>(dv);  // n <= nonzero: no overflow
  }
  *out = n;
  return true;
}

bool tensor_max_nbytes(const fb::Value* value, uint64_t* out) {
  if (!is_valid_scalar_type(static_cast<int>(value->dtype()))) return false;
  const uint32_t rank = count(value->dims());
  if (rank > static_cast<uint32_t>(kMaxDims)) return false;
  int64_t dims[kMaxDims];
  for (uint32_t d = 0; d < rank; ++d) dims[d] = value->dims()->Get(d)->value();
  return bounded_nbytes(static_cast<ScalarType>(value->dtype()), Span<const int64_t>(dims, rank),
                        out);
}

Status validate_graph(const fb::Graph* graph, const fb::Program* program, const char* where) {
  int64_t upper[kMaxSymbols];
  size_t nsym = 0;
  TESSERA_RETURN_IF_ERROR(validate_symbols(graph->symbols(), where, upper, &nsym));
  TESSERA_RETURN_IF_ERROR(
      validate_values(graph->values(), {upper, nsym}, program, 0, /*planned=*/false, where));
  TESSERA_RETURN_IF_ERROR(check_tensor_list(graph->inputs(), graph->values(), "graph input", where));
  TESSERA_RETURN_IF_ERROR(check_tensor_list(graph->outputs(), graph->values(), "graph output", where));
  // Payload values have no arena slots: the backend gives storage to graph inputs and outputs,
  // constants, and what nodes write. A node may only read a value one of those defined before
  // it (a value nothing defines would reach the kernel without data).
  const uint32_t nv = count(graph->values());
  std::vector<bool> defined(nv, false);
  for (uint32_t i = 0; i < count(graph->inputs()); ++i) defined[graph->inputs()->Get(i)] = true;
  for (uint32_t i = 0; i < count(graph->outputs()); ++i) defined[graph->outputs()->Get(i)] = true;
  for (uint32_t v = 0; v < nv; ++v) {
    if (graph->values()->Get(v)->constant() >= 0) defined[v] = true;
  }
  for (uint32_t i = 0; i < count(graph->nodes()); ++i) {
    const fb::Node* node = graph->nodes()->Get(i);
    TESSERA_RETURN_IF_ERROR(validate_node(node, graph->values(), where));
    for (uint32_t k = 0; k < count(node->inputs()); ++k) {
      const int32_t v = node->inputs()->Get(k);
      if (v >= 0 && !defined[static_cast<uint32_t>(v)]) {
        return invalid(where, "node %u (%s) input %u reads value %d before anything defines it", i,
                       ir::op_name(node->op()), k, v);
      }
    }
    for (int32_t v : *node->outputs()) defined[static_cast<uint32_t>(v)] = true;
  }
  return Status::ok();
}

Status validate_program(const fb::Program* program, uint64_t file_size, uint64_t fb_end) {
  constexpr uint64_t kAlign = 64;
  uint64_t seg = program->segment_offset();
  uint64_t seg_size = program->segment_size();
  if (seg % kAlign != 0) {
    return Status::error(Error::InvalidProgram,
                         "constant segment offset %llu is not a multiple of %llu",
                         static_cast<unsigned long long>(seg), static_cast<unsigned long long>(kAlign));
  }
  if (seg < fb_end && seg_size != 0) {
    return Status::error(Error::InvalidProgram, "constant segment overlaps the program header");
  }
  if (seg_size > 0 && (seg > file_size || seg_size > file_size - seg)) {
    return Status::error(Error::Truncated,
                         "constant segment [%llu, +%llu) extends past the end of the %llu-byte file",
                         static_cast<unsigned long long>(seg), static_cast<unsigned long long>(seg_size),
                         static_cast<unsigned long long>(file_size));
  }
  if (!elements_aligned(program->constants())) {
    return Status(Error::InvalidProgram, "constant table is misaligned");
  }
  for (uint32_t i = 0; i < count(program->constants()); ++i) {
    const fb::ConstantRef* c = program->constants()->Get(i);
    if (c->offset() % kAlign != 0) {
      return Status::error(Error::InvalidProgram, "constant %u offset %llu is not 64-byte aligned", i,
                           static_cast<unsigned long long>(c->offset()));
    }
    if (c->offset() > seg_size || c->size() > seg_size - c->offset()) {
      return Status::error(Error::InvalidProgram,
                           "constant %u [%llu, +%llu) lies outside the %llu-byte segment", i,
                           static_cast<unsigned long long>(c->offset()),
                           static_cast<unsigned long long>(c->size()),
                           static_cast<unsigned long long>(seg_size));
    }
  }
  if (count(program->methods()) == 0) return Status(Error::InvalidProgram, "program has no methods");
  for (uint32_t m = 0; m < count(program->methods()); ++m) {
    const fb::Method* method = program->methods()->Get(m);
    char where[96];
    std::snprintf(where, sizeof where, "method '%.48s'", method->name()->c_str());
    for (uint32_t k = 0; k < m; ++k) {
      if (program->methods()->Get(k)->name()->string_view() == method->name()->string_view()) {
        return invalid(where, "duplicate method name");
      }
    }
    if (method->arena_size() > kMaxArenaBytes) {
      return invalid(where, "arena of %llu bytes exceeds the limit of %llu",
                     static_cast<unsigned long long>(method->arena_size()),
                     static_cast<unsigned long long>(kMaxArenaBytes));
    }
    int64_t upper[kMaxSymbols];
    size_t nsym = 0;
    TESSERA_RETURN_IF_ERROR(validate_symbols(method->symbols(), where, upper, &nsym));
    TESSERA_RETURN_IF_ERROR(validate_values(method->values(), {upper, nsym}, program,
                                            method->arena_size(), /*planned=*/true, where));
    const auto* values = method->values();
    TESSERA_RETURN_IF_ERROR(check_tensor_list(method->inputs(), values, "input", where));
    TESSERA_RETURN_IF_ERROR(check_tensor_list(method->outputs(), values, "output", where));
    const uint32_t nd = count(method->delegates());
    for (uint32_t d = 0; d < nd; ++d) {
      const fb::Delegate* del = method->delegates()->Get(d);
      if (del->id()->size() == 0 || del->id()->size() > 63) {
        return invalid(where, "delegate %u has an empty or over-long id", d);
      }
      if (del->backend()->size() == 0 || del->backend()->size() > 31) {
        return invalid(where, "delegate '%s' has an empty or over-long backend name", del->id()->c_str());
      }
      for (uint32_t k = 0; k < d; ++k) {
        if (method->delegates()->Get(k)->id()->string_view() == del->id()->string_view()) {
          return invalid(where, "duplicate delegate id '%s'", del->id()->c_str());
        }
      }
      // payload_nested_root() dereferences the payload vector: check that it is there first.
      if (del->payload() == nullptr) {
        return invalid(where, "delegate '%s' has no payload", del->id()->c_str());
      }
      const fb::Graph* g = del->payload_nested_root();
      if (g == nullptr) return invalid(where, "delegate '%s' has no payload", del->id()->c_str());
      if (reinterpret_cast<uintptr_t>(del->payload()->data()) % 8 != 0) {
        return invalid(where, "delegate '%s' payload is misaligned", del->id()->c_str());
      }
      char gwhere[160];
      std::snprintf(gwhere, sizeof gwhere, "%s delegate '%.48s'", where, del->id()->c_str());
      TESSERA_RETURN_IF_ERROR(validate_graph(g, program, gwhere));
      for (uint32_t s = 0; s < count(del->compile_specs()); ++s) {
        if (del->compile_specs()->Get(s)->value() == nullptr) {
          return invalid(gwhere, "compile spec '%s' has no value",
                         del->compile_specs()->Get(s)->key()->c_str());
        }
      }
    }
    std::vector<bool> used_delegate(nd, false);
    for (uint32_t i = 0; i < count(method->chain()); ++i) {
      const fb::Instruction* ins = method->chain()->Get(i);
      char iwhere[128];
      std::snprintf(iwhere, sizeof iwhere, "%s instruction %u", where, i);
      if (ins->kind() == fb::InstructionKind::Kernel) {
        TESSERA_RETURN_IF_ERROR(validate_node(ins->node(), values, iwhere));
        for (int32_t o : *ins->node()->outputs()) {
          const fb::Value* v = values->Get(static_cast<uint32_t>(o));
          if (v->kind() == fb::ValueKind::Tensor && (v->constant() >= 0 || v->arena_offset() < 0)) {
            return invalid(iwhere, "output value %d is a constant or has no arena slot", o);
          }
        }
        for (uint32_t k = 0; k < count(ins->node()->inputs()); ++k) {
          int32_t in = ins->node()->inputs()->Get(k);
          if (in < 0) continue;
          const fb::Value* v = values->Get(static_cast<uint32_t>(in));
          if (v->kind() == fb::ValueKind::Tensor && v->constant() < 0 && v->arena_offset() < 0) {
            return invalid(iwhere, "input value %d has no data (neither constant nor planned)", in);
          }
        }
        TESSERA_RETURN_IF_ERROR(
            check_outputs_disjoint(ins->node()->inputs(), ins->node()->outputs(), values, iwhere));
      } else if (ins->kind() == fb::InstructionKind::Delegate) {
        if (ins->delegate() < 0 || static_cast<uint32_t>(ins->delegate()) >= nd) {
          return invalid(iwhere, "delegate index %d; the method has %u", ins->delegate(), nd);
        }
        if (used_delegate[ins->delegate()]) return invalid(iwhere, "delegate called twice");
        used_delegate[ins->delegate()] = true;
        TESSERA_RETURN_IF_ERROR(check_tensor_list(ins->inputs(), values, "delegate input", iwhere));
        TESSERA_RETURN_IF_ERROR(check_tensor_list(ins->outputs(), values, "delegate output", iwhere));
        const fb::Graph* g = method->delegates()->Get(ins->delegate())->payload_nested_root();
        if (count(g->inputs()) != count(ins->inputs()) || count(g->outputs()) != count(ins->outputs())) {
          return invalid(iwhere, "binds %u inputs and %u outputs to a payload with %u and %u",
                         count(ins->inputs()), count(ins->outputs()), count(g->inputs()),
                         count(g->outputs()));
        }
        for (uint32_t k = 0; k < count(ins->inputs()) + count(ins->outputs()); ++k) {
          bool is_in = k < count(ins->inputs());
          uint32_t j = is_in ? k : k - count(ins->inputs());
          const fb::Value* mv = values->Get(static_cast<uint32_t>(is_in ? ins->inputs()->Get(j) : ins->outputs()->Get(j)));
          const fb::Value* gv = g->values()->Get(static_cast<uint32_t>(is_in ? g->inputs()->Get(j) : g->outputs()->Get(j)));
          if (mv->dtype() != gv->dtype() || count(mv->dims()) != count(gv->dims())) {
            return invalid(iwhere, "delegate %s %u does not match the payload's dtype or rank",
                           is_in ? "input" : "output", j);
          }
          if (mv->constant() < 0 && mv->arena_offset() < 0) {
            return invalid(iwhere, "delegate %s %u has no data", is_in ? "input" : "output", j);
          }
          if (!is_in && mv->constant() >= 0) {
            return invalid(iwhere, "delegate output %u is a constant", j);
          }
        }
        TESSERA_RETURN_IF_ERROR(
            check_outputs_disjoint(ins->inputs(), ins->outputs(), values, iwhere));
      } else {
        return invalid(iwhere, "unknown instruction kind %d", static_cast<int>(ins->kind()));
      }
    }
    for (uint32_t k = 0; k < count(method->inputs()); ++k) {
      const fb::Value* v = values->Get(static_cast<uint32_t>(method->inputs()->Get(k)));
      if (v->arena_offset() < 0) return invalid(where, "input %u has no arena slot", k);
    }
    for (uint32_t k = 0; k < count(method->outputs()); ++k) {
      const fb::Value* v = values->Get(static_cast<uint32_t>(method->outputs()->Get(k)));
      if (v->arena_offset() < 0 && v->constant() < 0) return invalid(where, "output %u has no data", k);
    }
  }
  return Status::ok();
}

}  // namespace tessera::internal
