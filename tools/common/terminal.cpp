#include "tools/common/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace tessera::tools {

size_t terminal_width(int fd) {
  constexpr size_t kMin = 40, kDefault = 80;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && *columns != '\0') {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (*end == '\0' && n > 0) return std::max(static_cast<size_t>(n), kMin);
  }
  winsize size{};
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    return std::max(static_cast<size_t>(size.ws_col), kMin);
  }
  return kDefault;
}

void append_wrapped(std::string_view text, size_t column, size_t indent, size_t width,
                    std::string* out) {
  size_t col = column;
  bool line_empty = true;  // nothing written on this line yet
  auto new_line = [&] {
    *out += '\n';
    out->append(indent, ' ');
    col = indent;
    line_empty = true;
  };
  while (!text.empty()) {
    const size_t space = text.find(' ');
    std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    while (!word.empty()) {
      const size_t need = (line_empty ? 0 : 1) + word.size();
      if (col + need <= width) {
        if (!line_empty) *out += ' ';
        *out += word;
        col += need;
        line_empty = false;
        break;
      }
      if (!line_empty) {
        new_line();
        continue;
      }
      // Longer than a whole line: split it, after a '|' or ',' if there is one in reach.
      const size_t room = width > col ? width - col : 1;
      size_t cut = std::min(room, word.size());
      const size_t mark = word.substr(0, cut).find_last_of("|,");
      if (mark != std::string_view::npos && mark > 0) cut = mark + 1;
      *out += word.substr(0, cut);
      col += cut;
      line_empty = false;
      word.remove_prefix(cut);
      if (!word.empty()) new_line();
    }
  }
}

}  // namespace tessera::tools
