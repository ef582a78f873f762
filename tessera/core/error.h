// Error codes, grouped in ranges like ExecuTorch's: system, logical, resource, delegate, option.
#pragma once

#include <cstdint>

namespace tessera {

enum class Error : uint32_t {
  Ok = 0x00,

  // System errors.
  Internal = 0x01,
  InvalidState = 0x02,
  EndOfMethod = 0x03,

  // Logical errors: the caller or the program asked for something invalid.
  NotSupported = 0x10,
  NotImplemented = 0x11,
  InvalidArgument = 0x12,
  InvalidType = 0x13,
  OperatorMissing = 0x14,
  InvalidProgram = 0x15,
  ShapeMismatch = 0x16,

  // Resource errors.
  NotFound = 0x20,
  MemoryAllocationFailed = 0x21,
  AccessFailed = 0x22,
  Truncated = 0x23,
  AlreadyExists = 0x24,

  // Delegate errors.
  DelegateInvalidCompatibility = 0x30,
  DelegateMemoryAllocationFailed = 0x31,
  DelegateInvalidHandle = 0x32,
  DelegateUnavailable = 0x33,
  DelegateExecutionFailed = 0x34,

  // Option errors.
  OptionUnknownBackend = 0x40,
  OptionUnknownKey = 0x41,
  OptionTypeMismatch = 0x42,
  OptionOutOfRange = 0x43,
  OptionInvalidChoice = 0x44,
  OptionWrongScope = 0x45,
  OptionTooLong = 0x46,
  OptionParseError = 0x47,
};

/// Stable name of an error code, e.g. "OptionUnknownKey".
const char* error_name(Error error);

}  // namespace tessera
