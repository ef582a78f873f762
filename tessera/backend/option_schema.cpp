#include "tessera/backend/option_schema.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tessera/backend/suggest.h"

namespace tessera {
namespace {

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// "cpu, gpu, accelerator" into buf.
const char* format_choices(const OptionSpec& spec, char* buf, size_t size) {
  buf[0] = '\0';
  for (size_t i = 0; i < spec.choices.size(); ++i) {
    if (i > 0 && !append_text(buf, size, ", ")) break;
    if (!append_text(buf, size, spec.choices[i])) break;
  }
  return buf;
}

// A value as text for an error message, with its type: "string \"four\"", "int 4".
const char* describe_value(const BackendOption& option, char* buf, size_t size) {
  char value[80];
  option.format_value(value, sizeof value);
  if (option.type() == OptionType::Enum) {
    std::snprintf(buf, size, "enum '%s'", value);
  } else {
    std::snprintf(buf, size, "%s %s", option_type_name(option.type()), value);
  }
  return buf;
}

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

const char* format_scopes(Scopes scopes, char* buf, size_t size) {
  if (size == 0) return buf;
  buf[0] = '\0';
  bool first = true;
  for (OptionLevel s : kScopeLevels) {
    if (!scopes.has(s)) continue;
    if (!first) append_text(buf, size, ", ");
    append_text(buf, size, option_level_name(s));
    first = false;
  }
  if (first) append_text(buf, size, "none");
  return buf;
}

int OptionSpec::choice_index(std::string_view choice) const {
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choice == choices[i]) return static_cast<int>(i);
  }
  return -1;
}

BackendOption OptionSpec::default_option() const {
  BackendOption option;
  // A schema passed check_schema, so the key and default fit; statuses cannot fail here.
  (void)option.set_key(key_view());
  switch (type) {
    case OptionType::Bool:
      option.set_bool(default_bool);
      break;
    case OptionType::Int:
      option.set_int(default_int);
      break;
    case OptionType::Double:
      option.set_double(default_double);
      break;
    case OptionType::String:
      (void)option.set_string(default_string);
      break;
    case OptionType::Enum:
      (void)option.set_enum(default_string, choice_index(default_string));
      break;
  }
  return option;
}

int find_option_spec(Span<const OptionSpec> schema, std::string_view key, uint32_t hash) {
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].key_hash == hash && schema[i].key_view() == key) return static_cast<int>(i);
  }
  return -1;
}

Status unknown_option_status(std::string_view backend, Span<const OptionSpec> schema,
                             std::string_view key) {
  const int b = static_cast<int>(backend.size());
  const int k = static_cast<int>(key.size());
  if (schema.empty()) {
    return Status::error(Error::OptionUnknownKey,
                         "%.*s: unknown option '%.*s' (this backend declares no options)", b,
                         backend.data(), k, key.data());
  }
  Suggester suggester(key);
  for (const OptionSpec& spec : schema) suggester.consider(spec.key_view());
  if (!suggester.best().empty()) {
    return Status::error(Error::OptionUnknownKey,
                         "%.*s: unknown option '%.*s' (did you mean '%.*s'?)", b, backend.data(), k,
                         key.data(), static_cast<int>(suggester.best().size()),
                         suggester.best().data());
  }
  char known[160] = {};
  for (size_t i = 0; i < schema.size(); ++i) {
    if (i > 0 && !append_text(known, sizeof known, ", ")) break;
    if (!append_text(known, sizeof known, schema[i].key)) break;
  }
  return Status::error(Error::OptionUnknownKey, "%.*s: unknown option '%.*s' (known options: %s)",
                       b, backend.data(), k, key.data(), known);
}

