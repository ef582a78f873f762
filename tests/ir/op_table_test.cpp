#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <flatbuffers/flatbuffers.h>

#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/ir/op_attrs.h"
#include "tessera/ir/op_table.h"

namespace tessera::ir {
namespace {

// A Node FlatBuffer with `inputs`, `outputs` and the attributes added by `attrs`.
struct NodeBuffer {
  flatbuffers::FlatBufferBuilder fbb;
  const fb::Node* node = nullptr;

  NodeBuffer(fb::OpType op, std::vector<int> inputs, std::vector<int> outputs,
             std::vector<flatbuffers::Offset<fb::Attr>> (*attrs)(flatbuffers::FlatBufferBuilder&) =
                 nullptr) {
    auto a = attrs ? attrs(fbb) : std::vector<flatbuffers::Offset<fb::Attr>>{};
    auto n = fb::CreateNodeDirect(fbb, op, "n1", &inputs, &outputs, &a);
    fbb.Finish(n);
    node = flatbuffers::GetRoot<fb::Node>(fbb.GetBufferPointer());
  }
};

TEST(OpTable, OneRowPerOpInEnumOrder) {
  Span<const OpInfo> table = op_table();
  ASSERT_EQ(table.size(), static_cast<size_t>(fb::OpType::MAX) + 1);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].op), i);
    EXPECT_STREQ(table[i].name, op_name(table[i].op));
    EXPECT_LE(table[i].inputs_min, table[i].inputs_max) << table[i].name;
    EXPECT_GE(table[i].outputs_min, 1u) << table[i].name;
  }
  EXPECT_EQ(op_info(static_cast<fb::OpType>(9999)), nullptr);
}

// fb::OpType is generated from tessera/ir/ops.def in row order; programs store its values, so a
// row may only be appended. The ops of format version 1, at their values:
TEST(OpTable, EnumValuesAreStable) {
  const char* const kReleased[] = {"Identity",
                                   "Conv",
                                   "ConvTranspose",
                                   "Gemm",
                                   "MatMul",
                                   "Add",
                                   "Sub",
                                   "Mul",
                                   "Div",
                                   "Pow",
                                   "Relu",
                                   "Clip",
                                   "LeakyRelu",
                                   "PRelu",
                                   "Sigmoid",
                                   "Tanh",
                                   "HardSigmoid",
                                   "HardSwish",
                                   "Erf",
                                   "Gelu",
                                   "Sqrt",
                                   "Exp",
                                   "Softmax",
                                   "LayerNormalization",
                                   "BatchNormalization",
                                   "MaxPool",
                                   "AveragePool",
                                   "GlobalAveragePool",
                                   "ReduceMean",
                                   "ReduceSum",
                                   "Reshape",
                                   "Flatten",
                                   "Squeeze",
                                   "Unsqueeze",
                                   "Transpose",
                                   "Concat",
                                   "Split",
                                   "Slice",
                                   "Gather",
                                   "Pad",
                                   "Resize",
                                   "Cast",
                                   "Neg",
                                   "Reciprocal",
                                   "Abs",
                                   "Where",
                                   "Equal",
                                   "Less",
                                   "Greater",
                                   "ReduceMax",
                                   "Min",
                                   "Max",
                                   "Mish"};
  Span<const OpInfo> table = op_table();
  ASSERT_GE(table.size(), std::size(kReleased));
  for (size_t i = 0; i < std::size(kReleased); ++i) {
    EXPECT_STREQ(fb::EnumNameOpType(static_cast<fb::OpType>(i)), kReleased[i])
        << "OpType " << i << " moved: append new rows at the end of tessera/ir/ops.def";
  }
}

TEST(OpTable, AttributeRowsCarryTheirDefaults) {
  const OpInfo* info = op_info(fb::OpType::HardSigmoid);
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->attrs.size(), 2u);
  EXPECT_STREQ(info->attrs[0].name, "alpha");
  EXPECT_EQ(info->attrs[0].kind, fb::AttrType::Float);
  EXPECT_STREQ(info->attrs[0].fallback, "0.2f");
  EXPECT_TRUE(op_info(fb::OpType::Mish)->attrs.empty());
  EXPECT_TRUE(op_info(fb::OpType::Concat)->attrs[0].required);
}

TEST(OpAttrs, AbsentAttributesTakeTheTableDefaults) {
  NodeBuffer b(fb::OpType::LayerNormalization, {0, 1}, {2});
  Result<LayerNormalizationAttrs> a = LayerNormalizationAttrs::read(AttrView(b.node));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->axis, -1);
  EXPECT_FLOAT_EQ(a->epsilon, 1e-5f);
}

