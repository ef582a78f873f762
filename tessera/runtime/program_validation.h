// Semantic checks of a program's FlatBuffer, beyond what the FlatBuffers verifier covers.
#pragma once

#include <cstdint>

#include "tessera/core/scalar_type.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera::internal {

/// Every method, value, instruction, delegate and payload graph of `program`, against a file of
/// `file_size` bytes whose FlatBuffer occupies the first `fb_end` bytes.
Status validate_program(const fb::Program* program, uint64_t file_size, uint64_t fb_end);

/// A delegate payload graph whose constants index `program`'s constant table.
Status validate_graph(const fb::Graph* graph, const fb::Program* program, const char* where);

/// Bytes of a tensor of `dtype` with `dims`; false on a negative dim, or when the product of its
/// non-zero dims, in bytes, exceeds kMaxArenaBytes (a zero-sized tensor too: kernels compute
/// strides over every dim, and those must not overflow). The loader's bound on every tensor,
/// which the compiler applies to what it builds.
bool bounded_nbytes(ScalarType dtype, Span<const int64_t> dims, uint64_t* out);

/// bounded_nbytes of a tensor value at its dims' stored upper bounds; false on a bad dtype too.
bool tensor_max_nbytes(const fb::Value* value, uint64_t* out);

}  // namespace tessera::internal
