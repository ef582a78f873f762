// LoadBackendOptionsMap and DelegateOptionsMap: the load-time option scopes, given to
// Program::load_method. Fixed capacity, no heap; options are copied in.
#pragma once

#include <cstddef>
#include <string_view>

#include "tessera/backend/name_limits.h"
#include "tessera/backend/option_key.h"
#include "tessera/backend/option_table.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

namespace detail {

/// Shared shape of the two maps below: a name (backend or delegate id) to a list of options.
template <size_t kMaxNames, size_t kLongestName, size_t kMaxOptions, bool kByDelegate>
class NamedOptionsMap {
 public:
  static constexpr size_t kMaxEntries = kMaxNames;
  static constexpr size_t kMaxTotalOptions = kMaxOptions;

  /// Typed set of one option for `name`.
  template <OptionValueType T, typename V>
  requires AssignableOptionValue<T, V> Status set(std::string_view name, const OptionKey<T>& key,
                                                  V&& value) {
    BackendOption option;
    TESSERA_RETURN_IF_ERROR(option.set_key(key.view()));
    TESSERA_RETURN_IF_ERROR(option.set_value<T>(T(static_cast<V&&>(value))));
    return set_options(name, Span<const BackendOption>(&option, 1));
  }

  /// Adds options for `name` (replacing keys already set for it). All or nothing. The options
  /// are copied, not checked against a schema (that happens at load). Errors:
  /// InvalidArgument/OptionTooLong for the name, MemoryAllocationFailed when full.
  Status set_options(std::string_view name, Span<const BackendOption> options) {
    return table_.merge(name, options, kByDelegate ? "delegate" : "backend");
  }

  /// Options for `name`; empty if none. Views this map.
  Span<const BackendOption> get_options(std::string_view name) const {
    return table_.options_for(name);
  }

  size_t size() const { return table_.size(); }
  bool empty() const { return table_.empty(); }
  std::string_view name_at(size_t i) const { return table_.name_at(i); }
  Span<const BackendOption> options_at(size_t i) const { return table_.options_at(i); }
  void clear() { table_.clear(); }

 private:
  OptionTable<kMaxNames, kLongestName, kMaxOptions> table_;
};

}  // namespace detail

/// Load-time options per backend: every delegate of that backend in the loaded Method sees them
/// (precedence above global options). Up to 16 backends and 64 options in total.
class LoadBackendOptionsMap : public detail::NamedOptionsMap<16, kMaxBackendNameLength, 64, false> {
};

/// Load-time options per delegate instance, by delegate id ("<backend>#<index>", e.g.
/// "xnnpack#0"); precedence above LoadBackendOptionsMap. Up to 16 delegates and 64 options.
class DelegateOptionsMap : public detail::NamedOptionsMap<16, kMaxNameLength, 64, true> {};

/// The backend part of a delegate id: "xnnpack" for "xnnpack#0" (the whole id if it has no '#').
constexpr std::string_view backend_of_delegate_id(std::string_view delegate_id) {
  size_t hash = delegate_id.find('#');
  return hash == std::string_view::npos ? delegate_id : delegate_id.substr(0, hash);
}

}  // namespace tessera
