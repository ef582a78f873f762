// Reading and writing NumPy .npy files (C order, little-endian; float32, float16 and the
// integer and bool types).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/core/scalar_type.h"

namespace tessera::tools {

struct NpyArray {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // numel * element_size bytes

  int64_t numel() const;
};

/// Parses .npy bytes. Errors (InvalidArgument) name the problem: bad magic, unsupported version
/// or dtype, Fortran order, big-endian data, a shape that does not match the data size.
Result<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& name);
Result<NpyArray> read_npy(const std::string& path);
std::vector<uint8_t> encode_npy(const NpyArray& array);
Status write_npy(const std::string& path, const NpyArray& array);

/// NumPy's descr for a dtype: "<f4", "|u1", ...
const char* npy_descr(ScalarType dtype);

}  // namespace tessera::tools
