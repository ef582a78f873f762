// LoadOptions: what the application decides at load time: symbolic dim values, backend options
// per backend and per delegate, retargeting and an explicit fallback chain. Fixed capacity; no
// heap. The option maps are borrowed and must outlive the load_method() call only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/backend/policy.h"
#include "tessera/core/span.h"
#include "tessera/core/status.h"

namespace tessera {

/// Most delegates one method may have (the compiler partitions within it).
inline constexpr size_t kMaxDelegatesPerMethod = 64;

class LoadBackendOptionsMap;
class DelegateOptionsMap;
struct DeviceInfo;

struct LoadOptions {
  static constexpr size_t kMaxDims = 16;
  static constexpr size_t kMaxRetargets = 8;
  static constexpr size_t kMaxFallback = 8;
  static constexpr size_t kMaxName = 32;

  struct DimValue {
    char name[kMaxName];
    int64_t value;
  };
  struct Retarget {
    char from[kMaxName];
    char to[kMaxName];
  };

  /// Gives symbol `name` (such as "batch") its value for this load. Checked against the
  /// program's bounds at load. Errors: InvalidArgument (empty/over-long name, duplicate, full).
  Status set_dim(std::string_view name, int64_t value);
  /// Runs delegates compiled for backend `from` on backend `to`.
  Status add_retarget(std::string_view from, std::string_view to);
  /// Backends to try, in order, when a delegate's backend is unavailable or its init fails.
  /// Parses a comma-separated list: "opencl,xnnpack,portable".
  Status set_fallback(std::string_view comma_separated);

  /// Value given for `name`, or false.
  bool find_dim(std::string_view name, int64_t* value) const;
  /// The backend delegates of `backend` run on (itself unless retargeted).
  std::string_view retarget_of(std::string_view backend) const;
  Span<const DimValue> dims() const { return {dims_, num_dims_}; }
  size_t fallback_size() const { return num_fallback_; }
  std::string_view fallback(size_t i) const { return fallback_[i]; }

  /// Per-backend load options (scope 4) and per-delegate options (scope 5); may be null.
  const LoadBackendOptionsMap* backend_options = nullptr;
  const DelegateOptionsMap* delegate_options = nullptr;
  /// Unknown option keys warn and are skipped instead of failing the load (version skew).
  bool lenient_options = false;
  /// What this load optimises for; unset: default_policy() (initially Policy::Auto). Backends
  /// derive the options left at `auto` from it (see docs/options.md, "Policies").
  Policy policy = Policy::Auto;
  bool has_policy = false;
  /// Sets `policy` (and has_policy).
  void set_policy(Policy p) {
    policy = p;
    has_policy = true;
  }
  /// The machine the policy is decided on; null: this machine now (DeviceInfo::get() with its
  /// power, thermal and load state re-read). Tests and simulations pass a fixture's. Borrowed:
  /// must outlive the Method.
  const DeviceInfo* device_info = nullptr;

 private:
  DimValue dims_[kMaxDims] = {};
  size_t num_dims_ = 0;
  Retarget retargets_[kMaxRetargets] = {};
  size_t num_retargets_ = 0;
  char fallback_[kMaxFallback][kMaxName] = {};
  size_t num_fallback_ = 0;
};

}  // namespace tessera
