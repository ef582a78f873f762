#include "tessera/compiler/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "tessera/compiler/onnx/importer.h"

namespace tessera::compiler {

using importer::Importer;
using importer::kMaxOpset;
using importer::kMinOpset;

Result<ModelGraph> import_onnx(const void* data, size_t size, const ImportOptions& options) {
  try {
    onnx::ModelProto model;
    if (size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !model.ParseFromArray(data, static_cast<int>(size))) {
      return Status(Error::InvalidProgram, "not an ONNX model (protobuf parsing failed)");
    }
    // The opset first: the checker rejects opsets newer than libonnx with a vaguer message.
    int opset = -1;
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
    }
    if (opset < 0)
      return Status(Error::InvalidProgram, "ONNX model imports no default-domain opset");
    if (opset < kMinOpset || opset > kMaxOpset) {
      return Status::error(
          Error::NotSupported,
          "ONNX opset %d is not supported (supported: %d to %d); re-export the model "
          "with an opset in that range",
          opset, kMinOpset, kMaxOpset);
    }
    if (options.check_model) {
      try {
        onnx::checker::check_model(model);
      } catch (const std::exception& e) {
        std::string what = e.what();
        if (auto nl = what.find("\n\n==>"); nl != std::string::npos) what.resize(nl);
        return Status::error(Error::InvalidProgram, "invalid ONNX model: %s", what.c_str());
      }
    }
    // Our own shape inference is authoritative; it is checked against the shapes the model
    // declares as it goes, and against ONNX's shape inference afterwards. ONNX's inference runs
    // only on a model we accepted: it divides by attribute values we validate first.
    Importer importer(model, options);
    auto graph = importer.run();
    if (!graph.ok() || !options.onnx_shape_check) return graph;
    try {
      onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/0,
                                     /*data_propagation=*/false);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), si);
    } catch (const std::exception&) {
      return graph;  // no second opinion
    }
    TESSERA_RETURN_IF_ERROR(importer.cross_check(graph.value()));
    return graph;
  } catch (const std::bad_alloc&) {
    return Status(Error::MemoryAllocationFailed, "out of memory importing the ONNX model");
  } catch (const std::exception& e) {
    return Status::error(Error::InvalidProgram, "ONNX import failed: %s", e.what());
  }
}

Result<ModelGraph> import_onnx_file(const std::string& path, ImportOptions options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Error::NotFound, "cannot open '%s'", path.c_str());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return Status::error(Error::AccessFailed, "cannot read '%s'", path.c_str());
  if (options.external_data_dir.empty()) {
    const auto slash = path.find_last_of('/');
    options.external_data_dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  auto result = import_onnx(bytes.data(), bytes.size(), options);
  if (!result.ok()) return result.status().with_prefix(path);
  return result;
}

Result<DimBound> parse_dim_bound(const std::string& text) {
  const auto eq = text.find('=');
  auto bad = [&]() {
    return Status::error(Error::InvalidArgument,
                         "bad dim bound '%s' (expected NAME=MIN:MAX, e.g. batch=1:8)",
                         text.c_str());
  };
  if (eq == std::string::npos || eq == 0) return bad();
  DimBound b;
  b.name = text.substr(0, eq);
  const std::string range = text.substr(eq + 1);
  const auto colon = range.find(':');
  auto parse = [](const std::string& s, int64_t* out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return false;
    *out = v;
    return true;
  };
  if (colon == std::string::npos) {
    if (!parse(range, &b.min)) return bad();
    b.max = b.min;
  } else if (!parse(range.substr(0, colon), &b.min) || !parse(range.substr(colon + 1), &b.max)) {
    return bad();
  }
  if (b.min < 1 || b.max < b.min) {
    return Status::error(Error::InvalidArgument, "dim bound '%s': need 1 <= MIN <= MAX",
                         text.c_str());
  }
  return b;
}

}  // namespace tessera::compiler