Status validate_option_value(std::string_view backend, const OptionSpec& spec,
                             const BackendOption& option) {
  const int b = static_cast<int>(backend.size());
  if (option.type() != spec.type) {
    char got[128];
    describe_value(option, got, sizeof got);
    if (spec.type == OptionType::Enum) {
      char choices[128];
      return Status::error(Error::OptionTypeMismatch,
                           "%.*s: option '%s' expects enum (one of: %s), got %s", b, backend.data(),
                           spec.key, format_choices(spec, choices, sizeof choices), got);
    }
    return Status::error(Error::OptionTypeMismatch, "%.*s: option '%s' expects %s, got %s", b,
                         backend.data(), spec.key, option_type_name(spec.type), got);
  }
  switch (spec.type) {
    case OptionType::Bool:
      return Status::ok();
    case OptionType::Int: {
      int64_t v = option.as_int();
      if (v < spec.min_int || v > spec.max_int) {
        return Status::error(Error::OptionOutOfRange,
                             "%.*s: option '%s' = %" PRId64 " is out of range [%" PRId64
                             ", %" PRId64 "]",
                             b, backend.data(), spec.key, v, spec.min_int, spec.max_int);
      }
      return Status::ok();
    }
    case OptionType::Double: {
      double v = option.as_double();
      if (!std::isfinite(v) || v < spec.min_double || v > spec.max_double) {
        return Status::error(Error::OptionOutOfRange,
                             "%.*s: option '%s' = %g is out of range [%g, %g]", b, backend.data(),
                             spec.key, v, spec.min_double, spec.max_double);
      }
      return Status::ok();
    }
    case OptionType::String: {
      size_t n = option.as_string().size();
      if (n > spec.max_length) {
        return Status::error(Error::OptionTooLong,
                             "%.*s: option '%s' value has %zu characters; at most %zu allowed", b,
                             backend.data(), spec.key, n, spec.max_length);
      }
      return Status::ok();
    }
    case OptionType::Enum: {
      if (spec.choice_index(option.as_string()) < 0) {
        char choices[128];
        Suggester suggester(option.as_string());
        for (const char* c : spec.choices) suggester.consider(c);
        char hint[80] = {};
        if (!suggester.best().empty()) {
          std::snprintf(hint, sizeof hint, " (did you mean '%.*s'?)",
                        static_cast<int>(suggester.best().size()), suggester.best().data());
        }
        return Status::error(Error::OptionInvalidChoice,
                             "%.*s: option '%s' = '%.60s' is not one of: %s%s", b, backend.data(),
                             spec.key, option.string_c_str(),
                             format_choices(spec, choices, sizeof choices), hint);
      }
      return Status::ok();
    }
  }
  return Status::ok();
}

bool option_value_is_valid(const OptionSpec& spec, const BackendOption& option) {
  if (option.type() != spec.type) return false;
  switch (spec.type) {
    case OptionType::Bool:
      return true;
    case OptionType::Int:
      return option.as_int() >= spec.min_int && option.as_int() <= spec.max_int;
    case OptionType::Double: {
      double v = option.as_double();
      return std::isfinite(v) && v >= spec.min_double && v <= spec.max_double;
    }
    case OptionType::String:
      return option.as_string().size() <= spec.max_length;
    case OptionType::Enum:
      return spec.choice_index(option.as_string()) >= 0;
  }
  return false;
}

Status validate_option_for(std::string_view backend, const OptionSpec& spec,
                           const BackendOption& option, OptionLevel scope) {
  if (!spec.allows(scope)) {
    char allowed[96];
    return Status::error(
        Error::OptionWrongScope, "%.*s: option '%s' cannot be set at %s scope (allowed: %s)",
        static_cast<int>(backend.size()), backend.data(), spec.key, option_level_name(scope),
        format_scopes(spec.scopes, allowed, sizeof allowed));
  }
  return validate_option_value(backend, spec, option);
}

int find_entry_spec(Span<const OptionSpec> schema, std::string_view key, std::string_view* name) {
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos) return -1;
  const std::string_view prefix = key.substr(0, dot);
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].has_entries && schema[i].key_view() == prefix) {
      if (name != nullptr) *name = key.substr(dot + 1);
      return static_cast<int>(i);
    }
  }
  return -1;
}

