// Reading and writing NumPy .npy files (C order, little-endian; float32, float16 and the
// integer and bool types; float64 is read converted to the dtype a caller asks for).
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
/// A float64 array (NumPy's default float, which Tessera has no dtype for) is an error whose
/// message says how to save it as float32.
Result<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& name);
Result<NpyArray> read_npy(const std::string& path);
/// Reads `path` for a tensor of `dtype`. A float64 array is converted to `dtype` and `*note`
/// says so (it is left empty otherwise): rounded to float32 or float16; for an integer or bool
/// `dtype` only if every value is a whole number in its range, else an InvalidArgument error
/// naming the first value that is not and how to save the array. Any other file is returned as
/// read (a dtype mismatch is the caller's to report).
Result<NpyArray> read_npy_as(const std::string& path, ScalarType dtype, std::string* note);
std::vector<uint8_t> encode_npy(const NpyArray& array);
Status write_npy(const std::string& path, const NpyArray& array);

/// NumPy's descr for a dtype: "<f4", "|u1", ...
const char* npy_descr(ScalarType dtype);

}  // namespace tessera::tools
