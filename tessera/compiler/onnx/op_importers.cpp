#include "tessera/compiler/onnx/op_importers.h"

#include <algorithm>
#include <vector>

#include "tessera/ir/op_table.h"

namespace tessera::compiler::importer {
namespace {

/// An op tessera/ir/ops.def marks Direct: the inputs in order, the declared attributes copied.
Status import_direct(Importer& im, fb::OpType op) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> inputs, im.need_all());
  TESSERA_ASSIGN_OR_RETURN(std::vector<ir::Attr> attrs, im.declared_attrs(op));
  return im.emit1(op, std::move(inputs), std::move(attrs)).status();
}

/// Every row, Direct ones first; sorted by name in `by_name`.
struct Table {
  std::vector<OpImporter> rows;
  std::vector<OpImporter> by_name;

  Table() {
    for (const ir::OpInfo& info : ir::op_table()) {
      if (info.import == ir::OpImport::Direct) rows.push_back({info.name, import_direct, info.op});
    }
    for (auto list : {shape_op_importers(), nn_op_importers(), elementwise_op_importers(),
                      layout_op_importers()}) {
      rows.insert(rows.end(), list.begin(), list.end());
    }
    by_name = rows;
    std::sort(by_name.begin(), by_name.end(),
              [](const OpImporter& a, const OpImporter& b) { return a.onnx_op < b.onnx_op; });
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

const OpImporter* find_op_importer(std::string_view onnx_op) {
  const std::vector<OpImporter>& rows = table().by_name;
  auto it =
      std::lower_bound(rows.begin(), rows.end(), onnx_op,
                       [](const OpImporter& r, std::string_view name) { return r.onnx_op < name; });
  return it != rows.end() && it->onnx_op == onnx_op ? &*it : nullptr;
}

Span<const OpImporter> op_importers() {
  return table().rows;
}

}  // namespace tessera::compiler::importer
