#include "tessera/backend/resolution.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/suggest.h"
#include "tessera/core/log.h"

namespace tessera {
namespace {

// Options of one scope after validation, by schema index (the last of duplicate keys wins).
// Points into the caller's maps, which outlive the resolve call.
struct Staged {
  const BackendOption* by_spec[kMaxSchemaOptions] = {};
};

bool skip_in_lenient(const Status& s, Validation validation) {
  if (validation == Validation::Lenient &&
      (s.code() == Error::OptionUnknownKey || s.code() == Error::OptionUnknownBackend ||
       s.code() == Error::NotFound)) {
    TESSERA_LOG_WARNING("%s (skipped: lenient mode)", s.message());
    return true;
  }
  return false;
}

// Validates `options` at `scope`; `index` (reset to `schema`) finds each key's spec quickly.
Status stage(std::string_view backend, Span<const OptionSpec> schema, const ResolvedOptions& index,
             Span<const BackendOption> options, OptionLevel scope, Validation validation,
             Staged* out) {
  for (const BackendOption& option : options) {
    int i = index.find(option.key(), option.key_hash());
    if (i >= 0 && schema[static_cast<size_t>(i)].allows(scope) &&
        option_value_is_valid(schema[static_cast<size_t>(i)], option)) {
      out->by_spec[i] = &option;  // the common case, without building a Status
      continue;
    }
    Status s = i < 0 ? unknown_option_status(backend, schema, option.key())
                     : validate_option_for(backend, schema[static_cast<size_t>(i)], option, scope);
    if (!s.is_ok()) {
      if (skip_in_lenient(s, validation)) continue;
      return s;
    }
    out->by_spec[i] = &option;
  }
  return Status::ok();
}

// Validates `options` at `scope` without keeping them (whole-map checks).
Status check_all(std::string_view backend, Span<const OptionSpec> schema,
                 Span<const BackendOption> options, OptionLevel scope, Validation validation) {
  for (const BackendOption& option : options) {
    Status s = validate_option(backend, schema, option, scope);
    if (!s.is_ok() && !skip_in_lenient(s, validation)) return s;
  }
  return Status::ok();
}

}  // namespace

Status resolve_options(std::string_view backend_name, const BackendInterface& backend,
                       std::string_view delegate_id, Span<const CompileSpec> compile_specs,
                       const LoadBackendOptionsMap* load, const DelegateOptionsMap* delegates,
                       Validation validation, ResolvedOptions* out) {
  const Span<const OptionSpec> schema = backend.option_schema();
  TESSERA_RETURN_IF_ERROR(out->reset(backend_name, delegate_id, schema));

  // 1. Compile specs: strings from the program, parsed against the schema.
  for (const CompileSpec& cs : compile_specs) {
    std::string_view key = cs.key != nullptr ? cs.key : "";
    int index = out->find(key);
    if (index < 0) {
      Status s = unknown_option_status(backend_name, schema, key);
      if (skip_in_lenient(s, validation)) continue;
      return s.with_prefix("compile spec");
    }
    const OptionSpec& spec = schema[static_cast<size_t>(index)];
    if (!spec.allows(OptionLevel::CompileSpec)) {
      char allowed[96];
      return Status::error(Error::OptionWrongScope,
                           "%.*s: option '%s' cannot be set at compile_spec scope (allowed: %s)",
                           static_cast<int>(backend_name.size()), backend_name.data(), spec.key,
                           format_scopes(spec.scopes, allowed, sizeof allowed));
    }
    BackendOption value;
    Status parsed =
        parse_option_value(backend_name, spec, cs.value != nullptr ? cs.value : "", &value);
    if (!parsed.is_ok()) return parsed.with_prefix("compile spec");
    out->assign(static_cast<size_t>(index), value, OptionLevel::CompileSpec);
  }

  // 2. Validate the load-time scopes before taking the backend's lock.
  Staged load_staged;
  Staged delegate_staged;
  if (load != nullptr) {
    TESSERA_RETURN_IF_ERROR(stage(backend_name, schema, *out, load->get_options(backend_name),
                                  OptionLevel::Load, validation, &load_staged));
  }
  if (delegates != nullptr) {
    TESSERA_RETURN_IF_ERROR(stage(backend_name, schema, *out, delegates->get_options(delegate_id),
                                  OptionLevel::Delegate, validation, &delegate_staged));
  }

  // 3. Global values, then the staged scopes, in one snapshot of the global store.
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend_name);
  std::unique_lock<std::mutex> lock;
  if (entry) {
    lock = std::unique_lock<std::mutex>(entry->mutex);
    for (size_t g = 0; g < entry->num_globals; ++g) {
      int index = out->find(entry->globals[g].key(), entry->globals[g].key_hash());
      if (index >= 0)
        out->assign(static_cast<size_t>(index), entry->globals[g], OptionLevel::Global);
    }
  }
  for (size_t i = 0; i < schema.size(); ++i) {
    if (load_staged.by_spec[i] != nullptr) {
      out->assign(i, *load_staged.by_spec[i], OptionLevel::Load);
    }
    if (delegate_staged.by_spec[i] != nullptr) {
      out->assign(i, *delegate_staged.by_spec[i], OptionLevel::Delegate);
    }
  }

