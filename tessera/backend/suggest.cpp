#include "tessera/backend/suggest.h"

#include <algorithm>
#include <cstring>

namespace tessera {

size_t edit_distance(std::string_view a, std::string_view b) {
  constexpr size_t kMax = 64;
  a = a.substr(0, std::min(a.size(), kMax));
  b = b.substr(0, std::min(b.size(), kMax));
  // Three rolling rows of the DP table: i-2, i-1, i.
  size_t rows[3][kMax + 1];
  size_t* two_back = rows[0];
  size_t* prev = rows[1];
  size_t* cur = rows[2];
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        best = std::min(best, two_back[j - 2] + 1);
      }
      cur[j] = best;
    }
    size_t* recycled = two_back;
    two_back = prev;
    prev = cur;
    cur = recycled;
  }
  return prev[b.size()];
}

void Suggester::consider(std::string_view candidate) {
  size_t limit = std::min<size_t>(3, std::max<size_t>(1, target_.size() / 3));
  size_t d = edit_distance(target_, candidate);
  if (d <= limit && d < best_distance_) {
    best_ = candidate;
    best_distance_ = d;
  }
}

bool append_text(char* buf, size_t size, std::string_view text) {
  if (size == 0) return false;
  size_t used = std::strlen(buf);
  if (used + text.size() < size) {
    std::memcpy(buf + used, text.data(), text.size());
    buf[used + text.size()] = '\0';
    return true;
  }
  // Truncate, ending with "..." when there is room for it.
  size_t room = size - 1 - used;
  size_t keep = room >= 3 ? room - 3 : 0;
  std::memcpy(buf + used, text.data(), std::min(keep, text.size()));
  size_t end = used + std::min(keep, text.size());
  for (size_t k = 0; k < 3 && end < size - 1; ++k) buf[end++] = '.';
  buf[end] = '\0';
  return false;
}

}  // namespace tessera
