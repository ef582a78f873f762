#include "tessera/compiler/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "tessera/compiler/onnx/importer.h"

namespace tessera::compiler::importer {
namespace {

template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

bool map_onnx_type(int onnx_type, ScalarType* out, bool* exact) {
  *exact = true;
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      *out = ScalarType::Float32;
      return true;
    case onnx::TensorProto::FLOAT16:
      *out = ScalarType::Float16;
      return true;
    case onnx::TensorProto::INT64:
      *out = ScalarType::Int64;
      return true;
    case onnx::TensorProto::INT32:
      *out = ScalarType::Int32;
      return true;
    case onnx::TensorProto::INT8:
      *out = ScalarType::Int8;
      return true;
    case onnx::TensorProto::UINT8:
      *out = ScalarType::UInt8;
      return true;
    case onnx::TensorProto::BOOL:
      *out = ScalarType::Bool;
      return true;
    case onnx::TensorProto::DOUBLE:
      *out = ScalarType::Float32;
      *exact = false;
      return true;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      *out = ScalarType::Int64;
      *exact = false;
      return true;
    default:
      return false;
  }
}

const char* onnx_type_name(int t) {
  return onnx::TensorProto_DataType_IsValid(t)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)).c_str()
             : "?";
}

Status Importer::import_tensor(const onnx::TensorProto& t, const std::string& what,
                               HostTensor* out) const {
  bool exact;
  if (!map_onnx_type(t.data_type(), &out->dtype, &exact)) {
    return Status::error(Error::NotSupported, "%s: ONNX element type %s is not supported",
                         what.c_str(), onnx_type_name(t.data_type()));
  }
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / d)) {
      return Status::error(Error::InvalidProgram, "%s: bad dims", what.c_str());
    }
    out->dims.push_back(d);
    n *= d;
  }
  std::string external;
  const std::string* raw = nullptr;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
      if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
    }
    if (location.empty() || location.find("..") != std::string::npos || location[0] == '/') {
      return Status::error(Error::InvalidProgram, "%s: bad external data location '%s'",
                           what.c_str(), location.c_str());
    }
    std::string path =
        options_.external_data_dir.empty() ? location : options_.external_data_dir + "/" + location;
    std::ifstream f(path, std::ios::binary);
    if (!f)
      return Status::error(Error::NotFound, "%s: cannot open external data '%s'", what.c_str(),
                           path.c_str());
    f.seekg(0, std::ios::end);
    const int64_t file_size = static_cast<int64_t>(f.tellg());
    if (length < 0) length = file_size - offset;
    if (offset < 0 || length < 0 || offset + length > file_size) {
      return Status::error(Error::InvalidProgram, "%s: external data range outside '%s'",
                           what.c_str(), path.c_str());
    }
    external.resize(static_cast<size_t>(length));
    f.seekg(offset);
    f.read(external.data(), length);
    raw = &external;
  } else if (t.has_raw_data()) {
    raw = &t.raw_data();
  }
  const bool is_float = HostTensor::is_float_type(out->dtype);
  const int type = t.data_type();
  auto count_error = [&](int64_t have) {
    return Status::error(Error::InvalidProgram, "%s: %lld values for dims of %lld elements",
                         what.c_str(), static_cast<long long>(have), static_cast<long long>(n));
  };
  // The stored element count must match the dims before anything is allocated for them.
  size_t esize = 0;
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      esize = 4;
      break;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      esize = 8;
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      esize = 2;
      break;
    default:
      esize = 1;
  }
  int64_t stored = 0;
  if (raw) {
    stored = static_cast<int64_t>(raw->size() / esize);
    if (raw->size() % esize != 0) return count_error(stored);
  } else {
    switch (type) {
      case onnx::TensorProto::FLOAT:
        stored = t.float_data_size();
        break;
      case onnx::TensorProto::DOUBLE:
        stored = t.double_data_size();
        break;
      case onnx::TensorProto::INT64:
        stored = t.int64_data_size();
        break;
      case onnx::TensorProto::UINT32:
      case onnx::TensorProto::UINT64:
        stored = t.uint64_data_size();
        break;
      default:
        stored = t.int32_data_size();
    }
  }
  if (stored != n) return count_error(stored);
  if (is_float)
    out->f.resize(n);
  else
    out->i.resize(n);
  if (raw) {
    const char* p = raw->data();
    for (int64_t k = 0; k < n; ++k, p += esize) {
      switch (type) {
        case onnx::TensorProto::FLOAT:
          out->f[k] = read_le<float>(p);
          break;
        case onnx::TensorProto::DOUBLE:
          out->f[k] = static_cast<float>(read_le<double>(p));
          break;
        case onnx::TensorProto::FLOAT16:
          out->f[k] = half_to_float(read_le<uint16_t>(p));
          break;
        case onnx::TensorProto::INT64:
          out->i[k] = read_le<int64_t>(p);
          break;
        case onnx::TensorProto::UINT64:
          out->i[k] = static_cast<int64_t>(read_le<uint64_t>(p));
          break;
        case onnx::TensorProto::INT32:
          out->i[k] = read_le<int32_t>(p);
          break;
        case onnx::TensorProto::UINT32:
          out->i[k] = read_le<uint32_t>(p);
          break;
        case onnx::TensorProto::INT16:
          out->i[k] = read_le<int16_t>(p);
          break;
        case onnx::TensorProto::UINT16:
          out->i[k] = read_le<uint16_t>(p);
          break;
        case onnx::TensorProto::INT8:
          out->i[k] = read_le<int8_t>(p);
          break;
        case onnx::TensorProto::BOOL:
          out->i[k] = read_le<uint8_t>(p) != 0;
          break;
        default:
          out->i[k] = read_le<uint8_t>(p);
          break;
      }
    }
    return Status::ok();
  }
  switch (type) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() != n) return count_error(t.float_data_size());
      std::copy(t.float_data().begin(), t.float_data().end(), out->f.begin());
      break;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() != n) return count_error(t.double_data_size());
      for (int64_t k = 0; k < n; ++k)
        out->f[k] = static_cast<float>(t.double_data(static_cast<int>(k)));
      break;
    case onnx::TensorProto::FLOAT16:
      if (t.int32_data_size() != n) return count_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k)
        out->f[k] = half_to_float(static_cast<uint16_t>(t.int32_data(static_cast<int>(k))));
      break;
    case onnx::TensorProto::INT64:
      if (t.int64_data_size() != n) return count_error(t.int64_data_size());
      std::copy(t.int64_data().begin(), t.int64_data().end(), out->i.begin());
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (t.uint64_data_size() != n) return count_error(t.uint64_data_size());
      for (int64_t k = 0; k < n; ++k)
        out->i[k] = static_cast<int64_t>(t.uint64_data(static_cast<int>(k)));
      break;
    default:
      if (t.int32_data_size() != n) return count_error(t.int32_data_size());
      for (int64_t k = 0; k < n; ++k) {
        int64_t v = t.int32_data(static_cast<int>(k));
        out->i[k] = type == onnx::TensorProto::BOOL ? (v != 0) : v;
      }
  }
  return Status::ok();
}

}  // namespace tessera::compiler::importer
