// DerivedValues: the values a backend actually used for options whose requested value was
// `auto` (or 0, or left at a default the backend derives), each with the reason. Filled by the
// backend at init through BackendInitContext::report_derived; read by applications through
// DelegateInfo and shown by `tessera-run --explain-options` / `--json` as "resolved".
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace tessera {

struct DerivedValue {
  char key[32] = {};
  char value[64] = {};    // as text: "2", "true", "fp32"
  char reason[192] = {};  // "auto: 2 usable performance cores, policy latency"
};

/// Fixed capacity, trivially copyable: the runtime keeps one per delegate in its allocator.
class DerivedValues {
 public:
  static constexpr size_t kCapacity = 8;

  /// Records (or replaces) the derived value of `key`. Over capacity, the record is dropped.
  void set(std::string_view key, std::string_view value, std::string_view reason) {
    DerivedValue* slot = find_mutable(key);
    if (slot == nullptr) {
      if (size_ == kCapacity) return;
      slot = &values_[size_++];
      copy(slot->key, sizeof slot->key, key);
    }
    copy(slot->value, sizeof slot->value, value);
    copy(slot->reason, sizeof slot->reason, reason);
  }
  /// The derived value of `key`, or null.
  const DerivedValue* find(std::string_view key) const {
    for (size_t i = 0; i < size_; ++i) {
      if (key == values_[i].key) return &values_[i];
    }
    return nullptr;
  }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  const DerivedValue& operator[](size_t i) const { return values_[i]; }

 private:
  DerivedValue* find_mutable(std::string_view key) {
    return const_cast<DerivedValue*>(static_cast<const DerivedValues*>(this)->find(key));
  }
  static void copy(char* dst, size_t size, std::string_view src) {
    std::snprintf(dst, size, "%.*s", static_cast<int>(src.size()), src.data());
  }

  size_t size_ = 0;
  DerivedValue values_[kCapacity];
};

static_assert(std::is_trivially_copyable_v<DerivedValues> &&
              std::is_trivially_destructible_v<DerivedValues>);

}  // namespace tessera
