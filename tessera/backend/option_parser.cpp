#include "tessera/backend/option_parser.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/global_options.h"
#include "tessera/core/log.h"

namespace tessera {
namespace {

struct Position {
  size_t line;
  size_t column;
};

// "source:line:col: message", keeping the code.
Status at(std::string_view source, Position pos, const Status& s) {
  char prefix[160];
  std::snprintf(prefix, sizeof prefix, "%.*s:%zu:%zu", static_cast<int>(source.size()),
                source.data(), pos.line, pos.column);
  return s.with_prefix(prefix);
}

// Labels `option` with where it was read: `source`, and `line` unless 0 ("--option",
// "options.toml:3"). A source too long for the label keeps its end (".../options.toml:3").
void set_origin(std::string_view source, size_t line, BackendOption* option) {
  char suffix[24] = {};
  if (line > 0) std::snprintf(suffix, sizeof suffix, ":%zu", line);
  const size_t suffix_length = std::strlen(suffix);
  char label[kMaxOptionOriginLength + 1];
  if (source.size() + suffix_length <= kMaxOptionOriginLength) {
    std::snprintf(label, sizeof label, "%.*s%s", static_cast<int>(source.size()), source.data(),
                  suffix);
  } else {
    const size_t keep = kMaxOptionOriginLength - 3 - suffix_length;
    std::snprintf(label, sizeof label, "...%.*s%s", static_cast<int>(keep),
                  source.data() + source.size() - keep, suffix);
  }
  (void)option->set_origin(label);  // fits by construction
}

// Unknown backends and keys are skipped with a warning in lenient mode. True if skipped.
bool skip_in_lenient(const Status& located, Validation validation) {
  if (validation == Validation::Lenient && (located.code() == Error::OptionUnknownKey ||
                                            located.code() == Error::OptionUnknownBackend)) {
    TESSERA_LOG_WARNING("%s (skipped: lenient mode)", located.message());
    return true;
  }
  return false;
}

// A value as a front end saw it: untyped text (command line, environment) or a TOML value.
struct RawValue {
  enum class Kind { Text, Bool, Int, Double, String, Other } kind;
  std::string_view text;  // Text and String
  bool b = false;
  int64_t i = 0;
  double d = 0;
  const char* other = "";  // the TOML type name for Other
};

// An entry "<spec>.<NAME>" of a with_entries() spec: the value keeps the type the front end
// gave it (text stays a string), and set_option merges it into the spec's value.
Status convert_entry(std::string_view backend, const OptionSpec& spec, std::string_view key,
                     const RawValue& value, OptionLevel scope, BackendOption* out, bool* at_value) {
  BackendOption option;
  TESSERA_RETURN_IF_ERROR(option.set_key(key));
  using Kind = RawValue::Kind;
  switch (value.kind) {
    case Kind::Text:
    case Kind::String:
      TESSERA_RETURN_IF_ERROR(option.set_string(value.text));
      break;
    case Kind::Bool:
      option.set_bool(value.b);
      break;
    case Kind::Int:
      option.set_int(value.i);
      break;
    case Kind::Double:
      option.set_double(value.d);
      break;
    case Kind::Other:
      *at_value = true;
      return Status::error(Error::OptionTypeMismatch,
                           "%.*s: option '%.*s' takes a bool, int, double or string, got %s",
                           static_cast<int>(backend.size()), backend.data(),
                           static_cast<int>(key.size()), key.data(), value.other);
  }
  Status s = validate_entry_option(backend, spec, option, scope);
  // Only the ';'/'=' check concerns the value; the scope and the name are the key's.
  *at_value = s.code() == Error::InvalidArgument && spec.allows(scope) &&
              option.type() == OptionType::String &&
              option.as_string().find_first_of(";=") != std::string_view::npos;
  TESSERA_RETURN_IF_ERROR(s);
  *out = option;
  return Status::ok();
}

// Converts a raw value to an option of `schema`'s key at `scope`. `*at_value` tells whether an
// error concerns the value (else the key).
Status convert(std::string_view backend, Span<const OptionSpec> schema, std::string_view key,
               const RawValue& value, OptionLevel scope, BackendOption* out, bool* at_value) {
  *at_value = false;
  int index = find_option_spec(schema, key);
  if (index < 0 && find_entry_spec(schema, key) >= 0) {
    return convert_entry(backend, schema[static_cast<size_t>(find_entry_spec(schema, key))], key,
                         value, scope, out, at_value);
  }
  if (index < 0) return unknown_option_status(backend, schema, key);
  const OptionSpec& spec = schema[static_cast<size_t>(index)];
  if (!spec.allows(scope)) {
    char allowed[96];
    return Status::error(
        Error::OptionWrongScope, "%.*s: option '%s' cannot be set at %s scope (allowed: %s)",
        static_cast<int>(backend.size()), backend.data(), spec.key, option_level_name(scope),
        format_scopes(spec.scopes, allowed, sizeof allowed));
  }
  *at_value = true;
  using Kind = RawValue::Kind;
  if (value.kind == Kind::Text || (value.kind == Kind::String && (spec.type == OptionType::String ||
                                                                  spec.type == OptionType::Enum))) {
    return parse_option_value(backend, spec, value.text, out);
  }
  BackendOption option;
  TESSERA_RETURN_IF_ERROR(option.set_key(spec.key_view()));
  switch (value.kind) {
    case Kind::Bool:
      option.set_bool(value.b);
      break;
    case Kind::Int:
      if (spec.type == OptionType::Double) {
        option.set_double(static_cast<double>(value.i));
      } else {
        option.set_int(value.i);
      }
      break;
    case Kind::Double:
      option.set_double(value.d);
      break;
    case Kind::String:
      (void)option.set_string(value.text.substr(0, std::min<size_t>(value.text.size(), 60)));
      break;
    case Kind::Other:
      return Status::error(Error::OptionTypeMismatch, "%.*s: option '%s' expects %s, got %s",
                           static_cast<int>(backend.size()), backend.data(), spec.key,
                           option_type_name(spec.type), value.other);
    case Kind::Text:
      break;
  }
  TESSERA_RETURN_IF_ERROR(validate_option_value(backend, spec, option));
  *out = option;
  return Status::ok();
}

std::vector<ParsedOptionList>* lists_of(ParsedOptions* p, OptionLevel scope) {
  switch (scope) {
    case OptionLevel::Global:
      return &p->global;
    case OptionLevel::Load:
      return &p->load;
    case OptionLevel::Delegate:
      return &p->delegate;
    case OptionLevel::Execute:
      return &p->execute;
    case OptionLevel::Default:
    case OptionLevel::Selection:
    case OptionLevel::CompileSpec:
      break;
  }
  return nullptr;
}

std::string_view trim(std::string_view s, size_t* column) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
    ++*column;
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Parses one "target.key=value" whose first character is at `pos`.
Status parse_entry(std::string_view text, Position pos, OptionLevel scope, std::string_view source,
                   ParsedOptions* out, Validation validation) {
  size_t column = pos.column;
  text = trim(text, &column);
  Position entry_pos{pos.line, column};
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return at(source, entry_pos,
              Status::error(Error::OptionParseError, "expected backend.key=value, got '%.*s'",
                            static_cast<int>(std::min<size_t>(text.size(), 80)), text.data()));
  }
  size_t lhs_column = column;
  std::string_view lhs = trim(text.substr(0, eq), &lhs_column);
  size_t value_column = column + eq + 1;
  std::string_view rhs = trim(text.substr(eq + 1), &value_column);
  if (rhs.size() >= 2 && rhs.front() == '"' && rhs.back() == '"') {
    rhs = rhs.substr(1, rhs.size() - 2);
    ++value_column;
  }
  size_t dot = lhs.rfind('.');
  {
    // "armnn.backend_option.GpuAcc.TuningLevel": the target ends at the first '.' when what
    // follows names an entry of one of its backend's with_entries() options.
    const size_t first = lhs.find('.');
    if (first != dot && first != std::string_view::npos && first > 0) {
      std::shared_ptr<detail::BackendEntry> e =
          detail::find_backend_entry(backend_of_delegate_id(lhs.substr(0, first)));
      if (e && find_entry_spec(e->schema, lhs.substr(first + 1)) >= 0) dot = first;
    }
  }
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == lhs.size()) {
    return at(source, Position{pos.line, lhs_column},
              Status::error(Error::OptionParseError, "expected backend.key before '=', got '%.*s'",
                            static_cast<int>(std::min<size_t>(lhs.size(), 80)), lhs.data()));
  }
  std::string_view target = lhs.substr(0, dot);
  std::string_view key = lhs.substr(dot + 1);
  Position target_pos{pos.line, lhs_column};
  Position key_pos{pos.line, lhs_column + dot + 1};
  Position value_pos{pos.line, value_column};

