#include "model_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessera/compiler/backend_targets.h"
#include "tessera/compiler/compiler.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/delegate_info.h"
#include "tessera/runtime/method.h"
#include "tests/compiler/program_runner.h"

namespace tessera::onednn::testing {

std::string fixture_dir() {
  const char* env = std::getenv("TESSERA_FIXTURES");
  return env ? env : TESSERA_FIXTURES_DIR;
}

AlignedBytes::AlignedBytes(const std::vector<uint8_t>& bytes)
    : size_(bytes.size()),
      data_(static_cast<uint8_t*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64))) {
  std::memcpy(data_, bytes.data(), bytes.size());
}

AlignedBytes::~AlignedBytes() {
  std::free(data_);
}

Result<std::vector<uint8_t>> compile_fixture(const std::string& name,
                                             const std::vector<std::string>& backends) {
  compiler::CompileOptions options;
  options.import.dims = {{"batch", 1, 8}};
  TESSERA_ASSIGN_OR_RETURN(options.backends, compiler::registry_backend_targets(backends));
  TESSERA_ASSIGN_OR_RETURN(auto compiled, compiler::compile_onnx_file(
                                              fixture_dir() + "/" + name + "/model.onnx", options));
  return compiled.program.build();
}

Result<FixtureRun> run_fixture(const Program& program, const std::string& name,
                               const std::string& suffix, LoadOptions load) {
  const std::string dir = fixture_dir() + "/" + name;
  TESSERA_ASSIGN_OR_RETURN(auto input,
                           compiler::testing::read_npy(dir + "/input" + suffix + ".npy"));
  TESSERA_ASSIGN_OR_RETURN(auto ref,
                           compiler::testing::read_npy(dir + "/output" + suffix + ".npy"));
  TESSERA_RETURN_IF_ERROR(load.set_dim("batch", input.dims[0]));
  TESSERA_ASSIGN_OR_RETURN(auto method, program.load_method("forward", nullptr, load));
  FixtureRun run;
  run.delegates = method.num_delegates();
  for (size_t d = 0; d < method.num_delegates(); ++d) {
    run.delegate_backends.emplace_back(method.delegate_info(d).backend);
  }
  Tensor t(ScalarType::Float32, input.dims, input.data.data());
  TESSERA_RETURN_IF_ERROR(method.set_input(0, t));
  TESSERA_RETURN_IF_ERROR(method.execute());
  TESSERA_ASSIGN_OR_RETURN(const Tensor* out, method.get_output(0));
  if (static_cast<size_t>(out->numel()) != ref.data.size()) {
    return Status(Error::ShapeMismatch, "output size differs from the reference");
  }
  for (size_t i = 0; i < ref.data.size(); ++i) {
    run.max_ref = std::max(run.max_ref, std::fabs(static_cast<double>(ref.data[i])));
    const double diff = std::fabs(static_cast<double>(out->data_as<float>()[i]) - ref.data[i]);
    run.max_diff = std::isnan(diff) ? INFINITY : std::max(run.max_diff, diff);
  }
  return run;
}

Result<FixtureRun> compile_and_run_fixture(const std::string& name, const std::string& suffix,
                                           LoadOptions load) {
  TESSERA_ASSIGN_OR_RETURN(auto bytes, compile_fixture(name, {"onednn"}));
  AlignedBytes file(bytes);
  BufferDataLoader loader(file.data(), file.size());
  TESSERA_ASSIGN_OR_RETURN(auto program, Program::load(&loader));
  return run_fixture(program, name, suffix, load);
}

}  // namespace tessera::onednn::testing
