// Helpers for the end-to-end oneDNN tests: compile a PyTorch-exported fixture with the "onednn"
// delegate backend, load it, run it on the fixture's input and compare with PyTorch's output.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/program.h"

namespace tessera::onednn::testing {

/// TESSERA_FIXTURES, or the build's fixture directory.
std::string fixture_dir();

/// 64-byte aligned copy of a program file, as a mapped file would be.
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::vector<uint8_t>& bytes);
  ~AlignedBytes();
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  uint8_t* data_;
};

/// Compiles `<fixture_dir>/<name>/model.onnx` (batch symbolic, 1..8) for `backends`.
Result<std::vector<uint8_t>> compile_fixture(const std::string& name,
                                             const std::vector<std::string>& backends);

struct FixtureRun {
  double max_diff = 0;
  double max_ref = 0;
  size_t delegates = 0;
  std::vector<std::string> delegate_backends;
};

/// Loads "forward" with `load` (batch set from the input) and runs input<suffix>.npy,
/// comparing with output<suffix>.npy.
Result<FixtureRun> run_fixture(const Program& program, const std::string& name,
                               const std::string& suffix, LoadOptions load = {});

/// compile_fixture for "onednn", Program::load, then run_fixture: one call for tests that run a
/// fixture once.
Result<FixtureRun> compile_and_run_fixture(const std::string& name, const std::string& suffix,
                                           LoadOptions load = {});

}  // namespace tessera::onednn::testing
