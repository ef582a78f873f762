// How the bindings report failure: every tessera::Status that is not OK becomes a Python
// exception of the tessera.Error subclass for its code's family (see tessera/_errors.py), with
// the runtime's code and message unchanged.
#pragma once

#include <exception>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera::python {

/// Carries a Status out of binding code; the translator registered by register_errors() turns
/// it into the Python exception.
class StatusError : public std::exception {
 public:
  /// `family` names the tessera.Error subclass to raise instead of the one for the code (for
  /// an error whose code is generic but whose cause is known, such as an input shape outside
  /// the compiled bounds); null: by code. Must be a string literal.
  explicit StatusError(const Status& status, const char* family = nullptr)
      : status_(status), family_(family) {}
  const Status& status() const { return status_; }
  const char* family() const { return family_; }
  const char* what() const noexcept override { return status_.message(); }

 private:
  Status status_;
  const char* family_;
};

/// Throws StatusError unless `status` is OK.
inline void check(const Status& status) {
  if (!status.is_ok()) throw StatusError(status);
}

/// The value of `result`, or throws its error.
template <typename T>
T take(Result<T>&& result) {
  if (!result.ok()) throw StatusError(result.status());
  return std::move(result).value();
}

/// Installs the exception translator; call once from the module initialiser.
void register_errors();

}  // namespace tessera::python
