#include "tessera/backends/armnn/backend_ids.h"

#include <armnn/BackendRegistry.hpp>
#include <armnn/Version.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "tessera/backend/suggest.h"

namespace tessera::armnn_backend {
namespace {

// ArmNN's library major version of each release (the SONAME: Debian's libarmnn22 is 20.08).
int release_of_major(int major) {
  switch (major) {
    case 22:
      return 2008;
    case 23:
      return 2011;
    case 24:
      return 2102;
    case 25:
      return 2105;
    default:
      return major < 22 ? 2005 : 2108;
  }
}

constexpr int kLinkedRelease = ARMNN_MAJOR_VERSION == 22   ? 2008
                               : ARMNN_MAJOR_VERSION == 23 ? 2011
                               : ARMNN_MAJOR_VERSION == 24 ? 2102
                               : ARMNN_MAJOR_VERSION == 25 ? 2105
                                                           : 0;

// The backend options ArmNN's backends read from CreationOptions::m_BackendOptions (the names
// documented in IRuntime.hpp and the backends' option parsers), with the release that added
// them and their value ranges.
struct KnownPassThrough {
  const char* backend;
  const char* name;
  PassThroughType type;
  int since;               // ArmNN release, 2008 = 20.08
  long long min, max;      // Int/Unsigned range
  const char* own_option;  // the backend's own option for the same setting, or null
};

constexpr KnownPassThrough kKnown[] = {
    {"GpuAcc", "TuningLevel", PassThroughType::Int, 2008, 0, 3, "tuning_level"},
    {"GpuAcc", "TuningFile", PassThroughType::String, 2008, 0, 0, "tuning_file"},
    {"GpuAcc", "KernelProfilingEnabled", PassThroughType::Bool, 2008, 0, 0, "kernel_profiling"},
    {"GpuAcc", "FastMathEnabled", PassThroughType::Bool, 2011, 0, 0, nullptr},
    {"CpuAcc", "FastMathEnabled", PassThroughType::Bool, 2011, 0, 0, nullptr},
    {"GpuAcc", "MLGOTuningFilePath", PassThroughType::String, 2102, 0, 0, nullptr},
    {"CpuAcc", "NumberOfThreads", PassThroughType::Unsigned, 2105, 1, 64, nullptr},
};

std::string release_name(int release) {
  return std::to_string(release / 100) + "." + (release % 100 < 10 ? "0" : "") +
         std::to_string(release % 100);
}

std::string join(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out.empty() ? "none" : out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* type_name(PassThroughType t) {
  switch (t) {
    case PassThroughType::Bool:
      return "bool";
    case PassThroughType::Int:
      return "int";
    case PassThroughType::Unsigned:
      return "unsigned";
    case PassThroughType::Float:
      return "float";
    case PassThroughType::String:
      return "string";
  }
  return "?";
}

}  // namespace

std::vector<std::string> auto_backend_preferences(const std::vector<std::string>& registered,
                                                  bool expensive_load_transforms,
                                                  const char* policy_name, std::string* reason) {
  std::vector<std::string> out;
  bool dropped_gpu = false;
  for (const char* id : {"GpuAcc", "CpuAcc", "CpuRef"}) {
    bool have = false;
    for (const std::string& r : registered) have = have || r == id;
    if (!have) continue;
    if (std::string_view(id) == "GpuAcc" && !expensive_load_transforms) {
      dropped_gpu = true;
      continue;
    }
    out.emplace_back(id);
  }
  std::string have;
  for (const std::string& r : registered) have += (have.empty() ? "" : ",") + r;
  *reason = "auto: ArmNN here has " + (have.empty() ? std::string("none") : have);
  if (dropped_gpu) {
    *reason += std::string("; GpuAcc left out under ") + policy_name +
               " (it compiles and tunes OpenCL kernels at load)";
  }
  return out;
}

const char* armnn_release() {
  static const std::string name = release_name(release_of_major(ARMNN_MAJOR_VERSION));
  return name.c_str();
}

const std::vector<std::string>& known_backend_ids() {
  static const std::vector<std::string> ids = {"CpuAcc", "GpuAcc", "CpuRef", "EthosNAcc"};
  return ids;
}

std::vector<std::string> registered_backend_ids() {
  std::vector<std::string> ids;
  for (const armnn::BackendId& id : armnn::BackendRegistryInstance().GetBackendIds()) {
    ids.push_back(id.Get());
  }
  return ids;
}

Result<std::vector<std::string>> parse_backend_list(std::string_view text,
                                                    const std::vector<std::string>& registered) {
  std::vector<std::string> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view id = trim(text.substr(start, comma - start));
    if (id.empty()) {
      return Status::error(Error::OptionInvalidChoice,
                           "armnn: backends='%.*s' has an empty entry; give ArmNN backend ids "
                           "separated by commas (%s)",
                           static_cast<int>(text.size()), text.data(),
                           join(registered.empty() ? known_backend_ids() : registered).c_str());
    }
    bool known = false;
    Suggester suggest(id);
    for (const std::string& k : known_backend_ids()) {
      known = known || k == id;
      suggest.consider(k);
    }
    for (const std::string& r : registered) {
      known = known || r == id;
      suggest.consider(r);
    }
    if (!known) {
      const std::string_view best = suggest.best();
      return Status::error(Error::OptionInvalidChoice,
                           "armnn: backends: ArmNN has no backend '%.*s'%s%.*s%s; ArmNN %s "
                           "defines %s%s%s",
                           static_cast<int>(id.size()), id.data(),
                           best.empty() ? "" : " (did you mean '", static_cast<int>(best.size()),
                           best.data(), best.empty() ? "" : "'?)", armnn_release(),
                           join(known_backend_ids()).c_str(),
                           registered.empty() ? "" : "; this machine's ArmNN has ",
                           registered.empty() ? "" : join(registered).c_str());
    }
    for (const std::string& seen : ids) {
      if (seen == id) {
        return Status::error(Error::OptionInvalidChoice, "armnn: backends names '%.*s' twice",
                             static_cast<int>(id.size()), id.data());
      }
    }
    ids.emplace_back(id);
    start = comma + 1;
  }
  return ids;
}

Result<std::vector<PassThroughOption>> parse_pass_through(std::string_view text) {
  std::vector<PassThroughOption> out;
  if (trim(text).empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t semi = text.find(';', start);
    if (semi == std::string_view::npos) semi = text.size();
    const std::string_view entry = trim(text.substr(start, semi - start));
    start = semi + 1;
    if (entry.empty()) continue;
    const size_t dot = entry.find('.');
    const size_t eq = entry.find('=');
    if (dot == std::string_view::npos || eq == std::string_view::npos || dot > eq) {
      return Status::error(Error::OptionParseError,
                           "armnn: backend_option entry '%.*s' is not <BackendId>.<Name>=<value> "
                           "(e.g. GpuAcc.TuningLevel=2; entries separated by ';')",
                           static_cast<int>(entry.size()), entry.data());
    }
    const std::string_view backend = trim(entry.substr(0, dot));
    const std::string_view name = trim(entry.substr(dot + 1, eq - dot - 1));
    const std::string_view value = trim(entry.substr(eq + 1));
    const KnownPassThrough* known = nullptr;
    bool backend_known = false;
    Suggester suggest_backend(backend);
    Suggester suggest_name(name);
    std::string names;
    for (const std::string& id : known_backend_ids()) suggest_backend.consider(id);
    for (const KnownPassThrough& k : kKnown) {
      if (backend != k.backend) continue;
      backend_known = true;
      suggest_name.consider(k.name);
      names += std::string(names.empty() ? "" : ", ") + k.name;
      if (name == k.name) known = &k;
    }
    if (!backend_known) {
      const std::string_view best = suggest_backend.best();
      return Status::error(
          Error::OptionInvalidChoice,
          "armnn: backend_option '%.*s': no ArmNN backend '%.*s' takes options%s%.*s%s "
          "(backends with options: CpuAcc, GpuAcc)",
          static_cast<int>(entry.size()), entry.data(), static_cast<int>(backend.size()),
          backend.data(), best.empty() ? "" : "; did you mean '", static_cast<int>(best.size()),
          best.data(), best.empty() ? "" : "'?");
    }
    if (known == nullptr) {
      const std::string_view best = suggest_name.best();
      return Status::error(Error::OptionInvalidChoice,
                           "armnn: backend_option: %.*s has no option '%.*s'%s%.*s%s (ArmNN "
                           "releases define %s); ArmNN would ignore it",
                           static_cast<int>(backend.size()), backend.data(),
                           static_cast<int>(name.size()), name.data(),
                           best.empty() ? "" : " (did you mean '", static_cast<int>(best.size()),
                           best.data(), best.empty() ? "" : "'?)", names.c_str());
    }
    if (known->since > kLinkedRelease) {
      return Status::error(Error::NotSupported,
                           "armnn: backend_option %s.%s needs ArmNN %s or newer; the linked ArmNN "
                           "is %s, which would ignore it",
                           known->backend, known->name, release_name(known->since).c_str(),
                           armnn_release());
    }
    for (const PassThroughOption& o : out) {
      if (o.backend == backend && o.name == name) {
        return Status::error(Error::OptionInvalidChoice, "armnn: backend_option sets %s.%s twice",
                             known->backend, known->name);
      }
    }
    PassThroughOption o;
    o.backend = known->backend;
    o.name = known->name;
    o.type = known->type;
    o.own_option = known->own_option;
    const std::string v(value);
    char* end = nullptr;
    errno = 0;
    bool ok = !v.empty();
    switch (known->type) {
      case PassThroughType::Bool:
        ok = v == "true" || v == "false" || v == "1" || v == "0";
        o.b = v == "true" || v == "1";
        break;
      case PassThroughType::Int:
      case PassThroughType::Unsigned:
        o.i = std::strtoll(v.c_str(), &end, 10);
        ok = ok && errno == 0 && end != nullptr && *end == '\0';
        if (ok && (o.i < known->min || o.i > known->max)) {
          return Status::error(Error::OptionOutOfRange,
                               "armnn: backend_option %s.%s=%s is out of range [%lld, %lld]",
                               known->backend, known->name, v.c_str(), known->min, known->max);
        }
        break;
      case PassThroughType::Float:
        o.f = std::strtof(v.c_str(), &end);
        ok = ok && errno == 0 && end != nullptr && *end == '\0' && std::isfinite(o.f);
        break;
      case PassThroughType::String:
        o.s = v;
        break;
    }
    if (!ok) {
      return Status::error(Error::OptionTypeMismatch,
                           "armnn: backend_option %s.%s takes %s%s, got '%s'", known->backend,
                           known->name, type_name(known->type),
                           known->type == PassThroughType::Bool ? " (true/false)" : "", v.c_str());
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace tessera::armnn_backend