  // 4. Init-only options cannot move away from the values locked at initialisation. One left
  //    at its default takes the locked value (that is what the backend runs with).
  if (entry && entry->lifecycle == BackendLifecycle::Initialized) {
    for (size_t i = 0; i < schema.size(); ++i) {
      if (!schema[i].is_init_only) continue;
      OptionLevel locked_source = OptionLevel::Default;
      const BackendOption* locked =
          detail::locked_value(*entry, schema[i].key_view(), &locked_source);
      if (locked == nullptr || locked->same_value(out->option(i))) continue;
      if (out->source(i) == OptionLevel::Default) {
        out->assign(i, *locked, locked_source);
      } else {
        char source[80];
        char where[96];
        std::snprintf(where, sizeof where, "the %s value",
                      format_option_source(out->source(i), out->origin(i), source, sizeof source));
        return detail::init_only_locked_status(*entry, schema[i], out->option(i), where);
      }
    }
  }
  return Status::ok();
}

Status check_load_options(const LoadBackendOptionsMap& load, Validation validation) {
  for (size_t i = 0; i < load.size(); ++i) {
    std::string_view backend = load.name_at(i);
    std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
    if (!entry) {
      Status s = detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
      if (skip_in_lenient(s, validation)) continue;
      return s;
    }
    TESSERA_RETURN_IF_ERROR(
        check_all(backend, entry->schema, load.options_at(i), OptionLevel::Load, validation));
  }
  return Status::ok();
}

Status check_delegate_options(const DelegateOptionsMap& map, Span<const DelegateTarget> delegates,
                              Validation validation) {
  for (size_t i = 0; i < map.size(); ++i) {
    std::string_view id = map.name_at(i);
    const DelegateTarget* target = nullptr;
    for (const DelegateTarget& d : delegates) {
      if (d.id == id) target = &d;
    }
    if (target == nullptr) {
      Suggester suggester(id);
      char known[128] = {};
      for (size_t k = 0; k < delegates.size(); ++k) {
        suggester.consider(delegates[k].id);
        if (k > 0) append_text(known, sizeof known, ", ");
        append_text(known, sizeof known, delegates[k].id);
      }
      if (delegates.empty()) append_text(known, sizeof known, "none");
      char hint[96] = {};
      if (!suggester.best().empty()) {
        std::snprintf(hint, sizeof hint, "did you mean '%.*s'?; ",
                      static_cast<int>(suggester.best().size()), suggester.best().data());
      }
      Status s = Status::error(Error::NotFound,
                               "delegate options name unknown delegate '%.*s' (%sdelegates: %s)",
                               static_cast<int>(id.size()), id.data(), hint, known);
      if (skip_in_lenient(s, validation)) continue;
      return s;
    }
    std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(target->backend);
    if (!entry) return detail::unknown_backend_status(target->backend, Error::OptionUnknownBackend);
    TESSERA_RETURN_IF_ERROR(check_all(target->backend, entry->schema, map.options_at(i),
                                      OptionLevel::Delegate, validation));
  }
  return Status::ok();
}

std::string explain_options(const ResolvedOptions& options) {
  std::string text;
  char value[300];
  char source[80];
  char line[480];
  for (size_t i = 0; i < options.size(); ++i) {
    options.option(i).format_value(value, sizeof value);
    format_option_source(options.source(i), options.origin(i), source, sizeof source);
    std::snprintf(line, sizeof line, "%s  %s = %s  (%s)\n", options.delegate_id().data(),
                  options.option(i).key_c_str(), value, source);
    text += line;
  }
  return text;
}

}  // namespace tessera