Status validate_entry_option(std::string_view backend, const OptionSpec& spec,
                             const BackendOption& entry, OptionLevel scope) {
  const int b = static_cast<int>(backend.size());
  const std::string_view key = entry.key();
  if (!spec.allows(scope)) {
    char allowed[96];
    return Status::error(Error::OptionWrongScope,
                         "%.*s: option '%.*s' (an entry of '%s') cannot be set at %s scope "
                         "(allowed: %s)",
                         b, backend.data(), static_cast<int>(key.size()), key.data(), spec.key,
                         option_level_name(scope),
                         format_scopes(spec.scopes, allowed, sizeof allowed));
  }
  const std::string_view name =
      key.size() > spec.key_length ? key.substr(spec.key_length + 1) : std::string_view();
  bool name_ok = !name.empty() && name.front() != '.' && name.back() != '.';
  for (char c : name) {
    name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
  }
  if (!name_ok) {
    return Status::error(Error::InvalidArgument,
                         "%.*s: option '%.*s': '%s.' must be followed by a name of letters, "
                         "digits, '_' and '.' (e.g. %s.GpuAcc.TuningLevel)",
                         b, backend.data(), static_cast<int>(key.size()), key.data(), spec.key,
                         spec.key);
  }
  if (entry.type() == OptionType::Enum) {
    return Status::error(Error::OptionTypeMismatch,
                         "%.*s: option '%.*s' takes a bool, int, double or string, got an enum", b,
                         backend.data(), static_cast<int>(key.size()), key.data());
  }
  if (entry.type() == OptionType::String &&
      entry.as_string().find_first_of(";=") != std::string_view::npos) {
    return Status::error(Error::InvalidArgument,
                         "%.*s: option '%.*s' = '%.60s': an entry's value cannot hold ';' or '='",
                         b, backend.data(), static_cast<int>(key.size()), key.data(),
                         entry.string_c_str());
  }
  return Status::ok();
}

Status merge_option_entry(std::string_view backend, const OptionSpec& spec,
                          const BackendOption& base, const BackendOption& entry,
                          BackendOption* out) {
  const std::string_view name = entry.key().substr(spec.key_length + 1);
  char value[kMaxOptionStringLength + 1];
  switch (entry.type()) {
    case OptionType::Bool:
      std::snprintf(value, sizeof value, "%s", entry.as_bool() ? "true" : "false");
      break;
    case OptionType::Int:
      std::snprintf(value, sizeof value, "%" PRId64, entry.as_int());
      break;
    case OptionType::Double:
      std::snprintf(value, sizeof value, "%.17g", entry.as_double());
      break;
    case OptionType::String:
    case OptionType::Enum:
      std::snprintf(value, sizeof value, "%s", entry.string_c_str());
      break;
  }
  // The entries of `base` other than NAME, in order, then NAME=value.
  char merged[2 * kMaxOptionStringLength + 2] = {};
  size_t used = 0;
  auto append = [&](std::string_view text) {
    const size_t n = std::min(text.size(), sizeof merged - 1 - used);
    std::memcpy(merged + used, text.data(), n);
    used += n;
  };
  std::string_view rest = base.type() == OptionType::String ? base.as_string() : "";
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.empty()) continue;
    std::string_view item_name = item.substr(0, item.find('='));
    while (!item_name.empty() && (item_name.back() == ' ' || item_name.back() == '\t')) {
      item_name.remove_suffix(1);
    }
    if (item_name == name) continue;
    if (used > 0) append(";");
    append(item);
  }
  if (used > 0) append(";");
  append(name);
  append("=");
  append(value);
  if (used > spec.max_length) {
    return Status::error(Error::OptionTooLong,
                         "%.*s: option '%s' with the entry %.*s=%s would have %zu characters; at "
                         "most %zu allowed",
                         static_cast<int>(backend.size()), backend.data(), spec.key,
                         static_cast<int>(name.size()), name.data(), value, used, spec.max_length);
  }
  BackendOption result;
  TESSERA_RETURN_IF_ERROR(result.set_key(spec.key_view()));
  TESSERA_RETURN_IF_ERROR(result.set_string(std::string_view(merged, used)));
  *out = result;
  return Status::ok();
}

