// The ArmNN backend ids the `backends` option names, and the typed pass-through of ArmNN backend
// options (`backend_option`): parsing and checking against what the linked ArmNN knows, so a
// misspelt id or name, or a value ArmNN would silently ignore, is an error before ArmNN sees it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera::armnn_backend {

/// The ArmNN release the backend was built against ("20.08"), from ARMNN_MAJOR_VERSION.
const char* armnn_release();

/// The backend ids ArmNN releases define ("CpuAcc", "GpuAcc", "CpuRef", "EthosNAcc").
const std::vector<std::string>& known_backend_ids();

/// The ids registered in this process's ArmNN (dynamic backends loaded), in registry order.
std::vector<std::string> registered_backend_ids();

/// Parses a `backends` value ("GpuAcc, CpuAcc,CpuRef") into ids, in order. Errors
/// (OptionInvalidChoice): an empty entry, a repeated id, or an id no ArmNN release defines
/// (with a suggestion and the ids this machine's ArmNN has).
Result<std::vector<std::string>> parse_backend_list(std::string_view text,
                                                    const std::vector<std::string>& registered);

/// `backends` = auto: GpuAcc, CpuAcc, CpuRef, those in `registered`. GpuAcc is left out when
/// the load's policy avoids load-time-expensive work (`expensive_load_transforms` false, as under
/// power_saver): ArmNN's GpuAcc compiles its OpenCL kernels, and tunes them with a tuning level,
/// when a network loads. `*reason` says what was kept and why.
std::vector<std::string> auto_backend_preferences(const std::vector<std::string>& registered,
                                                  bool expensive_load_transforms,
                                                  const char* policy_name, std::string* reason);

/// The type ArmNN expects for a backend option value.
enum class PassThroughType { Bool, Int, Unsigned, Float, String };

/// One parsed `backend_option` entry.
struct PassThroughOption {
  std::string backend;  // "GpuAcc"
  std::string name;     // "TuningLevel"
  PassThroughType type = PassThroughType::String;
  bool b = false;
  long long i = 0;
  float f = 0.0f;
  std::string s;
  const char* own_option = nullptr;  // the typed option that sets the same thing, if any
};

/// Parses "<BackendId>.<Name>=<value>;..." (whitespace around entries ignored). Each name must
/// be one an ArmNN release reads, for that backend, and the linked release must read it (an
/// older one would ignore it: NotSupported naming the release that added it); the value must
/// parse as its type and lie in its range (OptionTypeMismatch, OptionOutOfRange). A name given
/// twice is OptionInvalidChoice. Names with a typed option of their own (GpuAcc.TuningLevel:
/// tuning_level, ...) are accepted; the runtime's creation refuses the two set differently.
Result<std::vector<PassThroughOption>> parse_pass_through(std::string_view text);

}  // namespace tessera::armnn_backend
