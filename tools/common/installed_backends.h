// The backend libraries a tool loads at start: those installed beside the libtessera it runs
// with (<prefix>/lib for an installed tool, the build directory in a build tree), so that the
// tools link libtessera only and run with whatever backends are installed.
#pragma once

#include <string>
#include <vector>

namespace tessera::tools {

/// What load_installed_backends did.
struct InstalledBackends {
  /// The directory searched: libtessera's own. Empty when libtessera is linked statically (the
  /// tool then has its backends linked in) or its place could not be found.
  std::string directory;
  /// Per backend registered from it: its name and the library file.
  struct Loaded {
    std::string backend;
    std::string library;
  };
  std::vector<Loaded> loaded;
  /// One line per library that did not load (a missing dependency such as libOpenCL.so.1, a
  /// library built for another Tessera), saying which backend is missing and why.
  std::vector<std::string> problems;

  /// The library `backend` was loaded from, or "" (linked in, or from TESSERA_BACKEND_PATH).
  std::string library_of(const std::string& backend) const;
};

/// Loads every libtessera_<name>.so in the directory of the libtessera this process runs with,
/// in file-name order. A library that does not load is reported in `problems`, never fatal: the
/// other backends still work. TESSERA_BACKEND_PATH and --backend-library add to these.
InstalledBackends load_installed_backends();

/// Prints each problem on stderr as "TOOL: warning: ...".
void print_backend_problems(const char* tool, const InstalledBackends& backends);

}  // namespace tessera::tools