Status validate_option(std::string_view backend, Span<const OptionSpec> schema,
                       const BackendOption& option, OptionLevel scope, size_t* spec_index) {
  int index = find_option_spec(schema, option.key(), option.key_hash());
  if (index < 0) {
    index = find_entry_spec(schema, option.key());
    if (index < 0) return unknown_option_status(backend, schema, option.key());
    TESSERA_RETURN_IF_ERROR(
        validate_entry_option(backend, schema[static_cast<size_t>(index)], option, scope));
    if (spec_index != nullptr) *spec_index = static_cast<size_t>(index);
    return Status::ok();
  }
  TESSERA_RETURN_IF_ERROR(
      validate_option_for(backend, schema[static_cast<size_t>(index)], option, scope));
  if (spec_index != nullptr) *spec_index = static_cast<size_t>(index);
  return Status::ok();
}

Status parse_option_value(std::string_view backend, const OptionSpec& spec, std::string_view text,
                          BackendOption* out) {
  const int b = static_cast<int>(backend.size());
  const int t = static_cast<int>(std::min<size_t>(text.size(), 60));
  BackendOption option;
  TESSERA_RETURN_IF_ERROR(option.set_key(spec.key_view()));
  switch (spec.type) {
    case OptionType::Bool: {
      if (equals_ignore_case(text, "true") || text == "1") {
        option.set_bool(true);
      } else if (equals_ignore_case(text, "false") || text == "0") {
        option.set_bool(false);
      } else {
        return Status::error(Error::OptionTypeMismatch,
                             "%.*s: option '%s' expects bool (true, false, 1 or 0), got '%.*s'", b,
                             backend.data(), spec.key, t, text.data());
      }
      break;
    }
    case OptionType::Int: {
      std::string_view digits = text;
      if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
      int64_t v = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (ec == std::errc::result_out_of_range) {
        return Status::error(Error::OptionOutOfRange,
                             "%.*s: option '%s' = %.*s is out of range [%" PRId64 ", %" PRId64 "]",
                             b, backend.data(), spec.key, t, text.data(), spec.min_int,
                             spec.max_int);
      }
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
        return Status::error(Error::OptionTypeMismatch, "%.*s: option '%s' expects int, got '%.*s'",
                             b, backend.data(), spec.key, t, text.data());
      }
      option.set_int(v);
      break;
    }
    case OptionType::Double: {
      std::string_view digits = text;
      if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
      double v = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (digits.empty() || ec == std::errc::invalid_argument ||
          end != digits.data() + digits.size()) {
        return Status::error(Error::OptionTypeMismatch,
                             "%.*s: option '%s' expects double, got '%.*s'", b, backend.data(),
                             spec.key, t, text.data());
      }
      if (ec == std::errc::result_out_of_range || !std::isfinite(v)) {
        return Status::error(Error::OptionOutOfRange,
                             "%.*s: option '%s' = %.*s is out of range [%g, %g]", b, backend.data(),
                             spec.key, t, text.data(), spec.min_double, spec.max_double);
      }
      option.set_double(v);
      break;
    }
    case OptionType::String: {
      if (text.size() > spec.max_length) {
        return Status::error(Error::OptionTooLong,
                             "%.*s: option '%s' value has %zu characters; at most %zu allowed", b,
                             backend.data(), spec.key, text.size(), spec.max_length);
      }
      TESSERA_RETURN_IF_ERROR(option.set_string(text));
      break;
    }
    case OptionType::Enum: {
      if (text.size() > kMaxOptionStringLength) {
        return Status::error(Error::OptionTooLong,
                             "%.*s: option '%s' value has %zu characters; at most %zu allowed", b,
                             backend.data(), spec.key, text.size(), kMaxOptionStringLength);
      }
      TESSERA_RETURN_IF_ERROR(option.set_enum(text, spec.choice_index(text)));
      break;
    }
  }
  TESSERA_RETURN_IF_ERROR(validate_option_value(backend, spec, option));
  *out = option;
  return Status::ok();
}

