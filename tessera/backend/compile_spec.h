// CompileSpec: an option the model author baked into the program for one delegate (AOT).
#pragma once

namespace tessera {

/// A key/value pair of strings, parsed against the backend's schema at load. Both strings are
/// borrowed (normally from the program file) and must outlive the call they are passed to.
struct CompileSpec {
  const char* key;
  const char* value;
};

}  // namespace tessera
