#include "tessera/backend/execute_options.h"

#include <memory>

#include "tessera/backend/backend_entry.h"

namespace tessera {

Status ExecuteOptions::set_options(std::string_view backend, Span<const BackendOption> options) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(backend);
  if (!entry) return detail::unknown_backend_status(backend, Error::OptionUnknownBackend);
  for (const BackendOption& option : options) {
    TESSERA_RETURN_IF_ERROR(validate_option(backend, entry->schema, option, OptionLevel::Execute));
  }
  return table_.merge(backend, options, "backend");
}

const ExecuteOptions& ExecuteOptions::none() {
  static const ExecuteOptions empty{};
  return empty;
}

namespace detail {

Status select_nonempty_execute_options(const ExecuteOptions& options, std::string_view backend,
                                       Span<const OptionSpec> schema, ExecuteOptionView* out) {
  out->options = {};
  Span<const BackendOption> mine = options.get_options(backend);
  for (const BackendOption& option : mine) {
    int i = find_option_spec(schema, option.key(), option.key_hash());
    if (i >= 0 && schema[static_cast<size_t>(i)].allows(OptionLevel::Execute) &&
        option_value_is_valid(schema[static_cast<size_t>(i)], option)) {
      continue;
    }
    return validate_option(backend, schema, option, OptionLevel::Execute);  // the error
  }
  out->options = mine;
  return Status::ok();
}

}  // namespace detail

}  // namespace tessera
