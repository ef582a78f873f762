// Selections timed by wall time alone, for tests whose stub backends sleep to be slow.
#pragma once

#include <chrono>

#include "tessera/runtime/delegate_runner.h"

namespace tessera::testing {

/// While it lives, selections are timed without the thread's CPU clock, so no run counts as
/// disturbed (RunTimer): a sleeping stub is off its CPU for the whole run, and the jitter of its
/// wake-up on a loaded machine would otherwise add timed runs the test does not expect.
class WallClockOnlySelection {
 public:
  WallClockOnlySelection() { internal::set_selection_clocks({&wall_ms, nullptr}); }
  ~WallClockOnlySelection() { internal::set_selection_clocks({}); }
  WallClockOnlySelection(const WallClockOnlySelection&) = delete;
  WallClockOnlySelection& operator=(const WallClockOnlySelection&) = delete;

  /// The wall clock it times with (steady_clock, in ms), for a test that sets other clocks
  /// beside it for a while.
  static double wall_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace tessera::testing
