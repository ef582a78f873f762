#include "tessera/backend/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/suggest.h"
#include "tessera/core/log.h"

namespace tessera {
namespace {

// Set while load_backend_library loads a library on this thread: its registrars record here.
thread_local std::vector<detail::StagedBackend>* t_staging = nullptr;

struct Registry {
  std::mutex mutex;
  std::shared_ptr<detail::BackendEntry> entries[kMaxBackends];
  size_t count = 0;
};

// Never destroyed: backends registered by static objects of other libraries may be looked up
// during their own static destruction.
Registry& registry() {
  static Registry* instance = (detail::portable_backend_linked(), new Registry);
  return *instance;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

Status check_name(std::string_view name) {
  if (name.empty()) return Status(Error::InvalidArgument, "backend name is empty");
  if (name.size() > kMaxBackendNameLength) {
    return Status::error(Error::InvalidArgument,
                         "backend name '%.*s' has %zu characters; at most %zu allowed",
                         static_cast<int>(std::min<size_t>(name.size(), 64)), name.data(),
                         name.size(), kMaxBackendNameLength);
  }
  for (char c : name) {
    if (!is_name_char(c)) {
      return Status::error(Error::InvalidArgument,
                           "backend name '%.*s' has character '%c'; use letters, digits, '_' "
                           "and '-'",
                           static_cast<int>(name.size()), name.data(), c);
    }
  }
  return Status::ok();
}

Status add(std::string_view name, BackendInterface* backend,
           std::unique_ptr<BackendInterface> owned) {
  TESSERA_RETURN_IF_ERROR(check_name(name));
  if (backend == nullptr) {
    return Status::error(Error::InvalidArgument, "backend '%.*s' is null",
                         static_cast<int>(name.size()), name.data());
  }
  Span<const OptionSpec> schema = backend->option_schema();
  TESSERA_RETURN_IF_ERROR(check_schema(name, schema));

  auto entry = std::make_shared<detail::BackendEntry>();
  std::memcpy(entry->name_storage, name.data(), name.size());
  entry->name_length = name.size();
  entry->backend = backend;
  entry->owned = std::move(owned);
  entry->schema = schema;

  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.count; ++i) {
    if (r.entries[i]->name() == name) {
      return Status::error(Error::AlreadyExists, "backend '%.*s' is already registered",
                           static_cast<int>(name.size()), name.data());
    }
  }
  if (r.count == kMaxBackends) {
    return Status::error(Error::MemoryAllocationFailed,
                         "cannot register backend '%.*s': the registry holds at most %zu",
                         static_cast<int>(name.size()), name.data(), kMaxBackends);
  }
  r.entries[r.count++] = std::move(entry);
  return Status::ok();
}

}  // namespace

namespace detail {

std::vector<StagedBackend>* stage_registrations(std::vector<StagedBackend>* staging) {
  std::vector<StagedBackend>* previous = t_staging;
  t_staging = staging;
  return previous;
}

std::shared_ptr<BackendEntry> find_backend_entry(std::string_view name) {
  load_backend_path_once();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.count; ++i) {
    if (r.entries[i]->name() == name) return r.entries[i];
  }
  return nullptr;
}

Status unknown_backend_status(std::string_view name, Error code) {
  std::vector<std::string> names = registered_backends();
  Suggester suggester(name);
  char list[128] = {};
  for (size_t i = 0; i < names.size(); ++i) {
    suggester.consider(names[i]);
    if (i > 0) append_text(list, sizeof list, ", ");
    append_text(list, sizeof list, names[i]);
  }
  if (names.empty()) append_text(list, sizeof list, "none");
  char hint[64] = {};
  if (!suggester.best().empty()) {
    std::snprintf(hint, sizeof hint, "did you mean '%.*s'?; ",
                  static_cast<int>(suggester.best().size()), suggester.best().data());
  }
  return Status::error(code, "unknown backend '%.*s' (%sregistered: %s)",
                       static_cast<int>(std::min<size_t>(name.size(), 64)), name.data(), hint,
                       list);
}

}  // namespace detail

Status register_backend(std::string_view name, std::unique_ptr<BackendInterface> backend) {
  BackendInterface* raw = backend.get();
  return add(name, raw, std::move(backend));
}

Status register_backend(std::string_view name, BackendInterface* backend) {
  return add(name, backend, nullptr);
}

Status unregister_backend(std::string_view name) {
  std::shared_ptr<detail::BackendEntry> removed;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (size_t i = 0; i < r.count; ++i) {
      if (r.entries[i]->name() == name) {
        removed = std::move(r.entries[i]);
        for (size_t j = i + 1; j < r.count; ++j) r.entries[j - 1] = std::move(r.entries[j]);
        --r.count;
        break;
      }
    }
  }
  if (!removed) return detail::unknown_backend_status(name, Error::NotFound);
  return Status::ok();  // `removed` (and an owned backend) goes once the last user lets go.
}

Result<BackendInterface*> get_backend(std::string_view name) {
  std::shared_ptr<detail::BackendEntry> entry = detail::find_backend_entry(name);
  if (!entry) return detail::unknown_backend_status(name, Error::NotFound);
  return entry->backend;
}

std::vector<std::string> registered_backends() {
  detail::load_backend_path_once();
  std::vector<std::string> names;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    names.reserve(r.count);
    for (size_t i = 0; i < r.count; ++i) names.emplace_back(r.entries[i]->name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

BackendRegistrar::BackendRegistrar(const char* name, Factory factory) {
  if (t_staging != nullptr) {
    t_staging->push_back({name, factory, nullptr});
    return;
  }
  status_ = factory == nullptr
                ? Status::error(Error::InvalidArgument, "backend '%s' has no factory", name)
                : register_backend(name, factory());
  if (!status_.is_ok()) {
    TESSERA_LOG_ERROR("failed to register backend '%s': %s", name, status_.message());
  }
}

BackendRegistrar::BackendRegistrar(const char* name, std::unique_ptr<BackendInterface> backend) {
  if (t_staging != nullptr) {
    t_staging->push_back({name, nullptr, std::move(backend)});
    return;
  }
  status_ = register_backend(name, std::move(backend));
  if (!status_.is_ok()) {
    TESSERA_LOG_ERROR("failed to register backend '%s': %s", name, status_.message());
  }
}

}  // namespace tessera