TEST(OpAttrs, PresentAttributesAreRead) {
  NodeBuffer b(fb::OpType::Gemm, {0, 1}, {2}, [](flatbuffers::FlatBufferBuilder& f) {
    return std::vector<flatbuffers::Offset<fb::Attr>>{
        fb::CreateAttrDirect(f, "alpha", fb::AttrType::Float, 0, 2.5f),
        fb::CreateAttrDirect(f, "transB", fb::AttrType::Int, 1)};
  });
  Result<GemmAttrs> a = GemmAttrs::read(AttrView(b.node));
  ASSERT_TRUE(a.ok());
  EXPECT_FLOAT_EQ(a->alpha, 2.5f);
  EXPECT_FLOAT_EQ(a->beta, 1.0f);
  EXPECT_EQ(a->transA, 0);
  EXPECT_EQ(a->transB, 1);
}

TEST(OpAttrs, WrongTypeNamesNodeAttributeAndExpectedType) {
  NodeBuffer b(fb::OpType::LeakyRelu, {0}, {1}, [](flatbuffers::FlatBufferBuilder& f) {
    return std::vector<flatbuffers::Offset<fb::Attr>>{
        fb::CreateAttrDirect(f, "alpha", fb::AttrType::Int, 3)};
  });
  Result<LeakyReluAttrs> a = LeakyReluAttrs::read(AttrView(b.node));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Error::InvalidProgram);
  EXPECT_NE(std::strstr(a.status().message(), "LeakyRelu node 'n1'"), nullptr)
      << a.status().message();
  EXPECT_NE(std::strstr(a.status().message(), "'alpha' has type Int, expected Float"), nullptr)
      << a.status().message();
}

TEST(OpAttrs, MissingRequiredAttribute) {
  NodeBuffer b(fb::OpType::Cast, {0}, {1});
  Result<CastAttrs> a = CastAttrs::read(AttrView(b.node));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(std::strstr(a.status().message(), "missing required attribute 'to'"), nullptr);
}

TEST(OpAttrs, CompilerNodesReadTheSameWay) {
  Node n;
  n.op = fb::OpType::Softmax;
  n.name = "s";
  n.attrs.push_back(Attr::make_int("axis", 1));
  Result<SoftmaxAttrs> a = SoftmaxAttrs::read(n);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->axis, 1);
  n.attrs[0] = Attr::make_float("axis", 1.0f);
  EXPECT_FALSE(SoftmaxAttrs::read(n).ok());
}

TEST(ValidateNode, ArityFromTheTable) {
  EXPECT_TRUE(validate_node_against_table(NodeBuffer(fb::OpType::Add, {0, 1}, {2}).node).is_ok());
  Status st = validate_node_against_table(NodeBuffer(fb::OpType::Add, {0}, {2}).node);
  EXPECT_EQ(st.code(), Error::InvalidProgram);
  EXPECT_NE(std::strstr(st.message(), "Add node 'n1': 1 inputs, expected 2 to 2"), nullptr)
      << st.message();
  // Trailing absent optional inputs do not count; a required one may not be absent.
  EXPECT_TRUE(
      validate_node_against_table(NodeBuffer(fb::OpType::Conv, {0, 1, -1}, {2}).node).is_ok());
  st = validate_node_against_table(NodeBuffer(fb::OpType::Conv, {0, -1, 3}, {2}).node);
  EXPECT_NE(std::strstr(st.message(), "required input 1 is absent"), nullptr) << st.message();
  EXPECT_FALSE(validate_node_against_table(NodeBuffer(fb::OpType::Mish, {0}, {1, 2}).node).is_ok());
}

TEST(ValidateNode, AttributeTypesFromTheTable) {
  NodeBuffer b(fb::OpType::HardSigmoid, {0}, {1}, [](flatbuffers::FlatBufferBuilder& f) {
    return std::vector<flatbuffers::Offset<fb::Attr>>{
        fb::CreateAttrDirect(f, "beta", fb::AttrType::String, 0, 0, nullptr, nullptr, "x")};
  });
  Status st = validate_node_against_table(b.node);
  EXPECT_NE(std::strstr(st.message(), "'beta' has type String, expected Float"), nullptr)
      << st.message();
}

}  // namespace
}  // namespace tessera::ir
