// The on-disk cache of Winograd-transformed convolution weights (the `cache_dir` option).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "tessera/backends/onednn/delegate.h"
#include "tessera/backends/onednn/graph_builder.h"

namespace tessera::onednn {

/// Fills `to` (a Winograd weight layout) from the plain weights `from`: read from
/// `options.cache_dir` when a valid entry exists (cache_read), else transformed by a oneDNN
/// reorder on `delegate.stream` (reorder_at_init, its scratchpad in `*scratch`) and written
/// back (cache_write, trimmed to cache_max_bytes). Counts in `delegate` (winograd_convs must
/// already count this convolution). Cache problems are logged warnings, never errors: the
/// transform is always the fallback.
void transform_winograd_weights_cached(const BuildOptions& options, Delegate& delegate,
                                       dnnl::memory from, dnnl::memory to, LargeBuffer* scratch);

}  // namespace tessera::onednn
