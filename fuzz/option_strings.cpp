// Fuzz target: the option front ends (backend.key=value assignments, ';'-separated lists, the
// TESSERA_OPTIONS syntax, TOML files) with strict and lenient validation, against the schemas of
// every backend built into the library; then what parsed is converted to load, delegate and
// execute maps, and the value text is parsed as every declared option's type.
//
// The first input byte picks the front end, scope and validation; the rest is the text. Global
// options are validated but never applied, so one input cannot change what the next one sees.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/option_parser.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/registry.h"
#include "tessera/core/log.h"
#include "tessera/runtime/load_options.h"

namespace {

using tessera::OptionLevel;

struct Schema {
  std::string backend;
  tessera::Span<const tessera::OptionSpec> specs;
};

const std::vector<Schema>& schemas() {
  static const std::vector<Schema> all = [] {
    std::vector<Schema> out;
    for (const std::string& name : tessera::registered_backends()) {
      tessera::Result<tessera::BackendInterface*> backend = tessera::get_backend(name);
      if (backend.ok()) out.push_back({name, (*backend)->option_schema()});
    }
    return out;
  }();
  return all;
}

constexpr OptionLevel kScopes[] = {OptionLevel::Global, OptionLevel::Load, OptionLevel::Delegate,
                                   OptionLevel::Execute};

// Validates every parsed option against every backend's schema at every scope (the target's
// own schema included), as apply_global, load and execute would.
void validate_everywhere(const std::vector<tessera::ParsedOptionList>& lists) {
  for (const tessera::ParsedOptionList& list : lists) {
    for (const tessera::BackendOption& option : list.options) {
      for (const Schema& schema : schemas()) {
        for (OptionLevel scope : kScopes) {
          (void)tessera::validate_option(schema.backend, schema.specs, option, scope);
        }
      }
    }
  }
}

void exercise(const tessera::ParsedOptions& parsed) {
  validate_everywhere(parsed.global);
  validate_everywhere(parsed.load);
  validate_everywhere(parsed.delegate);
  validate_everywhere(parsed.execute);
  tessera::LoadBackendOptionsMap load;
  tessera::DelegateOptionsMap delegates;
  (void)parsed.to_load_maps(&load, &delegates);
  tessera::ExecuteOptions execute;
  (void)parsed.to_execute_options(&execute);
  tessera::ParsedOptions merged;
  merged.merge(parsed);
  merged.merge(parsed);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Lenient mode warns about what it skips: formatted (from the input), then dropped.
  tessera::set_log_sink([](tessera::LogLevel, const char*, void*) {});
  (void)schemas();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const tessera::Validation validation =
      (mode & 0x80) != 0 ? tessera::Validation::Lenient : tessera::Validation::Strict;
  const OptionLevel scope = kScopes[(mode >> 3) & 3];

  tessera::ParsedOptions parsed;
  tessera::Status status;
  switch (mode & 7) {
    case 0:
      status = tessera::parse_option_assignment(text, scope, validation, "--option", &parsed);
      break;
    case 1:
      status = tessera::parse_option_list(text, scope, validation, "--options", &parsed);
      break;
    case 2:
      status = tessera::parse_options_env(text, validation, &parsed);
      break;
    case 3:
    case 4:
      status = tessera::parse_options_toml(text, "options.toml", validation, &parsed);
      break;
    case 5: {
      // The value text parsed as every option of every schema (compile specs, --option values).
      for (const Schema& schema : schemas()) {
        for (const tessera::OptionSpec& spec : schema.specs) {
          tessera::BackendOption option;
          (void)tessera::parse_option_value(schema.backend, spec, text, &option);
        }
      }
      return 0;
    }
    default: {
      // The load option strings an application passes through: fallback chains, retargets, dims.
      tessera::LoadOptions options;
      (void)options.set_fallback(text);
      const size_t eq = text.find('=');
      if (eq != std::string_view::npos) {
        (void)options.add_retarget(text.substr(0, eq), text.substr(eq + 1));
        (void)options.set_dim(text.substr(0, eq), static_cast<int64_t>(text.size() - eq));
      }
      return 0;
    }
  }
  if (status.is_ok()) exercise(parsed);
  return 0;
}
