#include "tessera/backend/global_options.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/context.h"
#include "tessera/core/log.h"

namespace tessera {

const char* backend_lifecycle_name(BackendLifecycle state) {
  switch (state) {
    case BackendLifecycle::Registered:
      return "registered";
    case BackendLifecycle::Configured:
      return "configured";
    case BackendLifecycle::Initialized:
      return "initialized";
  }
  return "?";
}

namespace detail {

const BackendOption* locked_value(const BackendEntry& entry, std::string_view key,
                                  OptionLevel* source) {
  for (size_t i = 0; i < entry.num_locked; ++i) {
    if (entry.locked[i].key() == key) {
      if (source != nullptr) *source = entry.locked_source[i];
      return &entry.locked[i];
    }
  }
  return nullptr;
}

Status init_only_locked_status(const BackendEntry& entry, const OptionSpec& spec,
                               const BackendOption& requested, const char* where) {
  char wanted[64];
  char locked[64] = "?";
  requested.format_value(wanted, sizeof wanted);
  if (const BackendOption* l = locked_value(entry, spec.key_view())) {
    l->format_value(locked, sizeof locked);
  }
  return Status::error(Error::InvalidState,
                       "%s: option '%s' is init-only and was locked when the backend initialised "
                       "its shared state (%s); %s %s differs from the locked %s",
                       entry.name_storage, spec.key, entry.lock_reason, where, wanted, locked);
}

}  // namespace detail

namespace {

// The value a global key has now: stored, or the default. Caller holds the entry mutex.
BackendOption current_global(const detail::BackendEntry& entry, const OptionSpec& spec,
                             OptionLevel* source = nullptr) {
  for (size_t i = 0; i < entry.num_globals; ++i) {
    if (entry.globals[i].key() == spec.key_view()) {
      if (source != nullptr) *source = OptionLevel::Global;
      return entry.globals[i];
    }
  }
  if (source != nullptr) *source = OptionLevel::Default;
  return spec.default_option();
}

}  // namespace

Status set_option(std::string_view backend, Span<const BackendOption> options,
                  Validation validation) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
  const Span<const OptionSpec> schema = entry->schema;

  // Stage 1: validate everything; duplicates collapse to the last value. Entries of a
  // with_entries() option ("backend_option.GpuAcc.TuningLevel") wait for stage 2, which merges
  // them into the option's value under the lock.
  BackendOption staged[kMaxSchemaOptions];
  size_t staged_spec[kMaxSchemaOptions];
  size_t num_staged = 0;
  BackendOption entries[kMaxSchemaOptions];
  size_t entry_spec[kMaxSchemaOptions];
  size_t num_entries = 0;
  for (const BackendOption& option : options) {
    size_t index = 0;
    Status s = validate_option(backend, schema, option, OptionLevel::Global, &index);
    if (!s.is_ok()) {
      if (s.code() == Error::OptionUnknownKey && validation == Validation::Lenient) {
        TESSERA_LOG_WARNING("%s (skipped: lenient mode)", s.message());
        continue;
      }
      return s;
    }
    if (option.key() != schema[index].key_view()) {
      if (num_entries == kMaxSchemaOptions) {
        return Status::error(Error::InvalidArgument,
                             "%.*s: more than %zu option entries in one set_option call",
                             static_cast<int>(backend.size()), backend.data(), kMaxSchemaOptions);
      }
      entries[num_entries] = option;
      entry_spec[num_entries++] = index;
      continue;
    }
    size_t slot = num_staged;
    for (size_t k = 0; k < num_staged; ++k) {
      if (staged_spec[k] == index) slot = k;
    }
    staged[slot] = option;
    if (option.type() == OptionType::Enum) {
      (void)staged[slot].set_enum(option.as_string(),
                                  schema[index].choice_index(option.as_string()));
    }
    staged_spec[slot] = index;
    if (slot == num_staged) ++num_staged;
  }
  if (num_staged == 0 && num_entries == 0) return Status::ok();

