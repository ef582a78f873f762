// The selection cache (see selection_cache.h).
#include "tessera/runtime/selection_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tessera/backend/device_info.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/core/string_format.h"

#ifndef TESSERA_VERSION_STRING
#error "TESSERA_VERSION_STRING must be defined by the build"
#endif

namespace tessera::internal {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'S', 'E', 'L', '0', '0', '1'};

IntegrityKey integrity_key(const SelectionKey& key) {
  IntegrityKey k;
  std::memcpy(k.magic, kMagic, sizeof k.magic);
  k.device = key.device_hash();
  k.content = key.full_hash();
  return k;
}

void copy_text(char* dst, size_t cap, std::string_view s) {
  const size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

std::string selection_cache_dir(const char* option) {
  if (option != nullptr) return option;  // "" disables
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/tessera/selection";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return std::string(home) + "/.cache/tessera/selection";
  }
  return {};
}

void SelectionKey::set_device(const DeviceInfo& device) {
  device_text_ = string_format(
      "cpu=%s; vendor=%s; usable_cpus=%u; performance_cores=%u; isa=", device.cpu_name,
      device.vendor, device.usable_cpus, device.usable_performance_cores);
  static constexpr const char* kIsa[] = {
      "sse4_2",   "avx",        "avx2",        "fma",      "f16c",     "avx512f",
      "avx512bw", "avx512vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16",
      "neon",     "neon_fp16",  "neon_dot",    "arm_bf16", "sve",      "sve2"};
  bool first = true;
  for (const char* isa : kIsa) {
    if (!device.has_isa(isa)) continue;
    device_text_ += first ? "" : ",";
    device_text_ += isa;
    first = false;
  }
  device_text_ += "; tessera=" TESSERA_VERSION_STRING;
  device_hash_ = fnv1a64(device_text_);
}

void SelectionKey::add(std::string_view name, std::string_view value) {
  std::string field;
  field.reserve(name.size() + value.size() + 3);
  field.append(name).append("=").append(value).append("\n");
  fields_hash_ = fnv1a64(field.data(), field.size(), fields_hash_);
  text_ += field;
}

void SelectionKey::add(std::string_view name, uint64_t value) {
  add(name, string_format("%016llx", static_cast<unsigned long long>(value)));
}

uint64_t SelectionKey::full_hash() const {
  return fnv1a64(device_text_, fields_hash_);
}

std::string selection_cache_path(const std::string& dir, const SelectionKey& key) {
  return dir + string_format("/%016llx.tsel", static_cast<unsigned long long>(key.fields_hash()));
}

std::vector<uint8_t> encode_selection(const SelectionKey& key, const SelectionReport& report) {
  nlohmann::ordered_json j;
  j["version"] = kSelectionCacheVersion;
  j["device"] = key.device_text();
  j["key"] = key.text();
  j["summary"] = report.summary;
  if (report.notes[0] != '\0') j["notes"] = report.notes;
  j["disturbed_measurements"] = report.disturbed_measurements;
  nlohmann::ordered_json candidates = nlohmann::ordered_json::array();
  for (size_t i = 0; i < report.num_candidates; ++i) {
    const SelectionCandidate& c = report.candidates[i];
    candidates.push_back({{"backend", c.backend},
                          {"options", c.options},
                          {"median_ms", c.median_ms},
                          {"runs", c.runs},
                          {"disturbed_runs", c.disturbed_runs},
                          {"init_ms", c.init_ms},
                          {"alone_init_ms", c.alone_init_ms},
                          {"accepted", c.accepted},
                          {"chosen", c.chosen},
                          {"reason", c.reason}});
  }
  j["candidates"] = std::move(candidates);
  const MethodSelection& m = report.method;
  if (m.checked) {
    nlohmann::ordered_json uniform = nlohmann::ordered_json::array();
    for (size_t i = 0; i < m.num_uniform; ++i) {
      uniform.push_back({{"backend", m.uniform[i].backend},
                         {"ms", m.uniform[i].ms},
                         {"runs", m.uniform[i].runs},
                         {"reason", m.uniform[i].reason}});
    }
    j["method"] = {
        {"mixed_ms", m.mixed_ms},  {"mixed_runs", m.mixed_runs}, {"uniform", std::move(uniform)},
        {"chosen", m.chosen},      {"reason", m.reason},         {"budget_cut", m.budget_cut},
        {"reinit_ms", m.reinit_ms}};
  }
  const std::string text = j.dump(1);
  return {text.begin(), text.end()};
}

