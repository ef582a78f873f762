// Must NOT compile when TESSERA_EXPECT_COMPILE_ERROR is defined: a schema entry written with a
// string key (the key string would be written twice), or built from a key of another type.
// The build registers the control (no macro, compiles) and one test per error case.
#include <cstdint>

#include "tessera/backend/option_schema.h"

namespace {
constexpr tessera::OptionKey<int64_t> kNumThreads{"num_threads"};
constexpr tessera::OptionKey<bool> kProfile{"profile"};

using tessera::OptionSpec;
constexpr OptionSpec kSchema[] = {
#if defined(TESSERA_EXPECT_COMPILE_ERROR) && TESSERA_EXPECT_COMPILE_ERROR == 1
    // error: no conversion from a string literal to OptionKey<int64_t> (explicit constructor)
    OptionSpec::integer("num_threads", 0, 0, 8, tessera::kInitScopes, "threads"),
#elif defined(TESSERA_EXPECT_COMPILE_ERROR) && TESSERA_EXPECT_COMPILE_ERROR == 2
    // error: an int key given to the bool factory
    OptionSpec::boolean(kNumThreads, false, tessera::kInitScopes, "threads"),
#else
    OptionSpec::integer(kNumThreads, 0, 0, 8, tessera::kInitScopes, "threads"),
#endif
    OptionSpec::boolean(kProfile, false, tessera::OptionLevel::Execute, "profile"),
};
}  // namespace

tessera::Span<const OptionSpec> schema() {
  return kSchema;
}
