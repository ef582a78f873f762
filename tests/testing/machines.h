// The fixture machine trees of tests/backend/machines (written by make_machines.py), for tests
// that need a DeviceInfo of a known machine. The test target defines TESSERA_MACHINES_DIR.
#pragma once

#include <string>

#include "tessera/backend/device_info.h"

namespace tessera::testing {

/// The probe of fixture tree `name` ("amd_vm", "arm_phone_battery", ...).
inline DeviceProbe machine_probe(const char* name) {
  DeviceProbe probe;
  probe.root = std::string(TESSERA_MACHINES_DIR) + "/" + name;
  return probe;
}

/// DeviceInfo of fixture tree `name`; with `sample_load`, its load as a load would sample it
/// (the fixture's proc/stat against proc/stat.later).
inline DeviceInfo machine(const char* name, bool sample_load = false) {
  const DeviceProbe probe = machine_probe(name);
  DeviceInfo info = DeviceInfo::detect(probe);
  if (sample_load) info.refresh_state(probe);
  return info;
}

}  // namespace tessera::testing
