// BackendTargets from the backend registry: supports_op, preprocess and compile-spec checks of
// each registered backend, as the compiler wants them.
#pragma once

#include <string>
#include <vector>

#include "tessera/compiler/compiler.h"
#include "tessera/core/result.h"

namespace tessera::compiler {

/// Targets for the backends named in `names`, in that order. "portable" is implicit and ends
/// the list (names after it are ignored). With `names` empty: every registered backend except
/// "portable" and "opencl" (a run-time device choice: name it, or retarget at load), sorted by
/// name. Errors: NotFound for a name that is not registered (listing the
/// registered ones, with a suggestion).
///
/// supports_op is asked with an OpView whose node and graph are FlatBuffers (`const fb::Node*`,
/// `const fb::Graph*`) of the encoded method graph, the same form a backend sees at load time.
Result<std::vector<BackendTarget>> registry_backend_targets(const std::vector<std::string>& names);

}  // namespace tessera::compiler
