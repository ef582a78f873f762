#include "tessera/backend/execute_options.h"

#include <memory>

#include "tessera/backend/backend_entry.h"

namespace tessera {

Status ExecuteOptions::set_options(std::string_view backend, Span<const BackendOption> options) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
  for (const BackendOption& option : options) {
    TESSERA_RETURN_IF_ERROR(validate_option(backend, entry->schema, option, OptionScope::Execute));
  }
  return table_.merge(backend, options, "backend");
}

const ExecuteOptions& ExecuteOptions::none() {
  static const ExecuteOptions empty{};
  return empty;
}

Status select_execute_options(const ExecuteOptions& options, std::string_view backend,
                              Span<const OptionSpec> schema, ExecuteOptionView* out) {
  out->options = {};
  if (options.empty()) return Status::ok();
  Span<const BackendOption> mine = options.get_options(backend);
  for (const BackendOption& option : mine) {
    TESSERA_RETURN_IF_ERROR(validate_option(backend, schema, option, OptionScope::Execute));
  }
  out->options = mine;
  return Status::ok();
}

}  // namespace tessera
