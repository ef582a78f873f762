// load_backend_library and TESSERA_BACKEND_PATH: a good backend library, and each error (missing
// file, a directory, not a shared library, not a Tessera backend, another ABI version, a name
// taken). The libraries are test_backend.cpp built several ways (CMakeLists.txt gives the paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/backend/backend_library.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/log.h"

namespace tessera::test {
namespace {

bool is_registered(const std::string& name) {
  std::vector<std::string> names = registered_backends();
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(BackendLibrary, LoadsAndRegisters) {
  ASSERT_FALSE(is_registered("library_good"));
  Result<std::vector<std::string>> names = load_backend_library(TESSERA_TEST_GOOD_LIBRARY);
  ASSERT_TRUE(names.ok()) << names.status().message();
  EXPECT_EQ(*names, std::vector<std::string>{"library_good"});
  Result<BackendInterface*> backend = get_backend("library_good");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_TRUE((*backend)->is_available());

  // Loading it again registers nothing new and is not an error.
  Result<std::vector<std::string>> again = load_backend_library(TESSERA_TEST_GOOD_LIBRARY);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->empty());
}

TEST(BackendLibrary, MissingFile) {
  Result<std::vector<std::string>> r = load_backend_library("/nonexistent/libtessera_nothing.so");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::NotFound);
  EXPECT_STREQ(r.status().message(),
               "backend library '/nonexistent/libtessera_nothing.so': No such file or directory");
}

TEST(BackendLibrary, EmptyPathAndDirectory) {
  EXPECT_EQ(load_backend_library("").error(), Error::InvalidArgument);
  Result<std::vector<std::string>> r = load_backend_library(TESSERA_TEST_GOOD_DIR);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::InvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("is a directory"), std::string::npos)
      << r.status().message();
}

TEST(BackendLibrary, NotASharedLibrary) {
  std::string path = ::testing::TempDir() + "libtessera_text.so";
  std::ofstream(path) << "not an ELF file\n";
  Result<std::vector<std::string>> r = load_backend_library(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AccessFailed);
  EXPECT_NE(std::string(r.status().message()).find("could not be loaded: "), std::string::npos)
      << r.status().message();
}

TEST(BackendLibrary, NotATesseraBackend) {
  Result<std::vector<std::string>> r = load_backend_library(TESSERA_TEST_NO_ENTRY_LIBRARY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::NotSupported);
  EXPECT_NE(std::string(r.status().message())
                .find("is not a Tessera backend library: it has no "
                      "tessera_backend_library_abi_version symbol"),
            std::string::npos)
      << r.status().message();
  // Its registrar ran when the library was opened, but was only recorded.
  EXPECT_FALSE(is_registered("library_no_entry"));
}

TEST(BackendLibrary, AbiVersionMismatch) {
  Result<std::vector<std::string>> r = load_backend_library(TESSERA_TEST_WRONG_ABI_LIBRARY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::DelegateInvalidCompatibility);
  std::string expected = "was built for backend ABI version " +
                         std::to_string(kBackendAbiVersion + 1) + ", this libtessera has version " +
                         std::to_string(kBackendAbiVersion);
  EXPECT_NE(std::string(r.status().message()).find(expected), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(is_registered("library_wrong_abi"));
}

TEST(BackendLibrary, NameTaken) {
  testing::StubBackend stub;
  ASSERT_TRUE(register_backend("library_taken", &stub).is_ok());
  Result<std::vector<std::string>> r = load_backend_library(TESSERA_TEST_TAKEN_LIBRARY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AlreadyExists);
  EXPECT_NE(std::string(r.status().message()).find("backend 'library_taken' is already registered"),
            std::string::npos)
      << r.status().message();
  Result<BackendInterface*> b = get_backend("library_taken");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, &stub);
  ASSERT_TRUE(unregister_backend("library_taken").is_ok());
}

TEST(BackendLibrary, Directories) {
  Result<std::vector<std::string>> missing =
      load_backend_libraries(std::string(TESSERA_TEST_GOOD_DIR) + "::/nonexistent/dir");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), Error::NotFound);
  EXPECT_STREQ(missing.status().message(),
               "backend library directory '/nonexistent/dir': No such file or directory");
  // The good directory was still loaded.
  EXPECT_TRUE(is_registered("library_good"));
}

// Run by ctest with TESSERA_BACKEND_PATH=<good dir>:<bad dir> (CMakeLists.txt): the first lookup
// loads the good library; the bad ones are logged and skipped.
TEST(BackendPath, FirstLookupLoadsTheLibraries) {
  if (std::getenv(kBackendPathVariable) == nullptr) {
    GTEST_SKIP() << "run by ctest with " << kBackendPathVariable << " set";
  }
  static std::vector<std::string> logged;
  set_log_sink([](LogLevel level, const char* message, void*) {
    if (level == LogLevel::Error) logged.emplace_back(message);
  });
  bool good = is_registered("library_good");  // the first lookup of this process
  set_log_sink(nullptr);
  EXPECT_TRUE(good);
  EXPECT_FALSE(is_registered("library_wrong_abi"));
  EXPECT_FALSE(is_registered("library_no_entry"));
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_NE(logged[0].find("TESSERA_BACKEND_PATH: '"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("libtessera_library_no_entry.so' is not a Tessera backend library"),
            std::string::npos)
      << logged[0];
  EXPECT_NE(logged[1].find("libtessera_library_wrong_abi.so' was built for backend ABI version"),
            std::string::npos)
      << logged[1];
}

}  // namespace
}  // namespace tessera::test
