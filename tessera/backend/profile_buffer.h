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
  /// When it started, on Trace::now_us()'s clock (microseconds; from the running trace's
  /// start, else from the steady clock's epoch); 0 when the reporter gave none.
  double start_us;
  /// The delegate that reported it ("xnnpack#0"), borrowed from the Method (valid while it
  /// lives); null when unknown.
  const char* delegate;
};

class ProfileBuffer {
 public:
  /// `storage` is borrowed and must outlive the buffer.
  explicit ProfileBuffer(Span<ProfileEvent> storage) : storage_(storage) {}

  /// Records an event; once the storage is full, counts it in dropped() instead.
  void add(const char* name, double ms, double start_us = 0, const char* delegate = nullptr) {
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
    e.start_us = start_us;
    e.delegate = delegate;
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
