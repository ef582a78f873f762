#include "tessera/backend/interface.h"

namespace tessera {

BackendInterface::~BackendInterface() = default;

const char* BackendInterface::unavailable_reason() const { return ""; }

const char* BackendInterface::derivation_doc() const {
  return "";
}

const char* BackendInterface::build_id() const {
  return "";
}

Span<const SelectionVariant> BackendInterface::selection_variants() const {
  return {};
}

bool BackendInterface::variant_changes(const DelegateHandle*, std::string_view,
                                       std::string_view) const {
  return true;
}

Span<const OptionSpec> BackendInterface::option_schema() const {
  return {};
}

bool BackendInterface::supports_op(const OpView&) const {
  return false;
}

std::string BackendInterface::unsupported_reason(const OpView& op) const {
  return supports_op(op) ? std::string() : std::string("not supported");
}

Result<Payload> BackendInterface::preprocess(const SubgraphView&, Span<const CompileSpec>) const {
  return Status(Error::NotSupported,
                "backend has no preprocess of its own; store the portable graph IR instead");
}

Result<bool> BackendInterface::init_would_be_cold(const BackendInitContext&, const FreeableBuffer&,
                                                  Span<const CompileSpec>) const {
  return false;
}

void BackendInterface::destroy(DelegateHandle*) const {}

bool BackendInterface::uses_cpu_thread_pool() const {
  return false;
}

bool BackendInterface::runs_on_calling_thread() const {
  return false;
}

bool BackendInterface::init_beside_other_backends() const {
  return false;
}

void BackendInterface::park_idle_workers() const {}

Status BackendInterface::set_option(BackendOptionContext&, Span<const BackendOption>) {
  return Status::ok();
}

Status BackendInterface::get_option(BackendOptionContext&, Span<BackendOption>) {
  return Status::ok();
}

}  // namespace tessera
