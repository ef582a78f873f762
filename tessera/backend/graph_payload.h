// What a backend's init does first with a delegate compiled from the portable IR: check that the
// payload is there and is an fb::Graph FlatBuffer, and name the delegate in build errors.
#pragma once

#include "tessera/backend/context.h"
#include "tessera/backend/freeable_buffer.h"
#include "tessera/core/result.h"
#include "tessera/core/status.h"
#include "tessera/ir/schema.h"

namespace tessera {

/// The payload as a verified graph. Errors: InvalidArgument ("<backend>: no payload"),
/// InvalidProgram ("<backend>: delegate '<id>': the payload is not a valid graph").
Result<const fb::Graph*> graph_payload(const BackendInitContext& context,
                                       const FreeableBuffer* payload);

/// `status` prefixed with "delegate '<id>'", for errors of a backend's graph builder.
Status for_delegate(const BackendInitContext& context, const Status& status);

}  // namespace tessera
