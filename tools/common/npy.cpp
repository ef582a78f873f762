#include "tools/common/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

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

Result<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& name) {
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
  if (__builtin_mul_overflow(numel, element_size(out.dtype), &nbytes)) return bad(name, "shape overflows");
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != nbytes) {
    return Status::error(Error::InvalidArgument,
                         "%s: shape needs %llu bytes of data but the file has %zu", name.c_str(),
                         static_cast<unsigned long long>(nbytes), bytes.size() - data_start);
  }
  out.data.assign(bytes.begin() + static_cast<long>(data_start), bytes.end());
  return out;
}

Result<NpyArray> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Error::NotFound, "cannot open '%s'", path.c_str());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
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
