// string_format: printf into a std::string of the exact length, for load-time and tool text
// (never the execute path: it allocates).
#pragma once

#include <string>

namespace tessera {

/// The printf-formatted text of `fmt` and its arguments, whole (no truncation).
std::string string_format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tessera
