// OptionSpec: how a backend declares one option (type, default, range or choices, scopes,
// init-only, doc). A backend's schema is a constexpr array of them, each built from the option's
// typed key (declared once, in the backend's options.h), so the key string is written once and
// the spec's type is the key's:
//
//   inline constexpr OptionKey<int64_t> kNumThreads{"num_threads"};         // options.h
//   inline constexpr OptionKey<EnumValue> kDeviceType{"device_type"};
//
//   static constexpr const char* kDeviceChoices[] = {"cpu", "gpu"};         // <name>_backend.cpp
//   static constexpr OptionSpec kSchema[] = {
//       OptionSpec::integer(kNumThreads, 0, 0, 256, kRuntimeScopes | OptionLevel::Execute,
//                           "Worker threads; 0 = auto (performance cores)"),
//       OptionSpec::enumeration(kDeviceType, "gpu", kDeviceChoices, kInitScopes,
//                               "Device kind to run on").init_only(),
//   };
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_level.h"
#include "tessera/backend/option_type.h"
#include "tessera/backend/option_value.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Largest schema a backend may declare (ResolvedOptions holds one entry per schema option).
inline constexpr size_t kMaxSchemaOptions = 48;

/// One option of a backend's schema. Build it with the constexpr factories below, each taking the
/// typed key of its own type (a key of another type does not compile); the key's name, the
/// strings and the choices it points to must have static storage duration.
class OptionSpec {
 private:
  // Not a template: clang 14 cannot use a constructor template of this class in the constant
  // expressions that build a static schema ("undefined constructor"), g++ can.
  constexpr OptionSpec(const char* key_name, size_t length, uint32_t hash, OptionType t, Scopes s,
                       const char* d)
      : key(key_name), key_length(length), key_hash(hash), type(t), scopes(s), doc(d) {}

 public:
  static constexpr OptionSpec boolean(const OptionKey<bool>& key, bool default_value, Scopes scopes,
                                      const char* doc) {
    OptionSpec s(key.name, key.length, key.hash, OptionType::Bool, scopes, doc);
    s.default_bool = default_value;
    return s;
  }
  /// An int option accepting [min_value, max_value] (inclusive).
  static constexpr OptionSpec integer(const OptionKey<int64_t>& key, int64_t default_value,
                                      int64_t min_value, int64_t max_value, Scopes scopes,
                                      const char* doc) {
    OptionSpec s(key.name, key.length, key.hash, OptionType::Int, scopes, doc);
    s.default_int = default_value;
    s.min_int = min_value;
    s.max_int = max_value;
    return s;
  }
  /// A double option accepting finite values in [min_value, max_value].
  static constexpr OptionSpec floating(const OptionKey<double>& key, double default_value,
                                       double min_value, double max_value, Scopes scopes,
                                       const char* doc) {
    OptionSpec s(key.name, key.length, key.hash, OptionType::Double, scopes, doc);
    s.default_double = default_value;
    s.min_double = min_value;
    s.max_double = max_value;
    return s;
  }
  /// A string option of at most `max_length` (<= 255) characters.
  static constexpr OptionSpec string(const OptionKey<std::string_view>& key,
                                     const char* default_value, Scopes scopes, const char* doc,
                                     size_t max_length = kMaxOptionStringLength) {
    OptionSpec s(key.name, key.length, key.hash, OptionType::String, scopes, doc);
    s.default_string = default_value;
    s.max_length = max_length;
    return s;
  }
  /// An enum option: the value is one of `choices`, by name.
  static constexpr OptionSpec enumeration(const OptionKey<EnumValue>& key,
                                          const char* default_choice,
                                          Span<const char* const> choices, Scopes scopes,
                                          const char* doc) {
    OptionSpec s(key.name, key.length, key.hash, OptionType::Enum, scopes, doc);
    s.default_string = default_choice;
    s.choices = choices;
    return s;
  }
  /// A copy marked init-only: fixed once the backend has initialised its shared state.
  constexpr OptionSpec init_only() const {
    OptionSpec s = *this;
    s.is_init_only = true;
    return s;
  }
  /// A copy whose value, a list of NAME=VALUE entries separated by ';', may also be set one
  /// entry at a time with the key "<key>.<NAME>" (ArmNN's backend_option.GpuAcc.TuningLevel):
  /// the entry replaces the one of the same NAME in the value the option has, or is appended.
  /// Only for global-only String options (check_schema); see find_entry_spec.
  constexpr OptionSpec with_entries() const {
    OptionSpec s = *this;
    s.has_entries = true;
    return s;
  }

  std::string_view key_view() const { return {key, key_length}; }
  bool allows(OptionLevel scope) const { return scopes.has(scope); }
  /// Index of `choice` in choices, or -1.
  int choice_index(std::string_view choice) const;
  /// The schema default as a BackendOption keyed by this spec.
  BackendOption default_option() const;

