// OptionType: the value types a backend option may hold, and the C++ type of each.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tessera {

enum class OptionType : uint8_t { Bool, Int, Double, String, Enum };

/// Lower-case name: "bool", "int", "double", "string", "enum".
const char* option_type_name(OptionType type);

/// The value of an enum-typed option: one of the choices its schema declares.
/// `name` views storage owned elsewhere (the option it was read from, or the caller's string).
struct EnumValue {
  std::string_view name;
  /// Position of `name` in the schema's choices; -1 until validated against a schema.
  int index = -1;
};

/// Maps a C++ value type to its OptionType. Specialised for the five supported types only.
template <typename T>
struct OptionTypeOf;
template <>
struct OptionTypeOf<bool> {
  static constexpr OptionType value = OptionType::Bool;
};
template <>
struct OptionTypeOf<int64_t> {
  static constexpr OptionType value = OptionType::Int;
};
template <>
struct OptionTypeOf<double> {
  static constexpr OptionType value = OptionType::Double;
};
template <>
struct OptionTypeOf<std::string_view> {
  static constexpr OptionType value = OptionType::String;
};
template <>
struct OptionTypeOf<EnumValue> {
  static constexpr OptionType value = OptionType::Enum;
};

/// A C++ type that an option value can be read as: bool, int64_t, double, std::string_view,
/// EnumValue.
template <typename T>
concept OptionValueType = requires {
  OptionTypeOf<T>::value;
};

namespace detail {
template <typename V>
using Bare = std::remove_cvref_t<V>;
template <typename V>
concept CharLike = std::same_as < Bare<V>,
char > || std::same_as<Bare<V>, signed char> || std::same_as<Bare<V>, unsigned char> ||
    std::same_as<Bare<V>, char8_t> || std::same_as<Bare<V>, char16_t> ||
    std::same_as<Bare<V>, char32_t> || std::same_as<Bare<V>, wchar_t>;
}  // namespace detail

/// True when a value of type V may be stored into an option of value type T without a lossy or
/// surprising conversion: bool only from bool, int64_t from non-bool non-char integers, double
/// from non-bool arithmetic values, strings from anything convertible to std::string_view, enums
/// only from EnumValue.
template <typename T, typename V>
concept AssignableOptionValue = (std::same_as<T, bool> && std::same_as<detail::Bare<V>, bool>) ||
                                (std::same_as<T, int64_t> && std::integral<detail::Bare<V>> &&
                                 !std::same_as<detail::Bare<V>, bool> && !detail::CharLike<V>) ||
                                (std::same_as<T, double> && std::is_arithmetic_v<detail::Bare<V>> &&
                                 !std::same_as<detail::Bare<V>, bool> && !detail::CharLike<V>) ||
                                (std::same_as<T, std::string_view> &&
                                 std::convertible_to<V, std::string_view> &&
                                 !std::same_as<detail::Bare<V>, std::nullptr_t>) ||
                                (std::same_as<T, EnumValue> &&
                                 std::same_as<detail::Bare<V>, EnumValue>);

}  // namespace tessera