  OptionLevel effective = scope;
  if (target.find('#') != std::string_view::npos) {
    if (scope == OptionLevel::Load) {
      effective = OptionLevel::Delegate;
    } else if (scope != OptionLevel::Delegate) {
      return at(source, target_pos,
                Status::error(Error::OptionParseError,
                              "delegate id '%.*s' is only valid for load or delegate options",
                              static_cast<int>(target.size()), target.data()));
    }
  }
  std::string_view backend = backend_of_delegate_id(target);
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) {
    Status s = at(source, target_pos,
                  detail::unknown_backend_status(backend, Error::OptionUnknownBackend));
    return skip_in_lenient(s, validation) ? Status::ok() : s;
  }
  RawValue raw{RawValue::Kind::Text, rhs};
  BackendOption option;
  bool at_value = false;
  Status s = convert(backend, entry->schema, key, raw, effective, &option, &at_value);
  if (!s.is_ok()) {
    Status located = at(source, at_value ? value_pos : key_pos, s);
    return skip_in_lenient(located, validation) ? Status::ok() : located;
  }
  set_origin(source, 0, &option);
  out->add(effective, target, option);
  return Status::ok();
}

const char* toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    default:
      return "value";
  }
}

Position position_of(const toml::source_region& region) {
  return Position{static_cast<size_t>(region.begin.line), static_cast<size_t>(region.begin.column)};
}

