// ResolvedOptions: the effective options of one delegate, one entry per schema option, each with
// the scope its value came from and the origin label its value carried (the front end, file
// and line). Fixed capacity; lookups never touch the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tessera/backend/name_limits.h"
#include "tessera/backend/option_key.h"
#include "tessera/backend/option_level.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// The source for reports: "load", or with a non-empty `origin` "load (options.toml:3)". Writes
/// into `buf` (always terminated, truncated if short) and returns it.
const char* format_option_source(OptionLevel source, std::string_view origin, char* buf,
                                 size_t size);

/// Trivially copyable and destructible, so a runtime may keep one per delegate in its method
/// allocator. Built by resolve_options(); the schema it refers to belongs to the backend.
class ResolvedOptions {
 public:
  static constexpr size_t kCapacity = kMaxSchemaOptions;

  ResolvedOptions() = default;

  /// Resets to the schema defaults of `schema` (at most kCapacity options, as check_schema
  /// guarantees for registered backends), every source Default. `schema` must outlive this.
  Status reset(std::string_view backend, std::string_view delegate_id,
               Span<const OptionSpec> schema);

  /// Index of `key`, or -1. `hash` must be hash_option_key(key) (typed keys carry it).
  int find(std::string_view key) const { return find(key, hash_option_key(key)); }
  int find(std::string_view key, uint32_t hash) const {
    for (size_t slot = hash & (kTableSize - 1);; slot = (slot + 1) & (kTableSize - 1)) {
      const uint8_t entry = table_[slot];
      if (entry == 0) return -1;
      const size_t i = entry - 1u;
      if (hashes_[i] == hash && options_[i].key() == key) return static_cast<int>(i);
    }
  }

  /// Typed lookup of a schema key. NotFound (with a suggestion) if the schema has no such key,
  /// OptionTypeMismatch if the key has another type. Strings view this object.
  template <OptionValueType T>
  Result<T> get(const OptionKey<T>& key) const {
    int i = find(key.view(), key.hash);
    if (i < 0) return not_found(key.view());
    return typed<T>(static_cast<size_t>(i));
  }
  Result<bool> get_bool(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_double(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  Result<EnumValue> get_enum(std::string_view key) const;

  /// Overwrites entry `index` with `value` from `source`. The caller has validated `value`
  /// against the schema entry (validate_option); enum choice indexes are filled in here.
  void assign(size_t index, const BackendOption& value, OptionLevel source);

  size_t size() const { return size_; }
  const BackendOption& option(size_t i) const { return options_[i]; }
  OptionLevel source(size_t i) const { return sources_[i]; }
  /// Origin label of entry `i` (BackendOption::origin); empty for defaults, compile specs and
  /// values an application set without one.
  std::string_view origin(size_t i) const { return options_[i].origin(); }
  const OptionSpec& spec(size_t i) const { return schema_[i]; }
  Span<const OptionSpec> schema() const { return schema_; }
  std::string_view backend() const { return {backend_, backend_length_}; }
  std::string_view delegate_id() const { return {delegate_id_, delegate_id_length_}; }

  /// The NotFound error for a key this object does not hold.
  Status not_found(std::string_view key) const;
  /// The OptionTypeMismatch error for reading entry `index` as `wanted`.
  Status type_mismatch(size_t index, OptionType wanted) const;

  /// Entry `index` as T, or OptionTypeMismatch.
  template <OptionValueType T>
  Result<T> typed(size_t index) const {
    if (options_[index].type() != OptionTypeOf<T>::value) {
      return type_mismatch(index, OptionTypeOf<T>::value);
    }
    return options_[index].template value_as<T>();
  }

 private:
  template <OptionValueType T>
  Result<T> get_by_name(std::string_view key) const {
    int i = find(key);
    if (i < 0) return not_found(key);
    return typed<T>(static_cast<size_t>(i));
  }

  // Open-addressing index by key hash: entry index + 1, 0 for an empty slot. Less than half
  // full, so a probe always ends.
  static constexpr size_t kTableSize = 128;
  static_assert(kTableSize >= 2 * kCapacity && kCapacity < 255);

  Span<const OptionSpec> schema_;
  size_t size_ = 0;
  uint8_t table_[kTableSize] = {};
  uint32_t hashes_[kCapacity] = {};
  OptionLevel sources_[kCapacity] = {};
  char backend_[kMaxBackendNameLength + 1] = {};
  size_t backend_length_ = 0;
  char delegate_id_[kMaxNameLength + 1] = {};
  size_t delegate_id_length_ = 0;
  BackendOption options_[kCapacity];
};

static_assert(std::is_trivially_copyable_v<ResolvedOptions> &&
                  std::is_trivially_destructible_v<ResolvedOptions>,
              "runtimes keep ResolvedOptions in allocator memory without running destructors");

}  // namespace tessera
