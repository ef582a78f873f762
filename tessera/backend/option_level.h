// OptionLevel: the level an option value is set at, in precedence order, and Scopes, the set of
// levels a schema lets an option be set at. One enum names both where a value may be set (a
// spec's scopes, validate_option's scope) and where an effective value came from
// (ResolvedOptions::source).
#pragma once

#include <cstdint>

namespace tessera {

/// Levels from lowest to highest precedence: a value set at a later level replaces one from an
/// earlier level. Default and Selection are not set by anyone, so they are never in a Scopes.
enum class OptionLevel : uint8_t {
  Default,      // the schema default
  Selection,    // measured selection chose the value of an option no other level set
  CompileSpec,  // baked into the program AOT
  Global,       // set_option(backend, ...)
  Load,         // LoadBackendOptionsMap, per backend
  Delegate,     // DelegateOptionsMap, per delegate instance
  Execute,      // ExecuteOptions, per Method::execute call
};

/// Lower-case name, as reports, JSON and docs show it: "default", "selection", "compile_spec",
/// "global", "load", "delegate", "execute".
constexpr const char* option_level_name(OptionLevel level) {
  switch (level) {
    case OptionLevel::Default:
      return "default";
    case OptionLevel::Selection:
      return "selection";
    case OptionLevel::CompileSpec:
      return "compile_spec";
    case OptionLevel::Global:
      return "global";
    case OptionLevel::Load:
      return "load";
    case OptionLevel::Delegate:
      return "delegate";
    case OptionLevel::Execute:
      return "execute";
  }
  return "?";
}

/// The levels an option can be set at (a schema's scopes), in precedence order.
inline constexpr OptionLevel kScopeLevels[] = {OptionLevel::CompileSpec, OptionLevel::Global,
                                               OptionLevel::Load, OptionLevel::Delegate,
                                               OptionLevel::Execute};

/// A set of the levels of kScopeLevels: bit i is kScopeLevels[i] (CompileSpec 0x01 ... Execute
/// 0x10, the TESSERA_SCOPE_* bits of the C API). Default and Selection have no bit.
struct Scopes {
  /// The bit of `level`; 0 for Default and Selection.
  static constexpr uint8_t bit(OptionLevel level) {
    const unsigned l = static_cast<unsigned>(level);
    const unsigned first = static_cast<unsigned>(OptionLevel::CompileSpec);
    return l < first ? uint8_t{0} : static_cast<uint8_t>(1u << (l - first));
  }

  constexpr Scopes() = default;
  constexpr Scopes(OptionLevel level) : bits(bit(level)) {}  // NOLINT implicit
  constexpr bool has(OptionLevel level) const { return (bits & bit(level)) != 0; }
  constexpr bool empty() const { return bits == 0; }
  uint8_t bits = 0;
};
constexpr Scopes operator|(Scopes a, Scopes b) {
  Scopes s;
  s.bits = static_cast<uint8_t>(a.bits | b.bits);
  return s;
}
constexpr Scopes operator|(OptionLevel a, OptionLevel b) {
  return Scopes(a) | Scopes(b);
}

/// Every scope that takes effect when a delegate is initialised.
inline constexpr Scopes kInitScopes =
    OptionLevel::CompileSpec | OptionLevel::Global | OptionLevel::Load | OptionLevel::Delegate;
/// The init scopes a running application may set (everything but compile specs).
inline constexpr Scopes kRuntimeScopes =
    OptionLevel::Global | OptionLevel::Load | OptionLevel::Delegate;
inline constexpr Scopes kAllScopes = kInitScopes | OptionLevel::Execute;

}  // namespace tessera
