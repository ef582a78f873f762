// The command line of the generators of checked-in docs (gen-options-doc, gen-ops-doc): with no
// argument print the document, `--check FILE` fails when FILE differs from it, `--write FILE`
// writes it, `--version` prints the version when the tool has one.
#pragma once

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::tools {

/// `generate` builds the document; `source` says what it is generated from (for the stale
/// message); `version` is null for a tool without --version. Returns the exit status.
template <typename Generate>
int generated_doc_main(int argc, char** argv, const char* tool, const char* source,
                       const char* version, Generate generate) {
  if (version != nullptr && argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s %s\n", tool, version);
    return 0;
  }
  const std::string doc = generate();
  if (argc == 1) {
    std::fputs(doc.c_str(), stdout);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--check") == 0) {
    std::ifstream f(argv[2]);
    std::stringstream have;
    have << f.rdbuf();
    if (!f || have.str() != doc) {
      std::fprintf(stderr, "%s is out of date with %s; regenerate it with %s --write %s\n", argv[2],
                   source, tool, argv[2]);
      return 1;
    }
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--write") == 0) {
    std::ofstream f(argv[2]);
    f << doc;
    return f ? 0 : 1;
  }
  std::fprintf(stderr, "%s: unexpected argument '%s'\nusage: %s [--check FILE | --write FILE%s]\n",
               tool, argv[1], tool, version != nullptr ? " | --version" : "");
  return 2;
}

}  // namespace tessera::tools