Status check_schema(std::string_view backend, Span<const OptionSpec> schema) {
  const int b = static_cast<int>(backend.size());
  if (schema.size() > kMaxSchemaOptions) {
    return Status::error(Error::InvalidArgument,
                         "%.*s: schema declares %zu options; at most %zu are supported", b,
                         backend.data(), schema.size(), kMaxSchemaOptions);
  }
  for (size_t i = 0; i < schema.size(); ++i) {
    const OptionSpec& spec = schema[i];
    if (spec.key == nullptr || spec.key_length == 0) {
      return Status::error(Error::InvalidArgument, "%.*s: schema entry %zu has an empty key", b,
                           backend.data(), i);
    }
    if (spec.key_length > kMaxNameLength) {
      return Status::error(Error::InvalidArgument,
                           "%.*s: schema key '%.40s...' is longer than %zu characters", b,
                           backend.data(), spec.key, kMaxNameLength);
    }
    for (size_t c = 0; c < spec.key_length; ++c) {
      if (!is_key_char(spec.key[c])) {
        return Status::error(Error::InvalidArgument,
                             "%.*s: schema key '%s' has character '%c'; keys use a-z, 0-9 and _", b,
                             backend.data(), spec.key, spec.key[c]);
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (schema[j].key_view() == spec.key_view()) {
        return Status::error(Error::InvalidArgument, "%.*s: schema declares '%s' twice", b,
                             backend.data(), spec.key);
      }
    }
    if (spec.scopes.empty()) {
      return Status::error(Error::InvalidArgument, "%.*s: option '%s' allows no scope", b,
                           backend.data(), spec.key);
    }
    if (spec.has_entries &&
        (spec.type != OptionType::String || spec.scopes.bits != Scopes(OptionLevel::Global).bits)) {
      return Status::error(Error::InvalidArgument,
                           "%.*s: option '%s' takes entries, so it must be a string of global "
                           "scope only",
                           b, backend.data(), spec.key);
    }
    if (spec.is_init_only && spec.allows(OptionLevel::Execute)) {
      return Status::error(Error::InvalidArgument,
                           "%.*s: option '%s' is init-only, so it cannot allow execute scope", b,
                           backend.data(), spec.key);
    }
    if (spec.doc == nullptr) {
      return Status::error(Error::InvalidArgument, "%.*s: option '%s' has no doc", b,
                           backend.data(), spec.key);
    }
    switch (spec.type) {
      case OptionType::Int:
        if (spec.min_int > spec.max_int) {
          return Status::error(Error::InvalidArgument, "%.*s: option '%s' has min > max", b,
                               backend.data(), spec.key);
        }
        break;
      case OptionType::Double:
        if (!(spec.min_double <= spec.max_double)) {
          return Status::error(Error::InvalidArgument, "%.*s: option '%s' has min > max", b,
                               backend.data(), spec.key);
        }
        break;
      case OptionType::String:
        if (spec.max_length > kMaxOptionStringLength || spec.default_string == nullptr) {
          return Status::error(Error::InvalidArgument,
                               "%.*s: option '%s' needs a default and max_length <= %zu", b,
                               backend.data(), spec.key, kMaxOptionStringLength);
        }
        break;
      case OptionType::Enum:
        if (spec.choices.empty() || spec.default_string == nullptr) {
          return Status::error(Error::InvalidArgument,
                               "%.*s: enum option '%s' needs choices and a default", b,
                               backend.data(), spec.key);
        }
        for (const char* choice : spec.choices) {
          if (choice == nullptr || choice[0] == '\0' ||
              std::strlen(choice) > kMaxOptionStringLength) {
            return Status::error(Error::InvalidArgument,
                                 "%.*s: enum option '%s' has an empty or over-long choice", b,
                                 backend.data(), spec.key);
          }
        }
        break;
      case OptionType::Bool:
        break;
    }
    Status default_ok = validate_option_value(backend, spec, spec.default_option());
    if (!default_ok.is_ok()) {
      return Status(Error::InvalidArgument, default_ok.message()).with_prefix("invalid default");
    }
  }
  return Status::ok();
}

}  // namespace tessera
