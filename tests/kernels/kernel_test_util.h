// Helpers for the portable kernel tests: build an fb::Node, hold tensors, prepare and run a
// kernel, compare against double-precision references.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include "tessera/core/tensor.h"
#include "tessera/ir/schema.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera::kernel_test {

using fb::OpType;

/// One attribute to put on a node.
struct AttrSpec {
  std::string name;
  fb::AttrType type = fb::AttrType::Int;
  int64_t i = 0;
  float f = 0.0f;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string s;
};

inline AttrSpec attr_int(std::string name, int64_t v) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = fb::AttrType::Int;
  a.i = v;
  return a;
}
inline AttrSpec attr_float(std::string name, float v) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = fb::AttrType::Float;
  a.f = v;
  return a;
}
inline AttrSpec attr_ints(std::string name, std::vector<int64_t> v) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = fb::AttrType::Ints;
  a.ints = std::move(v);
  return a;
}
inline AttrSpec attr_floats(std::string name, std::vector<float> v) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = fb::AttrType::Floats;
  a.floats = std::move(v);
  return a;
}
inline AttrSpec attr_string(std::string name, std::string v) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = fb::AttrType::String;
  a.s = std::move(v);
  return a;
}

/// Builds a Node FlatBuffer it owns. node() stays valid while the NodeSpec lives.
class NodeSpec {
 public:
  explicit NodeSpec(OpType op, std::string name = "n1") : op_(op), name_(std::move(name)) {}
  NodeSpec& attr(AttrSpec a) {
    attrs_.push_back(std::move(a));
    return *this;
  }
  NodeSpec& activation(fb::Activation act, float lo = -std::numeric_limits<float>::infinity(),
                       float hi = std::numeric_limits<float>::infinity()) {
    activation_ = act;
    lo_ = lo;
    hi_ = hi;
    return *this;
  }
  const fb::Node* node();

 private:
  OpType op_;
  std::string name_;
  std::vector<AttrSpec> attrs_;
  fb::Activation activation_ = fb::Activation::None;
  float lo_ = 0.0f, hi_ = 0.0f;
  flatbuffers::FlatBufferBuilder fbb_;
};

/// A tensor with its own storage (operator new alignment: 16 bytes).
class TestTensor {
 public:
  TestTensor() = default;
  TestTensor(ScalarType dtype, std::vector<int64_t> sizes);
  static TestTensor f32(std::vector<int64_t> sizes, const std::vector<float>& values);
  static TestTensor i64(std::vector<int64_t> sizes, const std::vector<int64_t>& values);
  static TestTensor i32(std::vector<int64_t> sizes, const std::vector<int32_t>& values);
  static TestTensor boolean(std::vector<int64_t> sizes, const std::vector<uint8_t>& values);
  /// Float32 tensor of uniform values in [lo, hi), deterministic in `seed`.
  static TestTensor random(std::vector<int64_t> sizes, uint32_t seed, float lo = -1.0f,
                           float hi = 1.0f);

  ScalarType dtype() const { return dtype_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype_); }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  Tensor tensor() { return Tensor(dtype_, sizes_, storage_.data()); }

  template <typename T>
  std::vector<T> values() const {
    std::vector<T> v(static_cast<size_t>(numel()));
    if (!v.empty()) std::memcpy(v.data(), storage_.data(), v.size() * sizeof(T));
    return v;
  }
  std::vector<float> floats() const { return values<float>(); }
  /// Float32 values widened to double.
  std::vector<double> doubles() const;
  float at(size_t i) const { return floats()[i]; }

 private:
  ScalarType dtype_ = ScalarType::Float32;
  std::vector<int64_t> sizes_;
  std::vector<uint8_t> storage_;  // exactly nbytes (at least 1), so ASan sees overruns
};

/// Prepares the kernel on `node` with the given tensors (nullptr = absent input) and, if that
/// succeeds, runs it twice over outputs pre-filled with different garbage, checking that both
/// runs give identical bytes and that run_kernel does not allocate on the heap. The allocator
/// hands prepare a separate heap block per allocation (up to `arena_bytes` in total), so the
/// sanitizers see any overrun of kernel state or scratch.
Status run_op(const fb::Node* node, std::vector<TestTensor*> inputs,
              std::vector<TestTensor*> outputs, size_t arena_bytes = 64u << 20);
/// prepare_kernel only.
Status prepare_op(const fb::Node* node, std::vector<TestTensor*> inputs,
                  std::vector<TestTensor*> outputs, size_t arena_bytes = 64u << 20);

/// Expects |got - ref| <= rtol * max(|ref|, mag) element by element, where mag (optional, same
/// length) is the magnitude of the terms that formed ref (e.g. sum |a*b|): float32 accumulation
/// is judged relative to what it summed, not to a result that cancelled.
void expect_close(const std::vector<float>& got, const std::vector<double>& ref,
                  const std::vector<double>& mag = {}, double rtol = 1e-5);

/// Expects an error with `code` whose message contains `needle`.
void expect_error(const Status& st, Error code, const char* needle = "");

/// Heap allocations made by operator new in this process so far.
long heap_allocations();

}  // namespace tessera::kernel_test
