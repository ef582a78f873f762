#include "tessera/backend/resolved_options.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tessera/backend/suggest.h"

namespace tessera {

const char* format_option_source(OptionLevel source, std::string_view origin, char* buf,
                                 size_t size) {
  if (size == 0) return buf;
  if (origin.empty()) {
    std::snprintf(buf, size, "%s", option_level_name(source));
  } else {
    std::snprintf(buf, size, "%s (%.*s)", option_level_name(source),
                  static_cast<int>(origin.size()), origin.data());
  }
  return buf;
}

Status ResolvedOptions::reset(std::string_view backend, std::string_view delegate_id,
                              Span<const OptionSpec> schema) {
  if (schema.size() > kCapacity) {
    return Status::error(
        Error::InvalidArgument, "%.*s: schema has %zu options; ResolvedOptions holds at most %zu",
        static_cast<int>(backend.size()), backend.data(), schema.size(), kCapacity);
  }
  schema_ = schema;
  size_ = schema.size();
  backend_length_ = std::min(backend.size(), sizeof backend_ - 1);
  std::memcpy(backend_, backend.data(), backend_length_);
  backend_[backend_length_] = '\0';
  delegate_id_length_ = std::min(delegate_id.size(), sizeof delegate_id_ - 1);
  std::memcpy(delegate_id_, delegate_id.data(), delegate_id_length_);
  delegate_id_[delegate_id_length_] = '\0';
  std::memset(table_, 0, sizeof table_);
  for (size_t i = 0; i < size_; ++i) {
    options_[i] = schema[i].default_option();
    hashes_[i] = schema[i].key_hash;
    sources_[i] = OptionLevel::Default;
    size_t slot = hashes_[i] & (kTableSize - 1);
    while (table_[slot] != 0) slot = (slot + 1) & (kTableSize - 1);
    table_[slot] = static_cast<uint8_t>(i + 1);
  }
  return Status::ok();
}

void ResolvedOptions::assign(size_t index, const BackendOption& value, OptionLevel source) {
  options_[index] = value;
  if (value.type() == OptionType::Enum) {
    (void)options_[index].set_enum(value.as_string(),
                                   schema_[index].choice_index(value.as_string()));
  }
  sources_[index] = source;
}

Status ResolvedOptions::not_found(std::string_view key) const {
  Suggester suggester(key);
  for (size_t i = 0; i < size_; ++i) suggester.consider(options_[i].key());
  char hint[96] = {};
  if (!suggester.best().empty()) {
    std::snprintf(hint, sizeof hint, " (did you mean '%.*s'?)",
                  static_cast<int>(suggester.best().size()), suggester.best().data());
  }
  return Status::error(Error::NotFound, "%s: the schema has no option '%.*s'%s", backend_,
                       static_cast<int>(std::min<size_t>(key.size(), 64)), key.data(), hint);
}

Status ResolvedOptions::type_mismatch(size_t index, OptionType wanted) const {
  return Status::error(Error::OptionTypeMismatch, "%s: option '%s' is %s, not %s", backend_,
                       options_[index].key_c_str(), option_type_name(options_[index].type()),
                       option_type_name(wanted));
}

Result<bool> ResolvedOptions::get_bool(std::string_view key) const {
  return get_by_name<bool>(key);
}
Result<int64_t> ResolvedOptions::get_int(std::string_view key) const {
  return get_by_name<int64_t>(key);
}
Result<double> ResolvedOptions::get_double(std::string_view key) const {
  return get_by_name<double>(key);
}
Result<std::string_view> ResolvedOptions::get_string(std::string_view key) const {
  return get_by_name<std::string_view>(key);
}
Result<EnumValue> ResolvedOptions::get_enum(std::string_view key) const {
  return get_by_name<EnumValue>(key);
}

}  // namespace tessera