  const char* key;
  size_t key_length;
  uint32_t key_hash;
  OptionType type;
  Scopes scopes;
  bool is_init_only = false;
  bool has_entries = false;  // see with_entries()
  bool default_bool = false;
  int64_t default_int = 0;
  int64_t min_int = std::numeric_limits<int64_t>::min();
  int64_t max_int = std::numeric_limits<int64_t>::max();
  double default_double = 0.0;
  double min_double = -std::numeric_limits<double>::max();
  double max_double = std::numeric_limits<double>::max();
  const char* default_string = "";  // String default or Enum default choice
  size_t max_length = kMaxOptionStringLength;
  Span<const char* const> choices;
  const char* doc;
};

/// Strict: an unknown key is an error. Lenient: an unknown key (or unknown backend) is logged
/// with TESSERA_LOG_WARNING and skipped; every other error stays an error.
enum class Validation : uint8_t { Strict, Lenient };

/// Index of the spec with `key` in `schema`, or -1. `hash` is hash_option_key(key), e.g. a
/// BackendOption's key_hash().
int find_option_spec(Span<const OptionSpec> schema, std::string_view key, uint32_t hash);
inline int find_option_spec(Span<const OptionSpec> schema, std::string_view key) {
  return find_option_spec(schema, key, hash_option_key(key));
}

/// For a key "<key>.<NAME>" that names one entry of a with_entries() spec: that spec's index,
/// with NAME in `*name` (if not null); else -1.
int find_entry_spec(Span<const OptionSpec> schema, std::string_view key,
                    std::string_view* name = nullptr);

/// Checks an entry option (key "<spec key>.<NAME>") against its with_entries() `spec` at `scope`:
/// OptionWrongScope; InvalidArgument for an empty NAME or one with other characters than
/// letters, digits, '_' and '.'; OptionTypeMismatch for an enum value; InvalidArgument for a
/// string value with ';' or '='.
Status validate_entry_option(std::string_view backend, const OptionSpec& spec,
                             const BackendOption& entry, OptionLevel scope);

/// `base` (the value the with_entries() `spec` has now) with `entry` (a valid entry option) put
/// in: NAME=VALUE replaces the entry of the same NAME or is appended. Values are written as
/// text (true/false, decimal, %.17g, the string). Into `*out`, keyed by the spec; OptionTooLong
/// if the whole value would exceed the spec's max_length (nothing written then).
Status merge_option_entry(std::string_view backend, const OptionSpec& spec,
                          const BackendOption& base, const BackendOption& entry,
                          BackendOption* out);

/// Checks one option against a backend's schema at `scope`. On success `*spec_index` (if not
/// null) is the matching spec's index. An entry key of a with_entries() spec is checked with
/// validate_entry_option and gives that spec's index. Errors, each naming the backend and key:
/// OptionUnknownKey (with a did-you-mean suggestion), OptionWrongScope (lists allowed scopes),
/// OptionTypeMismatch, OptionOutOfRange (gives the range), OptionInvalidChoice (lists choices),
/// OptionTooLong.
Status validate_option(std::string_view backend, Span<const OptionSpec> schema,
                       const BackendOption& option, OptionLevel scope,
                       size_t* spec_index = nullptr);

/// Checks `option` against the spec its key names: scope, then value. For callers that already
/// looked the spec up.
Status validate_option_for(std::string_view backend, const OptionSpec& spec,
                           const BackendOption& option, OptionLevel scope);

/// The check of validate_option_value without building an error: true if `option` has the
/// spec's type and an accepted value. For hot paths; call validate_option_value for the message.
bool option_value_is_valid(const OptionSpec& spec, const BackendOption& option);

/// Checks the value of `option` against `spec` only (type, range, choices, length); the key is
/// assumed to match.
Status validate_option_value(std::string_view backend, const OptionSpec& spec,
                             const BackendOption& option);

/// The OptionUnknownKey error for `key`: suggests the closest schema key, or lists them.
Status unknown_option_status(std::string_view backend, Span<const OptionSpec> schema,
                             std::string_view key);

/// Parses `text` as the value of `spec` (used for compile specs and command-line values) into
/// `*out`, keyed by spec.key. Bools: true/false/1/0 (any case); ints: decimal; doubles: decimal or
/// exponent notation; enums: one of the choices. The value is also range/choice checked, with the
/// same errors as validate_option; OptionTypeMismatch when the text is not of the spec's type.
Status parse_option_value(std::string_view backend, const OptionSpec& spec, std::string_view text,
                          BackendOption* out);

/// Checks that a schema is well formed (run at registration): at most kMaxSchemaOptions
/// entries, unique keys of [a-z0-9_] at most 63 long, non-empty scopes, defaults within their
/// range or choices, no init-only option with execute scope. InvalidArgument naming the problem.
Status check_schema(std::string_view backend, Span<const OptionSpec> schema);

/// Writes "global, load, delegate" for a scope mask into `buf`. Returns `buf`.
const char* format_scopes(Scopes scopes, char* buf, size_t size);

}  // namespace tessera
