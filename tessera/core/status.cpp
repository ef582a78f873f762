#include "tessera/core/status.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace tessera {

Status::Status(Error code, std::string_view message) : code_(code) {
  size_t n = std::min(message.size(), kMaxMessage - 1);
  std::memcpy(message_, message.data(), n);
  message_[n] = '\0';
}

Status Status::error(Error code, const char* format, ...) {
  Status s(code);
  va_list args;
  va_start(args, format);
  std::vsnprintf(s.message_, kMaxMessage, format, args);  // truncation is intended
  va_end(args);
  return s;
}

Status Status::with_prefix(std::string_view prefix) const {
  Status s(code_);
#if defined(__GNUC__) && !defined(__clang__)  // clang has no -Wformat-truncation
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"  // truncating a long message is intended
#endif
  std::snprintf(s.message_, kMaxMessage, "%.*s: %s", static_cast<int>(prefix.size()),
                prefix.data(), message_);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  return s;
}

const char* error_name(Error error) {
  switch (error) {
    case Error::Ok: return "Ok";
    case Error::Internal: return "Internal";
    case Error::InvalidState: return "InvalidState";
    case Error::EndOfMethod: return "EndOfMethod";
    case Error::NotSupported: return "NotSupported";
    case Error::NotImplemented: return "NotImplemented";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::InvalidType: return "InvalidType";
    case Error::OperatorMissing: return "OperatorMissing";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::ShapeMismatch: return "ShapeMismatch";
    case Error::NotFound: return "NotFound";
    case Error::MemoryAllocationFailed: return "MemoryAllocationFailed";
    case Error::AccessFailed: return "AccessFailed";
    case Error::Truncated: return "Truncated";
    case Error::AlreadyExists: return "AlreadyExists";
    case Error::DelegateInvalidCompatibility: return "DelegateInvalidCompatibility";
    case Error::DelegateMemoryAllocationFailed: return "DelegateMemoryAllocationFailed";
    case Error::DelegateInvalidHandle: return "DelegateInvalidHandle";
    case Error::DelegateUnavailable: return "DelegateUnavailable";
    case Error::DelegateExecutionFailed: return "DelegateExecutionFailed";
    case Error::OptionUnknownBackend: return "OptionUnknownBackend";
    case Error::OptionUnknownKey: return "OptionUnknownKey";
    case Error::OptionTypeMismatch: return "OptionTypeMismatch";
    case Error::OptionOutOfRange: return "OptionOutOfRange";
    case Error::OptionInvalidChoice: return "OptionInvalidChoice";
    case Error::OptionWrongScope: return "OptionWrongScope";
    case Error::OptionTooLong: return "OptionTooLong";
    case Error::OptionParseError: return "OptionParseError";
  }
  return "Unknown";
}

}  // namespace tessera