Status parse_toml_table(const toml::table& root, std::string_view source, ParsedOptions* out,
                        Validation validation) {
  for (const auto& [section_key, section_node] : root) {
    Position section_pos = position_of(section_key.source());
    std::string_view section = section_key.str();
    OptionLevel scope;
    if (section == "global") {
      scope = OptionLevel::Global;
    } else if (section == "load") {
      scope = OptionLevel::Load;
    } else if (section == "delegate") {
      scope = OptionLevel::Delegate;
    } else if (section == "execute") {
      scope = OptionLevel::Execute;
    } else {
      return at(source, section_pos,
                Status::error(Error::OptionParseError,
                              "unknown section '%.*s' (expected global, load, delegate or "
                              "execute)",
                              static_cast<int>(section.size()), section.data()));
    }
    const toml::table* targets = section_node.as_table();
    if (targets == nullptr) {
      return at(source, section_pos,
                Status::error(Error::OptionParseError,
                              "'%.*s' must be a table of tables, e.g. [%.*s.xnnpack]",
                              static_cast<int>(section.size()), section.data(),
                              static_cast<int>(section.size()), section.data()));
    }
    for (const auto& [target_key, target_node] : *targets) {
      std::string_view target = target_key.str();
      Position target_pos = position_of(target_key.source());
      const toml::table* options = target_node.as_table();
      if (options == nullptr) {
        return at(source, target_pos,
                  Status::error(Error::OptionParseError, "'%.*s.%.*s' must be a table of options",
                                static_cast<int>(section.size()), section.data(),
                                static_cast<int>(target.size()), target.data()));
      }
      if (scope != OptionLevel::Delegate && target.find('#') != std::string_view::npos) {
        return at(source, target_pos,
                  Status::error(Error::OptionParseError,
                                "'%.*s' is a delegate id; put it under [delegate.\"%.*s\"]",
                                static_cast<int>(target.size()), target.data(),
                                static_cast<int>(target.size()), target.data()));
      }
      std::string_view backend = backend_of_delegate_id(target);
      std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
      if (!entry) {
        Status s = at(source, target_pos,
                      detail::unknown_backend_status(backend, Error::OptionUnknownBackend));
        if (skip_in_lenient(s, validation)) continue;
        return s;
      }
      // A sub-table under an option that takes entries (backend_option.GpuAcc.TuningLevel = 2
      // written as TOML dotted keys or [global.armnn.backend_option.GpuAcc]) is flattened to
      // its entry keys.
      std::vector<std::pair<std::string, const toml::node*>> flat;
      std::vector<const toml::key*> flat_keys;
      for (const auto& [key, value] : *options) {
        const toml::table* sub = value.as_table();
        const int spec = find_option_spec(entry->schema, key.str());
        if (sub == nullptr || spec < 0 || !entry->schema[static_cast<size_t>(spec)].has_entries) {
          flat.emplace_back(std::string(key.str()), &value);
          flat_keys.push_back(&key);
          continue;
        }
        std::vector<std::pair<std::string, const toml::table*>> pending{
            {std::string(key.str()), sub}};
        while (!pending.empty()) {
          auto [prefix, table] = pending.back();
          pending.pop_back();
          for (const auto& [k, v] : *table) {
            std::string name = prefix + "." + std::string(k.str());
            if (const toml::table* deeper = v.as_table()) {
              pending.emplace_back(std::move(name), deeper);
            } else {
              flat.emplace_back(std::move(name), &v);
              flat_keys.push_back(&k);
            }
          }
        }
      }
      for (size_t f = 0; f < flat.size(); ++f) {
        const std::string& key_text = flat[f].first;
        const toml::node& value = *flat[f].second;
        const toml::key& key = *flat_keys[f];
        RawValue raw{RawValue::Kind::Other, {}};
        std::string text;
        if (const auto* b = value.as_boolean()) {
          raw.kind = RawValue::Kind::Bool;
          raw.b = b->get();
        } else if (const auto* i = value.as_integer()) {
          raw.kind = RawValue::Kind::Int;
          raw.i = i->get();
        } else if (const auto* d = value.as_floating_point()) {
          raw.kind = RawValue::Kind::Double;
          raw.d = d->get();
        } else if (const auto* s = value.as_string()) {
          raw.kind = RawValue::Kind::String;
          text = s->get();
          raw.text = text;
        } else {
          raw.other = toml_type_name(value);
        }
        BackendOption option;
        bool at_value = false;
        Status s = convert(backend, entry->schema, key_text, raw, scope, &option, &at_value);
        if (!s.is_ok()) {
          Status located = at(source, position_of(at_value ? value.source() : key.source()), s);
          if (skip_in_lenient(located, validation)) continue;
          return located;
        }
        set_origin(source, position_of(key.source()).line, &option);
        out->add(scope, target, option);
      }
    }
  }
  return Status::ok();
}

}  // namespace

