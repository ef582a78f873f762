// OnnxBuilder: small ONNX models for the compiler tests, built with libonnx's protobuf API.
#pragma once

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tessera::compiler::testing {

/// A dim: a size or a dim_param name.
using OnnxDim = std::variant<int64_t, std::string>;

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13) {
    model_.set_ir_version(7);
    model_.set_producer_name("tessera-test");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  void input(const std::string& name, std::vector<OnnxDim> dims, int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_input(), name, dims, elem);
  }
  void output(const std::string& name, std::vector<OnnxDim> dims = {}, int elem = onnx::TensorProto::FLOAT,
              bool with_shape = false) {
    value_info(model_.mutable_graph()->add_output(), name, dims, elem, with_shape);
  }
  void floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : data) t->add_float_data(f);
  }
  void ints(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& data) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : data) t->add_int64_data(v);
  }

  class Node {
   public:
    explicit Node(onnx::NodeProto* n) : n_(n) {}
    Node& i(const std::string& name, int64_t v) {
      auto* a = attr(name, onnx::AttributeProto::INT);
      a->set_i(v);
      return *this;
    }
    Node& f(const std::string& name, float v) {
      auto* a = attr(name, onnx::AttributeProto::FLOAT);
      a->set_f(v);
      return *this;
    }
    Node& s(const std::string& name, const std::string& v) {
      auto* a = attr(name, onnx::AttributeProto::STRING);
      a->set_s(v);
      return *this;
    }
    Node& ints(const std::string& name, const std::vector<int64_t>& v) {
      auto* a = attr(name, onnx::AttributeProto::INTS);
      for (int64_t x : v) a->add_ints(x);
      return *this;
    }
    Node& tensor_ints(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
      auto* a = attr(name, onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::INT64);
      for (int64_t d : dims) t->add_dims(d);
      for (int64_t x : v) t->add_int64_data(x);
      return *this;
    }
    Node& tensor_float(const std::string& name, float v) {
      auto* a = attr(name, onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_float_data(v);
      return *this;
    }

   private:
    onnx::AttributeProto* attr(const std::string& name, onnx::AttributeProto::AttributeType type) {
      auto* a = n_->add_attribute();
      a->set_name(name);
      a->set_type(type);
      return a;
    }
    onnx::NodeProto* n_;
  };

  Node node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
            std::string name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (auto& s : inputs) n->add_input(s);
    for (auto& s : outputs) n->add_output(s);
    return Node(n);
  }
  /// A Constant node producing int64 `values` (1-D, or a scalar when `scalar`).
  void const_ints(const std::string& out, const std::vector<int64_t>& values, bool scalar = false) {
    node("Constant", {}, {out}).tensor_ints("value", scalar ? std::vector<int64_t>{} : std::vector<int64_t>{
                                                                  static_cast<int64_t>(values.size())},
                                            values);
  }

  onnx::ModelProto& model() { return model_; }
  /// The serialized model. Outputs declared without dims get the shape ONNX infers for them.
  std::string bytes() const {
    onnx::ModelProto m = model_;
    onnx::ModelProto inferred = model_;
    try {
      onnx::shape_inference::InferShapes(inferred);
    } catch (const std::exception&) {
      return m.SerializeAsString();
    }
    for (int i = 0; i < m.graph().output_size(); ++i) {
      auto* out = m.mutable_graph()->mutable_output(i);
      if (out->type().tensor_type().has_shape()) continue;
      for (const auto& vi : inferred.graph().output()) {
        if (vi.name() == out->name() && vi.type().tensor_type().has_shape()) *out->mutable_type() = vi.type();
      }
      for (const auto& vi : inferred.graph().value_info()) {
        if (vi.name() == out->name() && vi.type().tensor_type().has_shape()) *out->mutable_type() = vi.type();
      }
    }
    return m.SerializeAsString();
  }

 private:
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<OnnxDim>& dims,
                         int elem, bool with_shape = true) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (!with_shape && dims.empty()) return;
    auto* shape = tt->mutable_shape();
    for (const OnnxDim& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d)) {
        dim->set_dim_value(std::get<int64_t>(d));
      } else {
        dim->set_dim_param(std::get<std::string>(d));
      }
    }
  }

  onnx::ModelProto model_;
};

/// ShuffleNet's channel shuffle (2 groups) as torchvision exports it with a dynamic batch: the
/// view shapes computed from Shape/Gather/Div/Unsqueeze/Concat, then Reshape ("shuffle_view"),
/// Transpose(0, 2, 1, 3, 4) and Reshape ("shuffle_back") on x [batch, channels, hw, hw].
inline OnnxBuilder channel_shuffle_model(int64_t channels, int64_t hw) {
  OnnxBuilder b(13);
  b.input("x", {std::string("batch"), channels, hw, hw});
  b.node("Shape", {"x"}, {"s"});
  const char* names[4] = {"n", "c", "h", "w"};
  for (int i = 0; i < 4; ++i) {
    b.const_ints(std::string("i") + names[i], {i}, /*scalar=*/true);
    b.node("Gather", {"s", std::string("i") + names[i]}, {names[i]}).i("axis", 0);
  }
  b.const_ints("two", {2}, true);
  b.node("Div", {"c", "two"}, {"cpg"});
  b.const_ints("axes0", {0});
  for (const char* v : {"n", "cpg", "h", "w"}) {
    b.node("Unsqueeze", {v, "axes0"}, {std::string(v) + "_1d"});
  }
  b.const_ints("groups", {2});
  b.node("Concat", {"n_1d", "groups", "cpg_1d", "h_1d", "w_1d"}, {"shape5"}).i("axis", 0);
  b.node("Reshape", {"x", "shape5"}, {"r5"}, "shuffle_view");
  b.node("Transpose", {"r5"}, {"t5"}).ints("perm", {0, 2, 1, 3, 4});
  b.const_ints("minus1", {-1});
  b.node("Concat", {"n_1d", "minus1", "h_1d", "w_1d"}, {"shape4"}).i("axis", 0);
  b.node("Reshape", {"t5", "shape4"}, {"y"}, "shuffle_back");
  b.output("y", {std::string("batch"), channels, hw, hw});
  return b;
}

}  // namespace tessera::compiler::testing
