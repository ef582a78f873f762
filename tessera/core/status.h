// Status: an Error code plus a human-readable message held inline (no heap).
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "tessera/core/error.h"

namespace tessera {

class [[nodiscard]] Status {
 public:
  static constexpr size_t kMaxMessage = 240;

  /// An OK status.
  constexpr Status() : code_(Error::Ok) { message_[0] = '\0'; }
  /// A status with a code and no message.
  explicit Status(Error code) : code_(code) { message_[0] = '\0'; }
  Status(Error code, std::string_view message);

  /// printf-style factory: Status::error(Error::InvalidArgument, "bad value %d", v).
  [[gnu::format(printf, 2, 3)]] static Status error(Error code, const char* format, ...);

  static constexpr Status ok() { return Status(); }

  bool is_ok() const { return code_ == Error::Ok; }
  Error code() const { return code_; }
  /// The message; empty for OK. Owned by this Status.
  const char* message() const { return message_; }

  /// Returns a copy whose message is "prefix: <message>" (truncated to fit).
  Status with_prefix(std::string_view prefix) const;

  bool operator==(const Status& other) const {
    return code_ == other.code_ && std::strcmp(message_, other.message_) == 0;
  }

 private:
  Error code_;
  char message_[kMaxMessage];  // only the terminated prefix is meaningful
};

}  // namespace tessera

/// Returns from the enclosing function if `expr` (a Status) is not OK.
#define TESSERA_RETURN_IF_ERROR(expr)                     \
  do {                                                    \
    ::tessera::Status tessera_status_tmp_ = (expr);       \
    if (!tessera_status_tmp_.is_ok()) {                   \
      return tessera_status_tmp_;                         \
    }                                                     \
  } while (false)

#define TESSERA_CONCAT_INNER_(a, b) a##b
#define TESSERA_CONCAT_(a, b) TESSERA_CONCAT_INNER_(a, b)

/// `TESSERA_ASSIGN_OR_RETURN(auto x, make_x());` assigns the value of a Result or returns its error.
#define TESSERA_ASSIGN_OR_RETURN(lhs, expr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL_(TESSERA_CONCAT_(tessera_result_, __LINE__), lhs, expr)

#define TESSERA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) {                                     \
    return tmp.status();                               \
  }                                                    \
  lhs = std::move(tmp).value()
