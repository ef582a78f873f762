#include "tools/common/npy.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <tuple>
#include <utility>

namespace tessera::tools {
namespace {

struct DescrEntry {
  const char* descr;
  ScalarType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"<f4", ScalarType::Float32}, {"<f2", ScalarType::Float16}, {"<i8", ScalarType::Int64},
    {"<i4", ScalarType::Int32},   {"|i1", ScalarType::Int8},    {"|u1", ScalarType::UInt8},
    {"|b1", ScalarType::Bool},
};

Status bad(const std::string& name, const char* what) {
  return Status::error(Error::InvalidArgument, "%s: %s", name.c_str(), what);
}

// Finds `'key':` in the header dict and returns the text after it.
bool find_key(std::string_view header, std::string_view key, std::string_view* rest) {
  std::string quoted(1, '\'');
  quoted += key;
  quoted += '\'';
  size_t p = header.find(quoted);
  if (p == std::string_view::npos) return false;
  p = header.find(':', p + quoted.size());
  if (p == std::string_view::npos) return false;
  *rest = header.substr(p + 1);
  while (!rest->empty() && rest->front() == ' ') rest->remove_prefix(1);
  return true;
}

Result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Error::NotFound, "cannot open '%s'", path.c_str());
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

// NumPy's name for a dtype, as in numpy.float32.
const char* numpy_name(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float32:
      return "float32";
    case ScalarType::Float16:
      return "float16";
    case ScalarType::Int64:
      return "int64";
    case ScalarType::Int32:
      return "int32";
    case ScalarType::Int8:
      return "int8";
    case ScalarType::UInt8:
      return "uint8";
    case ScalarType::Bool:
      return "bool_";
  }
  return "?";
}

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

const char* npy_descr(ScalarType dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) return e.descr;
  }
  return "?";
}

namespace {

// parse_npy; when `float64` is not null, a float64 array (descr '<f8') is read too, as 8-byte
// elements in `data` with `dtype` left Float32, and `*float64` says whether it was one.
Result<NpyArray> parse(const std::vector<uint8_t>& bytes, const std::string& name, bool* float64) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    return bad(name, "not a .npy file (bad magic)");
  }
  uint8_t major = bytes[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad(name, "truncated header");
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    header_start = 12;
  } else {
    return Status::error(Error::InvalidArgument, "%s: unsupported .npy version %u", name.c_str(), major);
  }
  if (header_len > bytes.size() - header_start) return bad(name, "truncated header");
  std::string_view header(reinterpret_cast<const char*>(bytes.data()) + header_start, header_len);

  NpyArray out;
  std::string_view v;
  if (!find_key(header, "descr", &v) || v.empty() || v.front() != '\'') return bad(name, "header has no descr");
  size_t end = v.find('\'', 1);
  if (end == std::string_view::npos) return bad(name, "malformed descr");
  std::string descr(v.substr(1, end - 1));
  if (descr == "<b1") descr = "|b1";
  if (descr == "<i1") descr = "|i1";
  if (descr == "<u1") descr = "|u1";
  bool found = false;
  for (const DescrEntry& e : kDescrs) {
    if (descr == e.descr) {
      out.dtype = e.dtype;
      found = true;
    }
  }
  if (descr == "<f8") {
    if (float64 == nullptr) {
      return Status::error(Error::InvalidArgument,
                           "%s: dtype float64 is not supported; save it as float32 "
                           "(numpy.save(path, array.astype(numpy.float32)))",
                           name.c_str());
    }
    *float64 = found = true;
  }
  if (!found) {
    return Status::error(Error::InvalidArgument,
                         "%s: unsupported dtype '%s' (supported: float32, float16, int64, int32, "
                         "int8, uint8, bool; little-endian)",
                         name.c_str(), descr.c_str());
  }
  if (!find_key(header, "fortran_order", &v)) return bad(name, "header has no fortran_order");
  if (v.substr(0, 4) == "True") return bad(name, "Fortran-order arrays are not supported; save with C order");
  if (!find_key(header, "shape", &v) || v.empty() || v.front() != '(') return bad(name, "header has no shape");
  size_t close = v.find(')');
  if (close == std::string_view::npos) return bad(name, "malformed shape");
  std::string_view dims = v.substr(1, close - 1);
  // The product of the non-zero dims must fit in int64 even when another dim is 0 (as NumPy
  // requires), so that NpyArray::numel() cannot overflow on the way to 0.
  uint64_t numel = 1, nonzero_numel = 1;
  while (!dims.empty()) {
    while (!dims.empty() && (dims.front() == ' ' || dims.front() == ',')) dims.remove_prefix(1);
    if (dims.empty()) break;
    int64_t d = 0;
    size_t i = 0;
    while (i < dims.size() && dims[i] >= '0' && dims[i] <= '9') {
      if (d > (int64_t{1} << 40)) return bad(name, "shape dimension too large");
      d = d * 10 + (dims[i] - '0');
      ++i;
    }
    if (i == 0) return bad(name, "malformed shape");
    dims.remove_prefix(i);
    out.shape.push_back(d);
    if (d != 0 &&
        (__builtin_mul_overflow(nonzero_numel, static_cast<uint64_t>(d), &nonzero_numel) ||
         nonzero_numel > static_cast<uint64_t>(INT64_MAX))) {
      return bad(name, "shape overflows");
    }
    numel = d == 0 ? 0 : numel * static_cast<uint64_t>(d);
  }
  uint64_t nbytes = 0;
  const size_t item_size =
      float64 != nullptr && *float64 ? sizeof(double) : element_size(out.dtype);
  if (__builtin_mul_overflow(numel, item_size, &nbytes)) return bad(name, "shape overflows");
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != nbytes) {
    return Status::error(Error::InvalidArgument,
                         "%s: shape needs %llu bytes of data but the file has %zu", name.c_str(),
                         static_cast<unsigned long long>(nbytes), bytes.size() - data_start);
  }
  out.data.assign(bytes.begin() + static_cast<long>(data_start), bytes.end());
  return out;
}

}  // namespace

