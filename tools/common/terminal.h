// Text for a terminal: its width and word wrapping.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera::tools {

/// The width to wrap output at: $COLUMNS if it is a number, else the terminal's width when
/// `fd` is one, else 80. Never below 40.
size_t terminal_width(int fd);

/// Appends `text` to `out` wrapped at `width` columns: the first line continues from column
/// `column`, the others start with `indent` spaces. Breaks at spaces; a word too long for a
/// line is split after a '|' or ',' in it, or failing that where the line ends. No trailing
/// newline.
void append_wrapped(std::string_view text, size_t column, size_t indent, size_t width,
                    std::string* out);

}  // namespace tessera::tools
