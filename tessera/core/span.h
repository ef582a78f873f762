// Span<T>: a non-owning view of contiguous elements. Pass by value; the viewed memory must
// outlive the span.
#pragma once

#include <span>

namespace tessera {

template <typename T>
using Span = std::span<T>;

}  // namespace tessera
