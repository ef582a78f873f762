// Inputs the fuzz targets found (fuzz/corpus/<target>/regression-*), for the regression tests
// that keep each finding fixed. TESSERA_SOURCE_DIR is defined by tests/CMakeLists.txt.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tessera::testing {

/// The bytes of fuzz/corpus/<target>/<name>; empty if the file is missing (the test then fails
/// on its own expectations).
inline std::vector<uint8_t> read_fuzz_input(const std::string& target, const std::string& name) {
  std::ifstream f(std::string(TESSERA_SOURCE_DIR) + "/fuzz/corpus/" + target + "/" + name,
                  std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace tessera::testing
