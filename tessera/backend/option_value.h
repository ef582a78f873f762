// BackendOption: one option key with a typed value, held in fixed storage (no heap).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_type.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera {

/// Longest string (or enum choice) value a BackendOption can hold.
inline constexpr size_t kMaxOptionStringLength = 255;
/// Longest origin label a BackendOption can hold (see BackendOption::set_origin).
inline constexpr size_t kMaxOptionOriginLength = 47;

/// A key and a value of one of the OptionTypes. Strings and enum choices are copied into the
/// option's own storage, so an option never borrows. Enum values are stored by choice name (plus
/// the choice index once validated against a schema). An option may carry an origin label that
/// says where its value was written (a front end, a file and line); copies keep it, and reports
/// show it beside the scope. Trivially copyable.
class BackendOption {
 public:
  /// An option with an empty key and the value `false`.
  BackendOption() = default;

  /// Sets the key. OptionTooLong if longer than kMaxNameLength, InvalidArgument if empty.
  Status set_key(std::string_view key);

  void set_bool(bool value);
  void set_int(int64_t value);
  void set_double(double value);
  /// OptionTooLong (the option is unchanged) if longer than kMaxOptionStringLength.
  Status set_string(std::string_view value);
  /// Stores an enum choice by name; `index` is its position in the schema's choices, if known.
  Status set_enum(std::string_view choice, int index = -1);

  /// Stores `value` as type T (see OptionTypeOf). Fails like the setters above.
  template <OptionValueType T>
  Status set_value(const T& value);

  /// Labels where the value came from, for reports ("--option", "TESSERA_OPTIONS",
  /// "options.toml:3", or any name an application chooses); empty (the default) means the C++
  /// API. Not part of the value: same_value() ignores it. OptionTooLong (the option is
  /// unchanged) if longer than kMaxOptionOriginLength.
  Status set_origin(std::string_view origin);
  /// The origin label; empty if none was given. Views this option's storage.
  std::string_view origin() const { return origin_; }

  std::string_view key() const { return {key_, key_length_}; }
  const char* key_c_str() const { return key_; }
  uint32_t key_hash() const { return key_hash_; }
  bool has_key(std::string_view key) const { return key == this->key(); }
  OptionType type() const { return type_; }

  // Unchecked accessors: the caller checks type() first (asserted in debug builds).
  bool as_bool() const {
    assert(type_ == OptionType::Bool);
    return scalar_.b;
  }
  int64_t as_int() const {
    assert(type_ == OptionType::Int);
    return scalar_.i;
  }
  double as_double() const {
    assert(type_ == OptionType::Double);
    return scalar_.d;
  }
  /// String value (type String) or enum choice name (type Enum); views this option's storage.
  std::string_view as_string() const { return {string_, string_length_}; }
  const char* string_c_str() const { return string_; }
  EnumValue as_enum() const {
    assert(type_ == OptionType::Enum);
    return {as_string(), scalar_.enum_index};
  }

  /// The value as T; OptionTypeMismatch naming the key and both types if the option holds
  /// another type. String results view this option's storage.
  template <OptionValueType T>
  Result<T> get() const;

  /// The value as T, unchecked: the caller ensured type() == OptionTypeOf<T>::value.
  template <OptionValueType T>
  T value_as() const;

  /// True if both hold the same type and value (keys are not compared).
  bool same_value(const BackendOption& other) const;

  /// Writes the value as text (4, true, 0.5, "a string", gpu) into `buf`, always terminated.
  /// Returns `buf`.
  const char* format_value(char* buf, size_t size) const;

 private:
  Status type_mismatch(OptionType wanted) const;

  char key_[kMaxNameLength + 1] = {};
  uint8_t key_length_ = 0;
  OptionType type_ = OptionType::Bool;
  uint16_t string_length_ = 0;
  uint32_t key_hash_ = hash_option_key({});
  union Scalar {
    bool b;
    int64_t i;
    double d;
    int32_t enum_index;
  } scalar_ = {false};
  char string_[kMaxOptionStringLength + 1] = {};
  char origin_[kMaxOptionOriginLength + 1] = {};  // NUL-terminated
};

/// Builds an option in one call, e.g. make_option(kNumThreads, 4). Fails like BackendOption's
/// setters (only a too-long string can fail for a typed key).
template <OptionValueType T, typename V>
requires AssignableOptionValue<T, V> Result<BackendOption> make_option(const OptionKey<T>& key,
                                                                       V&& value);

// ----------------------------------------------------------------------------------------------
// Inline details.

template <OptionValueType T>
Status BackendOption::set_value(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    set_bool(value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    set_int(value);
  } else if constexpr (std::is_same_v<T, double>) {
    set_double(value);
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return set_string(value);
  } else {
    return set_enum(value.name, value.index);
  }
  return Status::ok();
}

template <OptionValueType T>
Result<T> BackendOption::get() const {
  constexpr OptionType wanted = OptionTypeOf<T>::value;
  if (type_ != wanted) return type_mismatch(wanted);
  return value_as<T>();
}

template <OptionValueType T>
T BackendOption::value_as() const {
  assert(type_ == OptionTypeOf<T>::value);
  if constexpr (std::is_same_v<T, bool>) {
    return scalar_.b;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return scalar_.i;
  } else if constexpr (std::is_same_v<T, double>) {
    return scalar_.d;
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return as_string();
  } else {
    return as_enum();
  }
}

template <OptionValueType T, typename V>
requires AssignableOptionValue<T, V> Result<BackendOption> make_option(const OptionKey<T>& key,
                                                                       V&& value) {
  BackendOption option;
  TESSERA_RETURN_IF_ERROR(option.set_key(key.view()));
  TESSERA_RETURN_IF_ERROR(option.set_value<T>(T(static_cast<V&&>(value))));
  return option;
}

}  // namespace tessera
