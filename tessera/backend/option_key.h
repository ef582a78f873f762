// OptionKey<T>: a typed option key. The value type travels with the key, so setting a string on an
// int key does not compile:  constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/backend/name_limits.h"
#include "tessera/backend/option_type.h"

namespace tessera {

/// FNV-1a hash of a key; used to make key comparisons cheap. Stable across builds.
constexpr uint32_t hash_option_key(std::string_view key) {
  uint32_t h = 2166136261u;
  for (char c : key) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

namespace detail {
// Not constexpr on purpose: reaching it during constant evaluation is a compile error.
inline void option_key_too_long() {
  assert(false && "option key longer than kMaxNameLength characters");
}
}  // namespace detail

template <OptionValueType T>
struct OptionKey {
  using ValueType = T;

  /// `name` must be a string with static storage duration (normally a literal) of at most
  /// kMaxNameLength characters; a longer literal fails to compile in a constexpr key.
  constexpr explicit OptionKey(const char* key_name)
      : name(key_name),
        length(std::string_view(key_name).size()),
        hash(hash_option_key(std::string_view(key_name))) {
    if (length > kMaxNameLength) detail::option_key_too_long();
  }

  std::string_view view() const { return {name, length}; }

  const char* name;
  size_t length;
  uint32_t hash;
};

}  // namespace tessera
