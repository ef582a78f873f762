// OpContext: what one op's prepare function sees, with the validation helpers every op shares.
// Internal to the portable kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "tessera/core/memory_allocator.h"
#include "tessera/core/result.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/attributes.h"
#include "tessera/ir/op_attrs.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera::portable {

/// A small fixed-capacity shape used for computed shapes.
struct Shape {
  int rank = 0;
  int64_t d[kMaxDims] = {};

  Shape() = default;
  explicit Shape(Span<const int64_t> s);
  Span<const int64_t> span() const { return {d, static_cast<size_t>(rank)}; }
  int64_t numel() const;
  /// Appends a dim; false if the rank would exceed kMaxDims.
  bool push(int64_t v);
};

/// The fused activation of a node as a clamp range. Relu is [0, +inf].
struct Activation {
  bool enabled = false;
  float min = 0.0f;
  float max = 0.0f;
};

/// Runtime error label ("Gather node 'g1'") kept in the state of kernels that can fail at run time.
struct Label {
  char text[80] = {};
};

class OpContext {
 public:
  OpContext(const KernelNode& kn, MemoryAllocator& allocator);

  /// Checks what every op needs: the activation marker is valid, every tensor has non-negative
  /// sizes whose element count fits in int64, and the default dim order.
  Status validate_common();

  fb::OpType op() const { return node_->op(); }
  const char* op_name() const;
  std::string_view node_name() const { return attrs_.node_name(); }
  const ir::AttrView& attrs() const { return attrs_; }
  /// The node's typed attributes (ir::GemmAttrs, ...), defaults from tessera/ir/op_attrs.def.
  template <typename A>
  Result<A> read_attrs() const {
    return A::read(attrs_);
  }
  MemoryAllocator& allocator() const { return *allocator_; }

  size_t num_inputs() const { return kn_.inputs.size(); }
  size_t num_outputs() const { return kn_.outputs.size(); }
  /// The i-th input, or nullptr when absent (null entry or beyond the list).
  const Tensor* input(size_t i) const { return i < kn_.inputs.size() ? kn_.inputs[i] : nullptr; }
  const Tensor* output(size_t i) const {
    return i < kn_.outputs.size() ? kn_.outputs[i] : nullptr;
  }

  /// An error whose message is "<Op> node '<name>': <formatted message>".
  [[gnu::format(printf, 3, 4)]] Status error(Error code, const char* format, ...) const;

  /// Arity: between `min` and `max` (SIZE_MAX: no limit) inputs, the first `min` present
  /// (InvalidProgram). Trailing absent inputs do not count.
  Status expect_inputs(size_t min, size_t max) const;
  /// Between `min` and `max` (SIZE_MAX: no limit) outputs, all present (InvalidProgram).
  Status expect_outputs(size_t min, size_t max) const;
  /// Output `i` has the computed sizes (ShapeMismatch naming both shapes).
  Status expect_output_shape(size_t i, Span<const int64_t> computed) const;
  /// Input `i` (present) has one of `allowed` dtypes (NotSupported naming the dtype).
  Status expect_input_dtype(size_t i, std::initializer_list<ScalarType> allowed) const;
  /// Input `i` (present) has dtype `t` (InvalidProgram: the IR's type constraints are broken).
  Status expect_same_dtype(size_t i, ScalarType t) const;
  /// Output `i` has dtype `t` (InvalidProgram).
  Status expect_output_dtype(size_t i, ScalarType t) const;

  /// Normalises an axis in [-rank, rank) (InvalidProgram otherwise). `what` names the attribute.
  Result<int> normalize_axis(int64_t axis, int rank, const char* what) const;

  /// A value-initialised T in allocator memory (T must be trivially destructible).
  template <typename T>
  Result<T*> make_state() {
    static_assert(std::is_trivially_destructible_v<T>);
    T* p = allocator_->make<T>();
    if (p == nullptr) return out_of_memory(sizeof(T));
    return p;
  }
  /// `n` floats of scratch in allocator memory (nullptr for n == 0).
  Result<float*> make_scratch(size_t n);
  /// `n` T in allocator memory (nullptr for n == 0).
  template <typename T>
  Result<T*> make_array(size_t n) {
    if (n == 0) return static_cast<T*>(nullptr);
    T* p = allocator_->allocate_array<T>(n);
    if (p == nullptr) return out_of_memory(n * sizeof(T));
    return p;
  }

  /// The node's fused activation (validated by validate_common()).
  const Activation& activation() const { return activation_; }
  /// Called by ops that apply the activation inside their own loops.
  void mark_activation_fused() { activation_fused_ = true; }
  bool activation_fused() const { return activation_fused_; }

  /// "<Op> node '<name>'" for run-time errors.
  void fill_label(Label* label) const;

 private:
  Status out_of_memory(size_t bytes) const;

  const KernelNode& kn_;
  const fb::Node* node_;
  ir::AttrView attrs_;
  MemoryAllocator* allocator_;
  Activation activation_;
  bool activation_fused_ = false;
};

/// Overflow-checked int64 arithmetic for size computations: once a step overflows, ok() is false.
class Checked {
 public:
  int64_t add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) ok_ = false;
    return ok_ ? r : 0;
  }
  int64_t sub(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) ok_ = false;
    return ok_ ? r : 0;
  }
  int64_t mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) ok_ = false;
    return ok_ ? r : 0;
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = true;
};

/// Largest value accepted for stride, dilation, pad and similar attributes.
inline constexpr int64_t kMaxAttrValue = int64_t{1} << 31;

/// "float32" etc. for messages.
inline const char* dtype_name(ScalarType t) { return scalar_type_name(t); }

}  // namespace tessera::portable
