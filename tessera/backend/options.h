// BackendOptions<N>: a fixed-capacity list of options built by the caller (no heap).
//
//   BackendOptions<4> opts;
//   TESSERA_RETURN_IF_ERROR(opts.set(kNumThreads, 4));
//   TESSERA_RETURN_IF_ERROR(set_option("xnnpack", opts.view()));
#pragma once

#include <cstddef>
#include <string_view>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Up to N options with distinct keys. Setting a key that is already present replaces its value
/// (last set wins). Every setter either succeeds or leaves the list unchanged; errors:
/// InvalidArgument (empty key), OptionTooLong (key over 63 or string over 255 characters),
/// MemoryAllocationFailed (all N slots in use by other keys).
template <size_t N>
class BackendOptions {
 public:
  static_assert(N > 0, "BackendOptions needs a capacity of at least one");
  static constexpr size_t kCapacity = N;

  /// Typed set: the value must suit the key's type at compile time (a string on an int key
  /// does not compile).
  template <OptionValueType T, typename V>
  requires AssignableOptionValue<T, V> Status set(const OptionKey<T>& key, V&& value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key.view()));
    TESSERA_RETURN_IF_ERROR(option.set_value<T>(T(static_cast<V&&>(value))));
    return put(option);
  }

  Status set_bool(std::string_view key, bool value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    option.set_bool(value);
    return put(option);
  }
  Status set_int(std::string_view key, int64_t value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    option.set_int(value);
    return put(option);
  }
  Status set_double(std::string_view key, double value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    option.set_double(value);
    return put(option);
  }
  Status set_string(std::string_view key, std::string_view value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    TESSERA_RETURN_IF_ERROR(option.set_string(value));
    return put(option);
  }
  Status set_enum(std::string_view key, std::string_view choice) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key));
    TESSERA_RETURN_IF_ERROR(option.set_enum(choice));
    return put(option);
  }

  /// Adds (or replaces) a whole option.
  Status put(const BackendOption& option) {
    for (size_t i = 0; i < size_; ++i) {
      if (options_[i].key_hash() == option.key_hash() && options_[i].key() == option.key()) {
        options_[i] = option;
        return Status::ok();
      }
    }
    if (size_ == N) {
      return Status::error(Error::MemoryAllocationFailed,
                           "BackendOptions<%zu> is full; cannot add option '%s' (use a larger N)",
                           N, option.key_c_str());
    }
    options_[size_++] = option;
    return Status::ok();
  }

  /// Labels every option set so far with `origin` (see BackendOption::set_origin), e.g. the
  /// settings file an application read them from. All or nothing; OptionTooLong if too long.
  Status set_origin(std::string_view origin) {
    if (origin.size() > kMaxOptionOriginLength) {
      BackendOption probe;
      return probe.set_origin(origin);  // the error
    }
    for (size_t i = 0; i < size_; ++i) (void)options_[i].set_origin(origin);
    return Status::ok();
  }

  /// The option with `key`, or nullptr.
  const BackendOption* find(std::string_view key) const {
    for (size_t i = 0; i < size_; ++i) {
      if (options_[i].key() == key) return &options_[i];
    }
    return nullptr;
  }

  /// Typed read: NotFound if absent, OptionTypeMismatch if set with another type.
  template <OptionValueType T>
  Result<T> get(const OptionKey<T>& key) const {
    const BackendOption* option = find(key.view());
    if (option == nullptr) {
      return Status::error(Error::NotFound, "option '%s' is not set", key.name);
    }
    return option->template get<T>();
  }

  /// The options set so far, in first-set order. Views this object.
  Span<const BackendOption> view() const { return {options_, size_}; }
  /// Mutable view, e.g. for get_option() to fill in values.
  Span<BackendOption> mutable_view() { return {options_, size_}; }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }

 private:
  BackendOption options_[N];
  size_t size_ = 0;
};

}  // namespace tessera
