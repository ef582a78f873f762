// Fuzz target: the .npy reader of the tools (tools/common/npy.h): header dict, dtype, shape and
// data size checks. What parses is encoded again and must parse back to the same array.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tools/common/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  tessera::Result<tessera::tools::NpyArray> array = tessera::tools::parse_npy(bytes, "input.npy");
  if (!array.ok()) return 0;
  if (static_cast<size_t>(array->numel()) * tessera::element_size(array->dtype) !=
      array->data.size()) {
    std::abort();  // parse_npy promised numel * element_size bytes
  }
  const std::vector<uint8_t> encoded = tessera::tools::encode_npy(*array);
  tessera::Result<tessera::tools::NpyArray> again =
      tessera::tools::parse_npy(encoded, "encoded.npy");
  if (!again.ok() || again->dtype != array->dtype || again->shape != array->shape ||
      again->data != array->data) {
    std::abort();  // what the writer writes, the reader must read back
  }
  return 0;
}
