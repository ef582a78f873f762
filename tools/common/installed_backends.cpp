#include "tools/common/installed_backends.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

#include "tessera/backend/backend_library.h"
#include "tessera/core/error.h"
#include "tessera/core/result.h"

namespace tessera::tools {
namespace {

// The directory of the shared libtessera this process uses; "" for a static one. The tools are
// built with TESSERA_RUNTIME_SONAME (libtessera.so.0.2) when libtessera is shared.
std::string runtime_directory() {
#ifdef TESSERA_RUNTIME_SONAME
  void* handle = ::dlopen(TESSERA_RUNTIME_SONAME, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return "";
  char origin[PATH_MAX] = {};
  const bool found = ::dlinfo(handle, RTLD_DI_ORIGIN, origin) == 0;
  ::dlclose(handle);
  if (!found) return "";
  // Found through the tool's RUNPATH, it reads <prefix>/bin/../lib: say <prefix>/lib.
  char resolved[PATH_MAX] = {};
  return ::realpath(origin, resolved) != nullptr ? std::string(resolved) : std::string(origin);
#else
  return "";
#endif
}

// "opencl" for "libtessera_opencl.so".
std::string backend_of_file(std::string_view file) {
  file.remove_prefix(std::string_view("libtessera_").size());
  file.remove_suffix(std::string_view(".so").size());
  return std::string(file);
}

}  // namespace

std::string InstalledBackends::library_of(const std::string& backend) const {
  for (const Loaded& l : loaded) {
    if (l.backend == backend) return l.library;
  }
  return "";
}

InstalledBackends load_installed_backends() {
  InstalledBackends out;
  out.directory = runtime_directory();
  if (out.directory.empty()) return out;
  DIR* dir = ::opendir(out.directory.c_str());
  if (dir == nullptr) return out;
  std::vector<std::string> files;
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name(entry->d_name);
    if (name.size() > 14 && name.substr(0, 11) == "libtessera_" &&
        name.substr(name.size() - 3) == ".so") {
      files.emplace_back(name);
    }
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());
  for (const std::string& file : files) {
    const std::string path = out.directory + "/" + file;
    Result<std::vector<std::string>> names = load_backend_library(path);
    if (!names.ok()) {
      out.problems.push_back("the " + backend_of_file(file) +
                             " backend is not available: " + names.status().message() + " (" +
                             error_name(names.status().code()) + ")");
      continue;
    }
    for (const std::string& name : *names) out.loaded.push_back({name, path});
  }
  return out;
}

void print_backend_problems(const char* tool, const InstalledBackends& backends) {
  for (const std::string& problem : backends.problems) {
    std::fprintf(stderr, "%s: warning: %s\n", tool, problem.c_str());
  }
}

}  // namespace tessera::tools
