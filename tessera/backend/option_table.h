// OptionTable: fixed-capacity storage of option lists by name (a backend name or a delegate id),
// shared by LoadBackendOptionsMap, DelegateOptionsMap and ExecuteOptions. No heap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tessera/backend/option_value.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera::detail {

/// Up to kMaxNames names of at most kLongestName characters (kMaxBackendNameLength for backend
/// names, kMaxNameLength for delegate ids), each with a list of options with distinct keys; at
/// most kMaxOptions options in total. Options are copied in.
template <size_t kMaxNames, size_t kLongestName, size_t kMaxOptions>
class OptionTable {
 public:
  /// Adds `options` to the list of `name`, replacing values of keys already there (the last of
  /// duplicate keys wins). All or nothing: on error nothing changes. `what` names the kind of
  /// name in messages ("backend", "delegate"). Errors: InvalidArgument (empty name),
  /// OptionTooLong (name too long), MemoryAllocationFailed (capacity).
  Status merge(std::string_view name, Span<const BackendOption> options, const char* what) {
    if (name.empty()) return Status::error(Error::InvalidArgument, "empty %s name", what);
    if (name.size() > kLongestName) {
      return Status::error(Error::OptionTooLong, "%s name '%.*s' has %zu characters; at most %zu",
                           what, static_cast<int>(std::min<size_t>(name.size(), 80)), name.data(),
                           name.size(), kLongestName);
    }
    int e = find(name);
    size_t added = 0;
    for (size_t i = 0; i < options.size(); ++i) {
      bool seen = e >= 0 && find_in(static_cast<size_t>(e), options[i]) >= 0;
      for (size_t j = 0; j < i && !seen; ++j) seen = options[j].key() == options[i].key();
      if (!seen) ++added;
    }
    if (e < 0 && num_names_ == kMaxNames) {
      return Status::error(Error::MemoryAllocationFailed,
                           "cannot add %s '%.*s': capacity of %zu %ss reached", what,
                           static_cast<int>(name.size()), name.data(), kMaxNames, what);
    }
    if (num_options_ + added > kMaxOptions) {
      return Status::error(Error::MemoryAllocationFailed,
                           "cannot add %zu options for %s '%.*s': capacity of %zu options "
                           "reached (%zu in use)",
                           added, what, static_cast<int>(name.size()), name.data(), kMaxOptions,
                           num_options_);
    }
    if (e < 0) {
      Entry& entry = entries_[num_names_];
      std::memcpy(entry.name, name.data(), name.size());
      entry.name[name.size()] = '\0';
      entry.name_length = name.size();
      entry.begin = num_options_;
      entry.count = 0;
      e = static_cast<int>(num_names_++);
    }
    Entry& entry = entries_[e];
    for (const BackendOption& option : options) {
      int existing = find_in(static_cast<size_t>(e), option);
      if (existing >= 0) {
        options_[entry.begin + static_cast<size_t>(existing)] = option;
        continue;
      }
      // Open a slot at the end of this entry's run, shifting later runs right by one.
      size_t slot = entry.begin + entry.count;
      std::copy_backward(options_ + slot, options_ + num_options_, options_ + num_options_ + 1);
      options_[slot] = option;
      ++num_options_;
      ++entry.count;
      for (size_t k = static_cast<size_t>(e) + 1; k < num_names_; ++k) ++entries_[k].begin;
    }
    return Status::ok();
  }

  /// Index of `name`, or -1.
  int find(std::string_view name) const {
    for (size_t i = 0; i < num_names_; ++i) {
      if (name_at(i) == name) return static_cast<int>(i);
    }
    return -1;
  }
  /// The options of `name`; empty if it has none.
  Span<const BackendOption> options_for(std::string_view name) const {
    int e = find(name);
    return e < 0 ? Span<const BackendOption>() : options_at(static_cast<size_t>(e));
  }

  size_t size() const { return num_names_; }
  bool empty() const { return num_names_ == 0; }
  std::string_view name_at(size_t i) const { return {entries_[i].name, entries_[i].name_length}; }
  Span<const BackendOption> options_at(size_t i) const {
    return {options_ + entries_[i].begin, entries_[i].count};
  }
  size_t total_options() const { return num_options_; }
  void clear() {
    num_names_ = 0;
    num_options_ = 0;
  }

 private:
  struct Entry {
    char name[kLongestName + 1];
    size_t name_length;
    size_t begin;
    size_t count;
  };

  int find_in(size_t e, const BackendOption& option) const {
    const Entry& entry = entries_[e];
    for (size_t i = 0; i < entry.count; ++i) {
      const BackendOption& o = options_[entry.begin + i];
      if (o.key_hash() == option.key_hash() && o.key() == option.key()) return static_cast<int>(i);
    }
    return -1;
  }

  Entry entries_[kMaxNames];
  size_t num_names_ = 0;
  BackendOption options_[kMaxOptions];
  size_t num_options_ = 0;
};

}  // namespace tessera::detail
