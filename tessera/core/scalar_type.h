// Element types a tensor may hold.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera {

// Values match schema/program.fbs's ScalarType.
enum class ScalarType : uint8_t {
  Float32 = 0,
  Float16 = 1,
  Int64 = 2,
  Int32 = 3,
  Int8 = 4,
  UInt8 = 5,
  Bool = 6,
};

inline constexpr int kNumScalarTypes = 7;

/// Size in bytes of one element.
constexpr size_t element_size(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return 4;
    case ScalarType::Float16: return 2;
    case ScalarType::Int64: return 8;
    case ScalarType::Int32: return 4;
    case ScalarType::Int8: return 1;
    case ScalarType::UInt8: return 1;
    case ScalarType::Bool: return 1;
  }
  return 0;
}

/// Lower-case name: "float32", "int64", ...
const char* scalar_type_name(ScalarType t);

/// True if `v` is one of the enumerators.
constexpr bool is_valid_scalar_type(int v) { return v >= 0 && v < kNumScalarTypes; }

/// IEEE half <-> float conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace tessera
