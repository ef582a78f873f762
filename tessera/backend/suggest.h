// Did-you-mean suggestions for misspelled option keys and backend names.
#pragma once

#include <cstddef>
#include <string_view>

namespace tessera {

/// Optimal-string-alignment edit distance (insert, delete, substitute, swap adjacent), case
/// sensitive. Strings longer than 64 characters are compared on their first 64. No heap.
size_t edit_distance(std::string_view a, std::string_view b);

/// Incrementally picks the candidate closest to `target`, if close enough to be a plausible typo
/// (distance <= max(1, length/3), at most 3).
class Suggester {
 public:
  explicit Suggester(std::string_view target) : target_(target) {}
  void consider(std::string_view candidate);
  /// The best candidate so far; empty if none is close enough.
  std::string_view best() const { return best_; }

 private:
  std::string_view target_;
  std::string_view best_;
  size_t best_distance_ = static_cast<size_t>(-1);
};

/// Appends `text` to the terminated string in buf[0..size), truncating with "..." if it does not
/// fit. Returns false once truncated.
bool append_text(char* buf, size_t size, std::string_view text);

}  // namespace tessera
