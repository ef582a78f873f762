// Linked against libtessera, backend libraries through their Tessera::<name> targets and a static
// backend archive, with --as-needed (CMakeLists.txt): every linked backend must be registered,
// and no other. argv[1..]: the expected names.
#include <cstdio>
#include <string>
#include <vector>

#include "tessera/backend/registry.h"

int main(int argc, char** argv) {
  std::vector<std::string> expected(argv + 1, argv + argc);
  std::vector<std::string> registered = tessera::registered_backends();
  std::string text;
  for (const std::string& name : registered) text += (text.empty() ? "" : ",") + name;
  std::printf("registered: %s\n", text.c_str());
  if (registered != expected) {
    std::string want;
    for (const std::string& name : expected) want += (want.empty() ? "" : ",") + name;
    std::fprintf(stderr, "expected: %s\n", want.c_str());
    return 1;
  }
  return 0;
}
