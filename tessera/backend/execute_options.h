// ExecuteOptions: per-call options for Method::execute, by backend. Only keys a backend's schema
// marks execute-scoped are accepted. Fixed capacity, no heap; an empty set costs one branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/option_table.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Up to 8 backends and 16 options in total. Build once, reuse for many calls.
class ExecuteOptions {
 public:
  static constexpr size_t kMaxBackends = 8;
  static constexpr size_t kMaxOptions = 16;

  /// Adds options for `backend` (replacing keys already set), checked now against the
  /// registered backend's schema at execute scope. All or nothing. Errors: OptionUnknownBackend,
  /// OptionUnknownKey, OptionWrongScope, OptionTypeMismatch, OptionOutOfRange,
  /// OptionInvalidChoice, OptionTooLong, MemoryAllocationFailed (capacity).
  Status set_options(std::string_view backend, Span<const BackendOption> options);

  /// Typed set of one option.
  template <OptionValueType T, typename V>
  requires AssignableOptionValue<T, V> Status set(std::string_view backend, const OptionKey<T>& key,
                                                  V&& value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key.view()));
    TESSERA_RETURN_IF_ERROR(option.set_value<T>(T(static_cast<V&&>(value))));
    return set_options(backend, Span<const BackendOption>(&option, 1));
  }

  /// As set_options, without the schema check (select_execute_options still checks every call).
  /// For runtimes that forward options they did not build.
  Status set_options_unchecked(std::string_view backend, Span<const BackendOption> options) {
    return table_.merge(backend, options, "backend");
  }

  bool empty() const { return table_.empty(); }
  size_t size() const { return table_.size(); }
  std::string_view backend_at(size_t i) const { return table_.name_at(i); }
  Span<const BackendOption> options_at(size_t i) const { return table_.options_at(i); }
  /// Options for `backend`; empty if none. Views this object.
  Span<const BackendOption> get_options(std::string_view backend) const {
    return table_.options_for(backend);
  }
  void clear() { table_.clear(); }

  /// A shared empty instance, the default for Method::execute.
  static const ExecuteOptions& none();

 private:
  detail::OptionTable<kMaxBackends, 31, kMaxOptions> table_;
};

/// One backend's execute-scoped options for one call, validated. Views an ExecuteOptions.
struct ExecuteOptionView {
  Span<const BackendOption> options;

  bool empty() const { return options.empty(); }
  /// The option with `key`, or null.
  const BackendOption* find(std::string_view key, uint32_t hash) const {
    for (const BackendOption& o : options) {
      if (o.key_hash() == hash && o.key() == key) return &o;
    }
    return nullptr;
  }
};

namespace detail {
Status select_nonempty_execute_options(const ExecuteOptions& options, std::string_view backend,
                                       Span<const OptionSpec> schema, ExecuteOptionView* out);
}  // namespace detail

/// Selects and validates `backend`'s options from `options` for one execute call: every key
/// must be in `schema` with execute scope and a valid value (errors as validate_option, with
/// OptionWrongScope for a key that is not execute-scoped). No heap. An empty `options` returns
/// at once (inline) with an empty view.
inline Status select_execute_options(const ExecuteOptions& options, std::string_view backend,
                                     Span<const OptionSpec> schema, ExecuteOptionView* out) {
  if (options.empty()) {
    out->options = {};
    return Status::ok();
  }
  return detail::select_nonempty_execute_options(options, backend, schema, out);
}

}  // namespace tessera
