// A backend library for the loader's tests, built several ways (CMakeLists.txt): a good one, one
// built for another backend ABI version, one without the entry symbol, and a static archive.
// TESSERA_TEST_BACKEND_NAME is the name it registers.
#include "tessera/backend/backend_library.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"

namespace {

class LibraryTestBackend : public tessera::testing::StubBackend {};

}  // namespace

TESSERA_REGISTER_BACKEND(TESSERA_TEST_BACKEND_NAME, LibraryTestBackend);

#if defined(TESSERA_TEST_WRONG_ABI)
extern "C" __attribute__((visibility("default"))) uint32_t tessera_backend_library_abi_version() {
  return tessera::kBackendAbiVersion + 1;
}
#elif !defined(TESSERA_TEST_NO_ENTRY)
TESSERA_DEFINE_BACKEND_LIBRARY()
#endif
