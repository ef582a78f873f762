// OnExecuteFailure: what Method::execute does when a delegate's backend fails while running
// (LoadOptions::on_execute_failure).
#pragma once

#include <cstdint>
#include <string_view>

#include "tessera/core/result.h"

namespace tessera {

enum class OnExecuteFailure : uint8_t {
  /// The error goes to the caller (naming the instruction, delegate and backend); the delegate
  /// stays on its backend and the next execute tries it again.
  Fail,
  /// The delegate is re-initialised on the next backend of the load's fallback chain that is
  /// available and supports its ops, and the delegate is run again, once, in the same call. The
  /// move is reported in DelegateInfo (execute_fallbacks, execute_fallback_reason, reason). When
  /// no backend is left, or the retry fails too, the caller gets the error.
  Fallback,
};

/// "fail", "fallback".
const char* on_execute_failure_name(OnExecuteFailure value);
/// Parses "fail" or "fallback"; InvalidArgument naming both otherwise.
Result<OnExecuteFailure> parse_on_execute_failure(std::string_view name);

}  // namespace tessera
