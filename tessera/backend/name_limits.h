// The longest names the options system stores (option keys, delegate ids, backend names), each in
// fixed storage of that length plus a terminator.
#pragma once

#include <cstddef>

namespace tessera {

/// Longest option key or delegate id ("<backend>#<index>"): every name an option list is kept
/// under or keyed by, except a backend name.
inline constexpr size_t kMaxNameLength = 63;

/// Longest backend name. Shorter than kMaxNameLength because a backend name is the first part of
/// its delegate ids: "<backend>#<index>" must fit kMaxNameLength for any index.
inline constexpr size_t kMaxBackendNameLength = 31;
static_assert(kMaxBackendNameLength + sizeof("#18446744073709551615") - 1 <= kMaxNameLength,
              "a delegate id of the longest backend name and any index fits kMaxNameLength");

}  // namespace tessera
