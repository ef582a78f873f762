#include "tessera/backend/graph_payload.h"

#include <flatbuffers/flatbuffers.h>

#include <string>

namespace tessera {

Result<const fb::Graph*> graph_payload(const BackendInitContext& context,
                                       const FreeableBuffer* payload) {
  const std::string_view backend = context.backend_name();
  if (payload == nullptr || payload->data() == nullptr) {
    return Status::error(Error::InvalidArgument, "%.*s: no payload",
                         static_cast<int>(backend.size()), backend.data());
  }
  flatbuffers::Verifier verifier(static_cast<const uint8_t*>(payload->data()), payload->size());
  if (!verifier.VerifyBuffer<fb::Graph>(nullptr)) {
    return Status::error(Error::InvalidProgram, "%.*s: delegate '%.*s': the payload is not a valid graph",
                         static_cast<int>(backend.size()), backend.data(),
                         static_cast<int>(context.delegate_id().size()), context.delegate_id().data());
  }
  return flatbuffers::GetRoot<fb::Graph>(payload->data());
}

Status for_delegate(const BackendInitContext& context, const Status& status) {
  std::string prefix = "delegate '";
  prefix += context.delegate_id();
  prefix += '\'';
  return status.with_prefix(prefix);
}

}  // namespace tessera
