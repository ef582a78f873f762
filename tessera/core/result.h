// Result<T>: either a value or a non-OK Status. Move-only; never "ok without a value".
#pragma once

#include <cassert>
#include <new>
#include <type_traits>
#include <utility>

#include "tessera/core/status.h"

namespace tessera {

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; use a pointer");

 public:
  /// A Result holding a value.
  Result(T value) : has_value_(true) { new (&value_) T(std::move(value)); }  // NOLINT implicit
  /// A Result holding an error. An OK status here is a programming error and becomes Internal.
  Result(Status status) : has_value_(false), status_(std::move(status)) {  // NOLINT implicit
    if (status_.is_ok()) status_ = Status(Error::Internal, "Result constructed from OK status");
  }
  Result(Error code) : Result(Status(code)) {}  // NOLINT implicit

  Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_value_(other.has_value_), status_(other.status_) {
    if (has_value_) new (&value_) T(std::move(other.value_));
  }
  Result& operator=(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      reset();
      has_value_ = other.has_value_;
      status_ = other.status_;
      if (has_value_) new (&value_) T(std::move(other.value_));
    }
    return *this;
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ~Result() { reset(); }

  bool ok() const { return has_value_; }
  /// The error; OK when a value is held.
  const Status& status() const { return status_; }
  Error error() const { return status_.code(); }

  T& value() & {
    assert(has_value_);
    return value_;
  }
  const T& value() const& {
    assert(has_value_);
    return value_;
  }
  T&& value() && {
    assert(has_value_);
    return std::move(value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void reset() {
    if (has_value_) {
      value_.~T();
      has_value_ = false;
    }
  }

  bool has_value_;
  Status status_;
  union {
    T value_;
  };
};

}  // namespace tessera
