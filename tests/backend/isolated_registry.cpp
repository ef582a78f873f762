// These tests register stub backends under real names ("xnnpack", "opencl") to exercise
// messages and suggestions. The library's own backends register themselves when it loads, so
// this binary removes them before any test runs (its own self-registered stubs stay).
#include "tessera/backend/registry.h"

namespace {

const bool kRegistryEmptied = [] {
  for (const char* name : {"portable", "xnnpack", "onednn", "opencl", "armnn"}) {
    (void)tessera::unregister_backend(name);
  }
  return true;
}();

}  // namespace
