// Internal: the values of a method's symbolic dims at load, from LoadOptions::set_dim and the
// input shapes given with LoadOptions::set_input_shape, checked against the program's bounds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/core/span.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera {
struct LoadOptions;
}  // namespace tessera

namespace tessera::internal {

/// Writes the value of every symbol of `method` into `values` (one per symbol, in order). A
/// symbol takes its set_dim value, else the size of a given input shape in a dim that is that
/// plain symbol, else its only value if its bounds are equal. Then every given input shape is
/// checked against the program's input evaluated with those values. Errors (InvalidArgument
/// unless said): a set_dim name the method lacks; a symbol without a value; a value outside its
/// bounds (naming the input it came from); a set_dim value or an input contradicting another
/// input; NotFound for an input name or index the method lacks; ShapeMismatch for a given shape
/// whose rank or sizes differ from the program's input. Messages name the dim, the values and
/// the inputs concerned.
Status resolve_dims(const fb::Method* method, const LoadOptions& options, Span<int64_t> values);

/// "batch=2, seq=7": the symbols that dims of `value` depend on, with their values; empty if
/// none. Writes into `buf` (always terminated) and returns it.
const char* describe_symbols_of(const fb::Method* method, const fb::Value* value,
                                Span<const int64_t> values, char* buf, size_t size);

}  // namespace tessera::internal
