// AttrView: read a node's attributes by name, with types checked. Lookups are linear over a
// handful of attributes and meant for load/prepare time, not the execute path.
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/ir/schema.h"

namespace tessera::ir {

class AttrView {
 public:
  /// `node` is borrowed (it lives in the program or payload buffer); nullptr means no attributes.
  explicit AttrView(const fb::Node* node) : node_(node) {}

  bool has(std::string_view name) const { return find(name) != nullptr; }

  /// The attribute's value, `fallback` when absent, InvalidProgram when present with another type.
  Result<int64_t> get_int(std::string_view name, int64_t fallback) const;
  Result<float> get_float(std::string_view name, float fallback) const;
  Result<std::string_view> get_string(std::string_view name, std::string_view fallback) const;
  /// Empty span when absent. The span points into the program buffer.
  Result<Span<const int64_t>> get_ints(std::string_view name) const;
  Result<Span<const float>> get_floats(std::string_view name) const;

  /// Name of the node for messages ("" if unnamed).
  std::string_view node_name() const;
  /// The node's op (Identity without a node).
  fb::OpType op() const { return node_ ? node_->op() : fb::OpType::Identity; }

 private:
  const fb::Attr* find(std::string_view name) const;
  Status type_error(const fb::Attr* attr, const char* expected) const;

  const fb::Node* node_;
};

}  // namespace tessera::ir
