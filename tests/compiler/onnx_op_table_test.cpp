// The ONNX importer's op table agrees with tessera/ir/ops.def.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tessera/compiler/onnx/op_importers.h"
#include "tessera/ir/op_table.h"

namespace tessera::compiler::importer {
namespace {

TEST(OnnxOpTable, EveryOnnxOpHasOneRow) {
  std::set<std::string> seen;
  for (const OpImporter& row : op_importers()) {
    EXPECT_TRUE(seen.insert(std::string(row.onnx_op)).second) << "two rows for " << row.onnx_op;
    ASSERT_NE(find_op_importer(row.onnx_op), nullptr) << row.onnx_op;
    EXPECT_EQ(find_op_importer(row.onnx_op)->import, row.import) << row.onnx_op;
  }
}

TEST(OnnxOpTable, DirectOpsMapOneToOneAndCustomOpsHaveAnImporter) {
  for (const ir::OpInfo& info : ir::op_table()) {
    if (info.import == ir::OpImport::Internal) continue;
    const OpImporter* row = find_op_importer(info.name);
    ASSERT_NE(row, nullptr) << info.name << " has no ONNX importer";
    EXPECT_EQ(row->op, info.op) << info.name;
    if (info.import == ir::OpImport::Direct) continue;
    // A Custom op's importer is one of the files of concern, not the Direct one.
    bool custom = false;
    for (auto list : {shape_op_importers(), nn_op_importers(), elementwise_op_importers(),
                      layout_op_importers()}) {
      for (const OpImporter& r : list) custom |= r.onnx_op == info.name;
    }
    EXPECT_TRUE(custom) << info.name
                        << " is Custom in tessera/ir/ops.def but has no importer of its own";
  }
}

TEST(OnnxOpTable, NoCustomRowShadowsADirectOp) {
  for (auto list : {shape_op_importers(), nn_op_importers(), elementwise_op_importers(),
                    layout_op_importers()}) {
    for (const OpImporter& r : list) {
      for (const ir::OpInfo& info : ir::op_table()) {
        EXPECT_FALSE(info.import == ir::OpImport::Direct && r.onnx_op == info.name)
            << r.onnx_op << " is Direct in tessera/ir/ops.def and has a custom importer too";
      }
    }
  }
}

// An Internal op (produced by a compiler pass, ChannelShuffle) is not an ONNX op: a model that
// names it is rejected as an unknown op, not imported.
TEST(OnnxOpTable, InternalOpsHaveNoImporter) {
  int internal = 0;
  for (const ir::OpInfo& info : ir::op_table()) {
    if (info.import != ir::OpImport::Internal) continue;
    ++internal;
    EXPECT_EQ(find_op_importer(info.name), nullptr)
        << info.name << " is Internal in tessera/ir/ops.def but has an ONNX importer";
  }
  EXPECT_GE(internal, 1);
  EXPECT_EQ(ir::op_info(fb::OpType::ChannelShuffle)->import, ir::OpImport::Internal);
}

TEST(OnnxOpTable, UnknownOpsAreAbsent) {
  EXPECT_EQ(find_op_importer("NoSuchOp"), nullptr);
  EXPECT_EQ(find_op_importer(""), nullptr);
  EXPECT_EQ(find_op_importer("conv"), nullptr);  // names are case-sensitive, as in ONNX
}

}  // namespace
}  // namespace tessera::compiler::importer