Result<std::string> decode_selection(const uint8_t* data, size_t size, SelectionReport* report) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  auto bad = [](const char* what) {
    return Status::error(Error::InvalidProgram, "selection cache entry: %s", what);
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer()) return bad("no integer 'version'");
  if (version->get<int64_t>() != kSelectionCacheVersion) {
    return Status::error(Error::InvalidProgram,
                         "selection cache entry: version %lld, this build reads %d",
                         static_cast<long long>(version->get<int64_t>()), kSelectionCacheVersion);
  }
  const auto summary = j.find("summary");
  const auto candidates = j.find("candidates");
  if (summary == j.end() || !summary->is_string()) return bad("no string 'summary'");
  if (candidates == j.end() || !candidates->is_array()) return bad("no array 'candidates'");
  if (candidates->size() > SelectionReport::kMaxCandidates) return bad("too many candidates");
  const auto disturbed_measurements = j.find("disturbed_measurements");
  if (disturbed_measurements == j.end() || !disturbed_measurements->is_number_integer() ||
      disturbed_measurements->get<int64_t>() < 0 ||
      disturbed_measurements->get<int64_t>() > 1000000) {
    return bad("no 'disturbed_measurements' count");
  }

  SelectionReport out;
  copy_text(out.mode, sizeof out.mode, "measure");
  out.cached = true;
  out.disturbed_measurements = static_cast<int>(disturbed_measurements->get<int64_t>());
  copy_text(out.summary, sizeof out.summary, summary->get_ref<const std::string&>());
  // The summary's notes on their own (absent: none, or an entry from before they were kept).
  if (const auto notes = j.find("notes"); notes != j.end()) {
    if (!notes->is_string()) return bad("'notes' is not a string");
    copy_text(out.notes, sizeof out.notes, notes->get_ref<const std::string&>());
  }
  std::string chosen;
  for (const nlohmann::json& c : *candidates) {
    if (!c.is_object()) return bad("a candidate is not an object");
    const auto backend = c.find("backend"), median = c.find("median_ms"), runs = c.find("runs"),
               disturbed = c.find("disturbed_runs"), init = c.find("init_ms"),
               accepted = c.find("accepted"), is_chosen = c.find("chosen"),
               reason = c.find("reason");
    if (backend == c.end() || !backend->is_string() || median == c.end() || !median->is_number() ||
        runs == c.end() || !runs->is_number_integer() || disturbed == c.end() ||
        !disturbed->is_number_integer() || init == c.end() || !init->is_number() ||
        accepted == c.end() || !accepted->is_boolean() || is_chosen == c.end() ||
        !is_chosen->is_boolean() || reason == c.end() || !reason->is_string()) {
      return bad(
          "a candidate lacks backend, median_ms, runs, disturbed_runs, init_ms, accepted, chosen "
          "or reason");
    }
    const std::string& name = backend->get_ref<const std::string&>();
    if (name.empty() || name.size() >= sizeof(SelectionCandidate::backend)) {
      return bad("a candidate's backend name is empty or too long");
    }
    const double ms = median->get<double>();
    const int64_t n = runs->get<int64_t>();
    const int64_t nd = disturbed->get<int64_t>();
    if (!(ms >= 0) || n < 0 || n > 1000000 || nd < 0 || nd > 1000000 || !(init->get<double>() >= 0))
      return bad("a candidate's median_ms, runs, disturbed_runs or init_ms is out of range");
    SelectionCandidate& k = out.candidates[out.num_candidates++];
    copy_text(k.backend, sizeof k.backend, name);
    k.median_ms = ms;
    k.runs = static_cast<int>(n);
    k.disturbed_runs = static_cast<int>(nd);
    k.init_ms = init->get<double>();
    // Absent: none made (or an entry from before it was kept).
    if (const auto alone = c.find("alone_init_ms"); alone != c.end()) {
      if (!alone->is_number() || !(alone->get<double>() >= 0)) {
        return bad("a candidate's alone_init_ms is not a number of at least 0");
      }
      k.alone_init_ms = alone->get<double>();
    }
    k.accepted = accepted->get<bool>();
    k.chosen = is_chosen->get<bool>();
    copy_text(k.reason, sizeof k.reason, reason->get_ref<const std::string&>());
    if (const auto opts = c.find("options"); opts != c.end()) {
      if (!opts->is_string() || opts->get_ref<const std::string&>().size() >= sizeof k.options) {
        return bad("a candidate's options is not a string of at most 63 characters");
      }
      copy_text(k.options, sizeof k.options, opts->get_ref<const std::string&>());
    }
    if (k.chosen) {
      if (!chosen.empty()) return bad("more than one chosen candidate");
      if (!k.accepted) return bad("the chosen candidate was not accepted");
      chosen = name;
    }
  }
  if (chosen.empty()) return bad("no chosen candidate");
  if (const auto method = j.find("method"); method != j.end()) {
    if (!method->is_object()) return bad("'method' is not an object");
    MethodSelection& m = out.method;
    const auto mixed = method->find("mixed_ms"), mixed_runs = method->find("mixed_runs"),
               uniform = method->find("uniform"), method_chosen = method->find("chosen"),
               why = method->find("reason"), cut = method->find("budget_cut"),
               reinit = method->find("reinit_ms");
    if (mixed == method->end() || !mixed->is_number() || !(mixed->get<double>() >= 0) ||
        mixed_runs == method->end() || !mixed_runs->is_number_integer() ||
        uniform == method->end() || !uniform->is_array() || method_chosen == method->end() ||
        !method_chosen->is_string() || why == method->end() || !why->is_string() ||
        cut == method->end() || !cut->is_boolean() || reinit == method->end() ||
        !reinit->is_number() || !(reinit->get<double>() >= 0)) {
      return bad(
          "'method' lacks mixed_ms, mixed_runs, uniform, chosen, reason, budget_cut or reinit_ms");
    }
    if (uniform->size() > MethodSelection::kMaxUniform) return bad("too many uniform assignments");
    const std::string& method_choice = method_chosen->get_ref<const std::string&>();
    if (method_choice != "mixed" && method_choice != chosen) {
      return bad("'method.chosen' is neither \"mixed\" nor the chosen candidate's backend");
    }
    m.checked = true;
    m.mixed_ms = mixed->get<double>();
    m.mixed_runs = static_cast<int>(mixed_runs->get<int64_t>());
    copy_text(m.chosen, sizeof m.chosen, method_choice);
    copy_text(m.reason, sizeof m.reason, why->get_ref<const std::string&>());
    m.budget_cut = cut->get<bool>();
    m.reinit_ms = reinit->get<double>();
    for (const nlohmann::json& u : *uniform) {
      const auto ub = u.is_object() ? u.find("backend") : u.end();
      if (!u.is_object() || ub == u.end() || !ub->is_string() || !u.contains("ms") ||
          !u["ms"].is_number() || !u.contains("runs") || !u["runs"].is_number_integer() ||
          !u.contains("reason") || !u["reason"].is_string()) {
        return bad("a uniform assignment lacks backend, ms, runs or reason");
      }
      UniformAssignment& a = m.uniform[m.num_uniform++];
      copy_text(a.backend, sizeof a.backend, ub->get_ref<const std::string&>());
      a.ms = u["ms"].get<double>();
      a.runs = static_cast<int>(u["runs"].get<int64_t>());
      copy_text(a.reason, sizeof a.reason, u["reason"].get_ref<const std::string&>());
    }
  }
  *report = out;
  return chosen;
}

