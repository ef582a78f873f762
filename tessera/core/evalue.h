// EValue: a tagged value of a Method (none, int, double, bool, tensor, int list).
#pragma once

#include <cstdint>

#include "tessera/core/span.h"
#include "tessera/core/tensor.h"

namespace tessera {

class EValue {
 public:
  enum class Tag : uint8_t { None, Int, Double, Bool, Tensor, IntList };

  EValue() : tag_(Tag::None), int_(0) {}
  explicit EValue(int64_t v) : tag_(Tag::Int), int_(v) {}
  explicit EValue(double v) : tag_(Tag::Double), double_(v) {}
  explicit EValue(bool v) : tag_(Tag::Bool), bool_(v) {}
  explicit EValue(const Tensor& t) : tag_(Tag::Tensor), tensor_(t) {}
  /// The list is borrowed: it must outlive this EValue.
  explicit EValue(Span<const int64_t> list) : tag_(Tag::IntList), list_{list.data(), list.size()} {}

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_int() const { return tag_ == Tag::Int; }
  bool is_double() const { return tag_ == Tag::Double; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  bool is_int_list() const { return tag_ == Tag::IntList; }

  // Accessors: the caller checks the tag first (asserted in debug builds).
  int64_t to_int() const { return int_; }
  double to_double() const { return double_; }
  bool to_bool() const { return bool_; }
  Tensor& to_tensor() { return tensor_; }
  const Tensor& to_tensor() const { return tensor_; }
  Span<const int64_t> to_int_list() const { return {list_.data, list_.size}; }

 private:
  struct List {
    const int64_t* data;
    size_t size;
  };
  Tag tag_;
  union {
    int64_t int_;
    double double_;
    bool bool_;
    Tensor tensor_;
    List list_;
  };
};

const char* evalue_tag_name(EValue::Tag tag);

}  // namespace tessera
