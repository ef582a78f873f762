// ProfileBuffer: where backends report timed events during execute. The caller owns the
// storage; recording never allocates.
#pragma once

#include <cstddef>
#include <cstring>

#include "tessera/core/span.h"

namespace tessera {

struct ProfileEvent {
  char name[48];  // copied, truncated to 47 characters
  double ms;
};

class ProfileBuffer {
 public:
  /// `storage` is borrowed and must outlive the buffer.
  explicit ProfileBuffer(Span<ProfileEvent> storage) : storage_(storage) {}

  /// Records an event; once the storage is full, counts it in dropped() instead.
  void add(const char* name, double ms) {
    if (size_ == storage_.size()) {
      ++dropped_;
      return;
    }
    ProfileEvent& e = storage_[size_++];
    size_t n = name ? std::strlen(name) : 0;
    if (n > sizeof e.name - 1) n = sizeof e.name - 1;
    if (n) std::memcpy(e.name, name, n);
    e.name[n] = '\0';
    e.ms = ms;
  }

  Span<const ProfileEvent> events() const { return {storage_.data(), size_}; }
  size_t dropped() const { return dropped_; }
  void clear() {
    size_ = 0;
    dropped_ = 0;
  }

 private:
  Span<ProfileEvent> storage_;
  size_t size_ = 0;
  size_t dropped_ = 0;
};

}  // namespace tessera
