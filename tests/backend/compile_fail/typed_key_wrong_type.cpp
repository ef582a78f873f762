// Must NOT compile when TESSERA_EXPECT_COMPILE_ERROR is defined: a string set on an int key.
// The build registers two tests: this file without the macro compiles, with it fails.
#include <cstdint>

#include "tessera/backend/options.h"

namespace {
constexpr tessera::OptionKey<int64_t> kNumThreads{"num_threads"};
}  // namespace

tessera::Status configure(tessera::BackendOptions<4>& opts) {
#ifdef TESSERA_EXPECT_COMPILE_ERROR
  return opts.set(kNumThreads, "four");  // error: no matching 'set' (constraint not satisfied)
#else
  return opts.set(kNumThreads, 4);
#endif
}