bool ParsedOptions::empty() const {
  return global.empty() && load.empty() && delegate.empty() && execute.empty();
}

void ParsedOptions::add(OptionLevel scope, std::string_view target, const BackendOption& option) {
  std::vector<ParsedOptionList>* lists = lists_of(this, scope);
  if (lists == nullptr) return;
  ParsedOptionList* list = nullptr;
  for (ParsedOptionList& l : *lists) {
    if (l.target == target) list = &l;
  }
  if (list == nullptr) {
    lists->push_back(ParsedOptionList{std::string(target), {}});
    list = &lists->back();
  }
  for (BackendOption& existing : list->options) {
    if (existing.key() == option.key()) {
      existing = option;
      return;
    }
  }
  list->options.push_back(option);
}

void ParsedOptions::merge(const ParsedOptions& later) {
  const std::pair<OptionLevel, const std::vector<ParsedOptionList>*> scopes[] = {
      {OptionLevel::Global, &later.global},
      {OptionLevel::Load, &later.load},
      {OptionLevel::Delegate, &later.delegate},
      {OptionLevel::Execute, &later.execute}};
  for (const auto& [scope, lists] : scopes) {
    for (const ParsedOptionList& l : *lists) {
      for (const BackendOption& o : l.options) add(scope, l.target, o);
    }
  }
}