Result<std::string> read_selection(const std::string& path, const SelectionKey& key,
                                   SelectionReport* report) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> payload,
                           read_integrity_file(path, integrity_key(key)));
  Result<std::string> chosen = decode_selection(payload.data(), payload.size(), report);
  if (chosen.ok()) touch_cache_entry(path);  // used: the last the size bound removes
  return chosen;
}

CacheTrim trim_selection_cache(const std::string& dir, int64_t max_kb) {
  if (max_kb <= 0) return CacheTrim{};
  auto remove = [](const std::string& path) {
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".tsel") != 0) {
      return remove_cache_entry(path);
    }
    // Under its lock, taken without waiting: a load that holds it is measuring, writing or
    // reading this entry, which then stays. The lock file goes with the entry (while held: a
    // load that opened it before waits on a file no longer named, and measures again, as one
    // that finds no entry does).
    const std::string lock_path = path + ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return false;
    }
    const bool gone = remove_cache_entry(path);
    if (fd >= 0) {
      if (gone) ::unlink(lock_path.c_str());
      ::flock(fd, LOCK_UN);
      ::close(fd);
    }
    return gone;
  };
  return trim_cache_dir(dir, {".tsel", ".tphash"}, static_cast<uint64_t>(max_kb) << 10, remove);
}

Status write_selection(const std::string& dir, const std::string& path, const SelectionKey& key,
                       const SelectionReport& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::error(Error::AccessFailed, "cannot create selection cache directory '%s': %s",
                         dir.c_str(), ec.message().c_str());
  }
  return write_integrity_file(path, integrity_key(key), encode_selection(key, report));
}

SelectionLock::SelectionLock(const std::string& path) {
  const std::string lock_path = path + ".lock";
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ =
        string_format("cannot open lock file '%s': %s", lock_path.c_str(), std::strerror(errno));
    return;
  }
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    error_ = string_format("cannot lock '%s': %s", lock_path.c_str(), std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
  }
}

SelectionLock::~SelectionLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace tessera::internal
