// Fuzz target: the selection cache's payload reader (decode_selection), which runs on whatever
// a cache entry holds once its integrity header checks pass (those checks are fuzzed by
// cache_files). Anything it accepts must survive a round trip: encoded again and decoded, the
// same backend is chosen and the same candidates come back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/runtime/delegate_info.h"
#include "tessera/runtime/selection_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  SelectionReport report;
  Result<std::string> chosen = internal::decode_selection(data, size, &report);
  if (!chosen.ok()) return 0;
  internal::SelectionKey key;
  key.add("fuzz", "round trip");
  const std::vector<uint8_t> again = internal::encode_selection(key, report);
  SelectionReport second;
  Result<std::string> chosen_again =
      internal::decode_selection(again.data(), again.size(), &second);
  if (!chosen_again.ok() || *chosen_again != *chosen ||
      second.num_candidates != report.num_candidates) {
    std::abort();
  }
  for (size_t i = 0; i < report.num_candidates; ++i) {
    if (std::strcmp(second.candidates[i].backend, report.candidates[i].backend) != 0 ||
        second.candidates[i].chosen != report.candidates[i].chosen) {
      std::abort();
    }
  }
  return 0;
}