Status ParsedOptions::apply_global(Validation validation) const {
  for (const ParsedOptionList& l : global) {
    std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(l.target);
    if (!entry) return detail::unknown_backend_status(l.target, Error::OptionUnknownBackend);
    for (const BackendOption& o : l.options) {
      Status s = validate_option(l.target, entry->schema, o, OptionLevel::Global);
      if (!s.is_ok() &&
          !(validation == Validation::Lenient && s.code() == Error::OptionUnknownKey)) {
        return s;
      }
    }
  }
  for (const ParsedOptionList& l : global) {
    TESSERA_RETURN_IF_ERROR(set_option(l.target, l.options, validation));
  }
  return Status::ok();
}

Status ParsedOptions::to_load_map(LoadBackendOptionsMap* out) const {
  for (const ParsedOptionList& l : load)
    TESSERA_RETURN_IF_ERROR(out->set_options(l.target, l.options));
  return Status::ok();
}

Status ParsedOptions::to_delegate_map(DelegateOptionsMap* out) const {
  for (const ParsedOptionList& l : delegate) {
    TESSERA_RETURN_IF_ERROR(out->set_options(l.target, l.options));
  }
  return Status::ok();
}

Status ParsedOptions::to_load_maps(LoadBackendOptionsMap* load,
                                   DelegateOptionsMap* delegates) const {
  TESSERA_RETURN_IF_ERROR(to_load_map(load));
  return to_delegate_map(delegates);
}

Status ParsedOptions::to_execute_options(ExecuteOptions* out) const {
  for (const ParsedOptionList& l : execute) {
    TESSERA_RETURN_IF_ERROR(out->set_options(l.target, l.options));
  }
  return Status::ok();
}

Status parse_option_assignment(std::string_view text, OptionLevel scope, Validation validation,
                               std::string_view source, ParsedOptions* out) {
  if (lists_of(out, scope) == nullptr) {
    return Status(Error::InvalidArgument,
                  "options can be parsed for global, load, delegate or "
                  "execute scope only");
  }
  return parse_entry(text, Position{1, 1}, scope, source, out, validation);
}

Status parse_option_list(std::string_view text, OptionLevel scope, Validation validation,
                         std::string_view source, ParsedOptions* out) {
  if (lists_of(out, scope) == nullptr) {
    return Status(Error::InvalidArgument,
                  "options can be parsed for global, load, delegate or "
                  "execute scope only");
  }
  // Validate into a scratch copy so a bad entry leaves `out` unchanged.
  ParsedOptions parsed;
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '"') quoted = !quoted;
    if (i < text.size() && (quoted || text[i] != ';')) continue;
    std::string_view entry = text.substr(start, i - start);
    size_t column = start + 1;
    if (trim(entry, &column).empty()) {
      start = i + 1;
      continue;
    }
    TESSERA_RETURN_IF_ERROR(
        parse_entry(entry, Position{1, start + 1}, scope, source, &parsed, validation));
    start = i + 1;
  }
  out->merge(parsed);
  return Status::ok();
}

Status parse_options_env(std::string_view value, Validation validation, ParsedOptions* out) {
  return parse_option_list(value, OptionLevel::Load, validation, "TESSERA_OPTIONS", out);
}

Status parse_options_from_environment(Validation validation, ParsedOptions* out,
                                      const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr || value[0] == '\0') return Status::ok();
  return parse_option_list(value, OptionLevel::Load, validation, variable, out);
}

Status parse_options_toml(std::string_view text, std::string_view source_name,
                          Validation validation, ParsedOptions* out) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    return at(source_name, position_of(e.source()),
              Status(Error::OptionParseError, e.description()));
  }
  ParsedOptions parsed;
  TESSERA_RETURN_IF_ERROR(parse_toml_table(root, source_name, &parsed, validation));
  out->merge(parsed);
  return Status::ok();
}

Status parse_options_file(const std::string& path, Validation validation, ParsedOptions* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    int err = errno;
    return Status::error(err == ENOENT ? Error::NotFound : Error::AccessFailed,
                         "cannot open options file '%s': %s", path.c_str(), std::strerror(err));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return parse_options_toml(text.str(), path, validation, out);
}

}  // namespace tessera