  // Stage 2: under the backend's lock, merge entries, check init-only locks, let the backend
  // veto, commit.
  std::lock_guard<std::mutex> lock(entry->mutex);
  for (size_t e = 0; e < num_entries; ++e) {
    // Into the value this call sets, else the one stored now (or the default).
    const OptionSpec& spec = schema[entry_spec[e]];
    size_t slot = num_staged;
    for (size_t k = 0; k < num_staged; ++k) {
      if (staged_spec[k] == entry_spec[e]) slot = k;
    }
    const BackendOption base = slot < num_staged ? staged[slot] : current_global(*entry, spec);
    TESSERA_RETURN_IF_ERROR(merge_option_entry(backend, spec, base, entries[e], &staged[slot]));
    staged_spec[slot] = entry_spec[e];
    if (slot == num_staged) ++num_staged;
  }
  if (entry->lifecycle == BackendLifecycle::Initialized) {
    for (size_t k = 0; k < num_staged; ++k) {
      const OptionSpec& spec = schema[staged_spec[k]];
      if (!spec.is_init_only) continue;
      const BackendOption* locked = detail::locked_value(*entry, spec.key_view());
      if (locked == nullptr || !locked->same_value(staged[k])) {
        return detail::init_only_locked_status(*entry, spec, staged[k], "requested");
      }
    }
  }
  BackendOptionContext context(entry->name());
  Status hook = entry->backend->set_option(context, Span<const BackendOption>(staged, num_staged));
  if (!hook.is_ok()) return hook;
  for (size_t k = 0; k < num_staged; ++k) {
    size_t slot = entry->num_globals;
    for (size_t g = 0; g < entry->num_globals; ++g) {
      if (entry->globals[g].key() == staged[k].key()) slot = g;
    }
    entry->globals[slot] = staged[k];
    if (slot == entry->num_globals) ++entry->num_globals;
  }
  ++entry->version;
  if (entry->lifecycle == BackendLifecycle::Registered) {
    entry->lifecycle = BackendLifecycle::Configured;
  }
  return Status::ok();
}

Status get_option(std::string_view backend, Span<BackendOption> options) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
  const Span<const OptionSpec> schema = entry->schema;
  for (const BackendOption& option : options) {
    if (find_option_spec(schema, option.key()) < 0) {
      return unknown_option_status(backend, schema, option.key());
    }
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  for (BackendOption& option : options) {
    const OptionSpec& spec = schema[static_cast<size_t>(find_option_spec(schema, option.key()))];
    option = current_global(*entry, spec);
  }
  BackendOptionContext context(entry->name());
  return entry->backend->get_option(context, options);
}

Status mark_backend_initialized(std::string_view backend, std::string_view reason,
                                const ResolvedOptions* effective) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::NotFound);
  if (effective != nullptr && effective->backend() != backend) {
    return Status::error(Error::InvalidArgument,
                         "mark_backend_initialized('%.*s'): the effective options are of backend "
                         "'%.*s'",
                         static_cast<int>(backend.size()), backend.data(),
                         static_cast<int>(effective->backend().size()),
                         effective->backend().data());
  }
  std::lock_guard<std::mutex> lock(entry->mutex);
  if (entry->lifecycle == BackendLifecycle::Initialized) return Status::ok();
  if (reason.empty()) reason = "marked initialised without a reason";
  size_t n = std::min(reason.size(), sizeof entry->lock_reason - 1);
  std::memcpy(entry->lock_reason, reason.data(), n);
  entry->lock_reason[n] = '\0';
  entry->num_locked = 0;
  for (const OptionSpec& spec : entry->schema) {
    if (!spec.is_init_only) continue;
    int i = effective != nullptr ? effective->find(spec.key_view()) : -1;
    size_t slot = entry->num_locked++;
    if (i >= 0) {
      entry->locked[slot] = effective->option(static_cast<size_t>(i));
      entry->locked_source[slot] = effective->source(static_cast<size_t>(i));
    } else {
      entry->locked[slot] = current_global(*entry, spec, &entry->locked_source[slot]);
    }
  }
  entry->lifecycle = BackendLifecycle::Initialized;
  return Status::ok();
}

Result<BackendLifecycle> backend_lifecycle(std::string_view backend) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::NotFound);
  std::lock_guard<std::mutex> lock(entry->mutex);
  return entry->lifecycle;
}

Status reset_backend_options(std::string_view backend) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::NotFound);
  std::lock_guard<std::mutex> lock(entry->mutex);
  entry->num_globals = 0;
  entry->num_locked = 0;
  entry->lock_reason[0] = '\0';
  entry->lifecycle = BackendLifecycle::Registered;
  ++entry->version;
  return Status::ok();
}

}  // namespace tessera
