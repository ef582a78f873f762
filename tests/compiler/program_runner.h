// ProgramRunner: a minimal interpreter of a compiled program over the portable kernels, for the
// compiler tests. It follows the program's memory plan (one arena, values at their planned
// offsets), so a wrong plan shows up as wrong numbers. Kernel instructions only; the real
// runtime (tessera/runtime) is tested separately.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/core/result.h"

namespace tessera::compiler::testing {

struct HostArray {
  std::vector<int64_t> dims;
  std::vector<float> data;
};

/// Runs method 0 of `program` with the symbols at `symbols` (one value per method symbol; empty:
/// read from the inputs' dims where a dim is a bare symbol) on float32 `inputs`; returns the
/// float32 outputs.
Result<std::vector<HostArray>> run_program(const std::vector<uint8_t>& program,
                                           const std::vector<int64_t>& symbols,
                                           const std::vector<HostArray>& inputs);

/// Reads a little-endian float32, C-order .npy file.
Result<HostArray> read_npy(const std::string& path);

}  // namespace tessera::compiler::testing
