// DelegateInfo: what the runtime did with one delegate at load: which backend runs it, which
// was asked for, why it moved, and its effective options with the scope each came from.
#pragma once

#include <cstddef>

namespace tessera {

class ResolvedOptions;
class DerivedValues;

struct DelegateInfo {
  char id[64] = {};                 // e.g. "xnnpack#0"
  char backend[32] = {};            // the backend that runs it
  char requested_backend[32] = {};  // the backend the program names
  /// Empty when the requested backend runs it; else why it moved (retarget, or each fallback
  /// step with the error that caused it).
  char reason[512] = {};
  /// Effective options of the backend that runs it; in the method allocator.
  const ResolvedOptions* options = nullptr;
  /// The values the backend derived for options left at `auto`, with reasons; in the method
  /// allocator. Never null after a successful load.
  const DerivedValues* derived = nullptr;
  size_t num_nodes = 0;
};

}  // namespace tessera
