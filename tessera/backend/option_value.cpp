#include "tessera/backend/option_value.h"

#include <cinttypes>
#include <cstdio>

namespace tessera {

const char* option_type_name(OptionType type) {
  switch (type) {
    case OptionType::Bool:
      return "bool";
    case OptionType::Int:
      return "int";
    case OptionType::Double:
      return "double";
    case OptionType::String:
      return "string";
    case OptionType::Enum:
      return "enum";
  }
  return "?";
}

Status BackendOption::set_key(std::string_view key) {
  if (key.empty()) return Status(Error::InvalidArgument, "option key is empty");
  if (key.size() > kMaxNameLength) {
    return Status::error(Error::OptionTooLong,
                         "option key '%.40s...' has %zu characters; at most %zu allowed",
                         key.data(), key.size(), kMaxNameLength);
  }
  std::memcpy(key_, key.data(), key.size());
  key_[key.size()] = '\0';
  key_length_ = static_cast<uint8_t>(key.size());
  key_hash_ = hash_option_key(key);
  return Status::ok();
}

void BackendOption::set_bool(bool value) {
  type_ = OptionType::Bool;
  scalar_.i = 0;
  scalar_.b = value;
  string_length_ = 0;
  string_[0] = '\0';
}

void BackendOption::set_int(int64_t value) {
  type_ = OptionType::Int;
  scalar_.i = value;
  string_length_ = 0;
  string_[0] = '\0';
}

void BackendOption::set_double(double value) {
  type_ = OptionType::Double;
  scalar_.d = value;
  string_length_ = 0;
  string_[0] = '\0';
}

Status BackendOption::set_string(std::string_view value) {
  if (value.size() > kMaxOptionStringLength) {
    return Status::error(Error::OptionTooLong,
                         "option '%s': string value has %zu characters; at most %zu allowed", key_,
                         value.size(), kMaxOptionStringLength);
  }
  type_ = OptionType::String;
  scalar_.i = 0;
  std::memcpy(string_, value.data(), value.size());
  string_[value.size()] = '\0';
  string_length_ = static_cast<uint16_t>(value.size());
  return Status::ok();
}

Status BackendOption::set_enum(std::string_view choice, int index) {
  if (choice.size() > kMaxOptionStringLength) {
    return Status::error(Error::OptionTooLong,
                         "option '%s': enum choice has %zu characters; at most %zu allowed", key_,
                         choice.size(), kMaxOptionStringLength);
  }
  type_ = OptionType::Enum;
  scalar_.i = 0;
  scalar_.enum_index = index;
  std::memcpy(string_, choice.data(), choice.size());
  string_[choice.size()] = '\0';
  string_length_ = static_cast<uint16_t>(choice.size());
  return Status::ok();
}

Status BackendOption::set_origin(std::string_view origin) {
  if (origin.size() > kMaxOptionOriginLength) {
    return Status::error(Error::OptionTooLong,
                         "option '%s': origin '%.*s...' has %zu characters; at most %zu allowed",
                         key_, 40, origin.data(), origin.size(), kMaxOptionOriginLength);
  }
  if (!origin.empty()) std::memcpy(origin_, origin.data(), origin.size());
  origin_[origin.size()] = '\0';
  return Status::ok();
}

bool BackendOption::same_value(const BackendOption& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case OptionType::Bool:
      return scalar_.b == other.scalar_.b;
    case OptionType::Int:
      return scalar_.i == other.scalar_.i;
    case OptionType::Double:
      return scalar_.d == other.scalar_.d;
    case OptionType::String:
    case OptionType::Enum:
      return as_string() == other.as_string();
  }
  return false;
}

const char* BackendOption::format_value(char* buf, size_t size) const {
  if (size == 0) return buf;
  switch (type_) {
    case OptionType::Bool:
      std::snprintf(buf, size, "%s", scalar_.b ? "true" : "false");
      break;
    case OptionType::Int:
      std::snprintf(buf, size, "%" PRId64, scalar_.i);
      break;
    case OptionType::Double:
      std::snprintf(buf, size, "%g", scalar_.d);
      break;
    case OptionType::String:
      std::snprintf(buf, size, "\"%s\"", string_);
      break;
    case OptionType::Enum:
      std::snprintf(buf, size, "%s", string_);
      break;
  }
  return buf;
}

Status BackendOption::type_mismatch(OptionType wanted) const {
  return Status::error(Error::OptionTypeMismatch, "option '%s' holds %s, not %s", key_,
                       option_type_name(type_), option_type_name(wanted));
}

}  // namespace tessera
