#include "tessera/backend/context.h"

#include <cstdarg>
#include <cstdio>

#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/suggest.h"

namespace tessera {

Result<int64_t> BackendInitContext::symbol_value(std::string_view name) const {
  for (const SymbolValue& s : params_.symbols) {
    if (s.name == name) return s.value;
  }
  Suggester suggester(name);
  char known[128] = {};
  for (size_t i = 0; i < params_.symbols.size(); ++i) {
    suggester.consider(params_.symbols[i].name);
    if (i > 0) append_text(known, sizeof known, ", ");
    append_text(known, sizeof known, params_.symbols[i].name);
  }
  if (params_.symbols.empty()) append_text(known, sizeof known, "none");
  char hint[96] = {};
  if (!suggester.best().empty()) {
    std::snprintf(hint, sizeof hint, "did you mean '%.*s'?; ",
                  static_cast<int>(suggester.best().size()), suggester.best().data());
  }
  return Status::error(Error::NotFound, "%.*s: no symbolic dim '%.*s' (%sknown: %s)",
                       static_cast<int>(delegate_id().size()), delegate_id().data(),
                       static_cast<int>(name.size()), name.data(), hint, known);
}

Result<Span<const uint8_t>> BackendInitContext::constant(uint32_t index) const {
  if (params_.constants.fn == nullptr) {
    return Status::error(Error::NotSupported, "%.*s: the runtime provided no constant data",
                         static_cast<int>(delegate_id().size()), delegate_id().data());
  }
  return params_.constants.fn(params_.constants.context, index);
}

void BackendInitContext::release_constant(uint32_t index) const {
  if (params_.constants.release != nullptr) {
    params_.constants.release(params_.constants.context, index);
  }
}

const PolicyDecision& BackendInitContext::policy() const {
  if (params_.policy != nullptr) return *params_.policy;
  // No runtime decision (a backend driven directly, as in unit tests): the default policy on
  // this context's machine as it was detected, without a load sample.
  if (!has_fallback_policy_) {
    fallback_policy_ = decide_policy(default_policy(), device_info());
    has_fallback_policy_ = true;
  }
  return fallback_policy_;
}

bool BackendInitContext::is_default(std::string_view key) const {
  const int i = params_.options->find(key);
  return i < 0 || params_.options->source(static_cast<size_t>(i)) == OptionLevel::Default;
}

void BackendInitContext::report_derived(std::string_view key, std::string_view value,
                                        const char* reason_fmt, ...) const {
  if (params_.derived == nullptr) return;
  char reason[192];
  va_list args;
  va_start(args, reason_fmt);
  std::vsnprintf(reason, sizeof reason, reason_fmt, args);
  va_end(args);
  params_.derived->set(key, value, reason);
}

const DeviceInfo& BackendInitContext::device_info() const {
  return params_.device_info != nullptr ? *params_.device_info : DeviceInfo::get();
}

Status BackendInitContext::mark_backend_initialized(std::string_view reason) const {
  char text[160];
  if (reason.empty()) {
    std::snprintf(text, sizeof text, "first delegate load: method '%.*s', delegate '%.*s'",
                  static_cast<int>(method_name().size()), method_name().data(),
                  static_cast<int>(delegate_id().size()), delegate_id().data());
    reason = text;
  }
  return tessera::mark_backend_initialized(backend_name(), reason, params_.options);
}

OptionLevel BackendExecutionContext::source(std::string_view key) const {
  if (execute_.find(key, hash_option_key(key)) != nullptr) return OptionLevel::Execute;
  int i = resolved_->find(key);
  return i < 0 ? OptionLevel::Default : resolved_->source(static_cast<size_t>(i));
}

void BackendExecutionContext::record_event(const char* name, double ms) {
  const double dur_us = ms * 1000.0;
  const double start_us = Trace::now_us() - dur_us;
  if (profile_ != nullptr) profile_->add(name, ms, start_us, delegate_id_);
  if (Trace::running()) {
    char detail[80];
    std::snprintf(detail, sizeof detail, "delegate=%s", delegate_id_ ? delegate_id_ : "?");
    Trace::record("operator", name ? name : "", start_us, dur_us, detail);
  }
}

}  // namespace tessera
