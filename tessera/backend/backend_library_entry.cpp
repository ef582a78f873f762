// Compiled into each of Tessera's backend libraries (cmake/backends.cmake), never into
// libtessera: the entry symbol that makes the library loadable by load_backend_library.
#include "tessera/backend/backend_library.h"

TESSERA_DEFINE_BACKEND_LIBRARY()