Result<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& name) {
  return parse(bytes, name, nullptr);
}

Result<NpyArray> read_npy(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path));
  return parse_npy(bytes, path);
}

Result<NpyArray> read_npy_as(const std::string& path, ScalarType dtype, std::string* note) {
  note->clear();
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path));
  bool float64 = false;
  TESSERA_ASSIGN_OR_RETURN(NpyArray array, parse(bytes, path, &float64));
  if (!float64) return array;
  const int64_t n = array.numel();
  std::vector<double> values(static_cast<size_t>(n));
  if (n > 0) std::memcpy(values.data(), array.data.data(), sizeof(double) * static_cast<size_t>(n));
  const bool is_float = dtype == ScalarType::Float32 || dtype == ScalarType::Float16;
  if (!is_float) {
    double lo = 0, hi = 1;  // Bool
    switch (dtype) {
      case ScalarType::Int64:
        std::tie(lo, hi) = std::pair(-0x1p53, 0x1p53);
        break;  // exact in a double
      case ScalarType::Int32:
        std::tie(lo, hi) = std::pair(INT32_MIN, INT32_MAX);
        break;
      case ScalarType::Int8:
        std::tie(lo, hi) = std::pair(INT8_MIN, INT8_MAX);
        break;
      case ScalarType::UInt8:
        std::tie(lo, hi) = std::pair(0, UINT8_MAX);
        break;
      default:
        break;
    }
    for (int64_t i = 0; i < n; ++i) {
      const double v = values[static_cast<size_t>(i)];
      if (!(v >= lo && v <= hi) || v != std::trunc(v)) {
        return Status::error(Error::InvalidArgument,
                             "%s is float64 and its element %lld (%g) is not %s; the input is %s: "
                             "save the array with that dtype (numpy.save(path, "
                             "array.astype(numpy.%s)))",
                             path.c_str(), static_cast<long long>(i), v,
                             dtype == ScalarType::Bool ? "0 or 1" : "a whole number in range",
                             scalar_type_name(dtype), numpy_name(dtype));
      }
    }
  }
  array.dtype = dtype;
  array.data.assign(static_cast<size_t>(n) * element_size(dtype), 0);
  uint8_t* out = array.data.data();
  for (int64_t i = 0; i < n; ++i) {
    const double v = values[static_cast<size_t>(i)];
    switch (dtype) {
      case ScalarType::Float32:
        reinterpret_cast<float*>(out)[i] = static_cast<float>(v);
        break;
      case ScalarType::Float16:
        reinterpret_cast<uint16_t*>(out)[i] = float_to_half(static_cast<float>(v));
        break;
      case ScalarType::Int64:
        reinterpret_cast<int64_t*>(out)[i] = static_cast<int64_t>(v);
        break;
      case ScalarType::Int32:
        reinterpret_cast<int32_t*>(out)[i] = static_cast<int32_t>(v);
        break;
      case ScalarType::Int8:
        reinterpret_cast<int8_t*>(out)[i] = static_cast<int8_t>(v);
        break;
      case ScalarType::UInt8:
      case ScalarType::Bool:
        out[i] = static_cast<uint8_t>(v);
        break;
    }
  }
  *note = path + " is float64; converted to " + scalar_type_name(dtype) +
          (is_float ? " (rounded)" : " (every value is a whole number)") + "; save it as " +
          scalar_type_name(dtype) + " to skip the conversion";
  return array;
}

std::vector<uint8_t> encode_npy(const NpyArray& array) {
  std::string header = "{'descr': '";
  header += npy_descr(array.dtype);
  header += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    header += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size()) header += ",";
    if (i + 1 < array.shape.size()) header += " ";
  }
  header += "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

Status write_npy(const std::string& path, const NpyArray& array) {
  std::vector<uint8_t> bytes = encode_npy(array);
  std::ofstream f(path, std::ios::binary);
  if (!f || !f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<long>(bytes.size()))) {
    return Status::error(Error::AccessFailed, "cannot write '%s'", path.c_str());
  }
  return Status::ok();
}

}  // namespace tessera::tools
