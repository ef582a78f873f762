#include "tessera/backend/backend_library.h"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "tessera/backend/backend_entry.h"
#include "tessera/backend/registry.h"
#include "tessera/core/log.h"

namespace tessera {
namespace {

// Paths in messages are cut to this many characters so that the rest of the message fits.
constexpr int kMaxPathInMessage = 96;

int path_length(const std::string& path) {
  return static_cast<int>(std::min<size_t>(path.size(), kMaxPathInMessage));
}

// Serialises loads (a library's registrars record into this thread's staging list). Recursive: a
// backend's constructor may look a backend up, which may load TESSERA_BACKEND_PATH.
std::recursive_mutex& loader_mutex() {
  static std::recursive_mutex* mutex = new std::recursive_mutex;
  return *mutex;
}

thread_local bool t_loading_backend_path = false;

// Checks the staged registrations of `path` and registers them all, or none.
Result<std::vector<std::string>> register_staged(const std::string& path,
                                                 std::vector<detail::StagedBackend>& staged) {
  if (staged.empty()) {
    return Status::error(
        Error::NotSupported,
        "backend library '%.*s' registers no backend (no TESSERA_REGISTER_BACKEND)",
        path_length(path), path.c_str());
  }
  std::vector<std::string> names;
  for (detail::StagedBackend& s : staged) {
    std::unique_ptr<BackendInterface> backend =
        s.instance ? std::move(s.instance) : (s.factory ? s.factory() : nullptr);
    Status status = register_backend(s.name, std::move(backend));
    if (!status.is_ok()) {
      for (const std::string& done : names) (void)unregister_backend(done);
      return Status::error(status.code(), "backend library '%.*s': %s", path_length(path),
                           path.c_str(), status.message());
    }
    names.emplace_back(s.name);
  }
  return names;
}

}  // namespace

Result<std::vector<std::string>> load_backend_library(std::string_view path_view) {
  if (path_view.empty()) {
    return Status(Error::InvalidArgument, "backend library path is empty");
  }
  std::string path(path_view);
  // A bare file name would make dlopen search the system's library path; a path is what was meant.
  if (path.find('/') == std::string::npos) path = "./" + path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::error(errno == ENOENT ? Error::NotFound : Error::AccessFailed,
                         "backend library '%.*s': %s", path_length(path), path.c_str(),
                         std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::error(Error::InvalidArgument,
                         "backend library '%.*s' is a directory (load_backend_libraries loads "
                         "every library of a directory)",
                         path_length(path), path.c_str());
  }

  std::lock_guard<std::recursive_mutex> lock(loader_mutex());
  // Already in the process (linked, or loaded before): its backends registered back then.
  if (void* loaded = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    bool is_backend = ::dlsym(loaded, kBackendLibraryEntrySymbol) != nullptr;
    ::dlclose(loaded);
    if (is_backend) return std::vector<std::string>{};
  }

  std::vector<detail::StagedBackend> staged;
  std::vector<detail::StagedBackend>* previous = detail::stage_registrations(&staged);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  detail::stage_registrations(previous);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status::error(Error::AccessFailed, "backend library '%.*s' could not be loaded: %s",
                         path_length(path), path.c_str(), why ? why : "unknown dlopen error");
  }
  // Until the checks pass, nothing the library recorded is constructed or registered.
  using AbiVersionFn = uint32_t (*)();
  auto abi_version = reinterpret_cast<AbiVersionFn>(::dlsym(handle, kBackendLibraryEntrySymbol));
  if (abi_version == nullptr) {
    staged.clear();
    ::dlclose(handle);
    return Status::error(Error::NotSupported,
                         "'%.*s' is not a Tessera backend library: it has no %s symbol "
                         "(TESSERA_DEFINE_BACKEND_LIBRARY)",
                         path_length(path), path.c_str(), kBackendLibraryEntrySymbol);
  }
  uint32_t version = abi_version();
  if (version != kBackendAbiVersion) {
    staged.clear();
    ::dlclose(handle);
    return Status::error(Error::DelegateInvalidCompatibility,
                         "backend library '%.*s' was built for backend ABI version %u, this "
                         "libtessera has version %u: rebuild it against this Tessera",
                         path_length(path), path.c_str(), version, kBackendAbiVersion);
  }
  Result<std::vector<std::string>> names = register_staged(path, staged);
  if (!names.ok()) {
    staged.clear();
    ::dlclose(handle);
  }
  // On success the library stays loaded for the life of the process: its backends live in it.
  return names;
}

namespace {

// Loads the libtessera_*.so files of each directory of `directories` (':'-separated), appending
// the names of the backends registered to `registered` and calling on_error(status) per failure.
template <typename OnError>
void load_directories(std::string_view directories, std::vector<std::string>& registered,
                      OnError on_error) {
  size_t begin = 0;
  while (begin <= directories.size()) {
    size_t end = directories.find(':', begin);
    if (end == std::string_view::npos) end = directories.size();
    std::string dir(directories.substr(begin, end - begin));
    begin = end + 1;
    if (dir.empty()) continue;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      on_error(Status::error(errno == ENOENT ? Error::NotFound : Error::AccessFailed,
                             "backend library directory '%.*s': %s", path_length(dir), dir.c_str(),
                             std::strerror(errno)));
      continue;
    }
    std::vector<std::string> files;
    while (dirent* entry = ::readdir(d)) {
      std::string_view name(entry->d_name);
      if (name.size() > 14 && name.substr(0, 11) == "libtessera_" &&
          name.substr(name.size() - 3) == ".so") {
        files.emplace_back(name);
      }
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      Result<std::vector<std::string>> names = load_backend_library(dir + "/" + file);
      if (!names.ok()) {
        on_error(names.status());
        continue;
      }
      registered.insert(registered.end(), names.value().begin(), names.value().end());
    }
  }
}

}  // namespace

Result<std::vector<std::string>> load_backend_libraries(std::string_view directories) {
  std::vector<std::string> registered;
  Status first_error;
  load_directories(directories, registered, [&](const Status& status) {
    if (first_error.is_ok()) first_error = status;
  });
  if (!first_error.is_ok()) return first_error;
  return registered;
}

namespace detail {

void load_backend_path_once() {
  if (t_loading_backend_path) return;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv(kBackendPathVariable);
    if (path == nullptr || *path == '\0') return;
    t_loading_backend_path = true;
    // Each failure is logged; the other libraries still load.
    std::vector<std::string> registered;
    load_directories(path, registered, [](const Status& status) {
      TESSERA_LOG_ERROR("%s: %s (%s)", kBackendPathVariable, status.message(),
                        error_name(status.code()));
    });
    t_loading_backend_path = false;
  });
}

}  // namespace detail
}  // namespace tessera
