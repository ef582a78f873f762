// Shared fixtures for the backend tests: a test schema with every option type and scope, typed
// keys for it, a scoped stub registration and a log capture.
#pragma once

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/option_key.h"
#include "tessera/backend/option_schema.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/log.h"

#define EXPECT_OK(expr)                                                                            \
  do {                                                                                             \
    ::tessera::Status expect_ok_status_ = (expr);                                                  \
    EXPECT_TRUE(expect_ok_status_.is_ok())                                                         \
        << ::tessera::error_name(expect_ok_status_.code()) << ": " << expect_ok_status_.message(); \
  } while (false)

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    ::tessera::Status assert_ok_status_ = (expr);                                                  \
    ASSERT_TRUE(assert_ok_status_.is_ok())                                                         \
        << ::tessera::error_name(assert_ok_status_.code()) << ": " << assert_ok_status_.message(); \
  } while (false)

namespace tessera::test {

inline constexpr const char* kPerfModes[] = {"latency", "throughput", "power_saver"};
inline constexpr const char* kDeviceTypes[] = {"cpu", "gpu", "accelerator"};

inline constexpr OptionKey<int64_t> kNumThreads{"num_threads"};
inline constexpr OptionKey<bool> kWeightCache{"weight_cache"};
inline constexpr OptionKey<std::string_view> kCacheDir{"cache_dir"};
inline constexpr OptionKey<EnumValue> kPerfMode{"perf_mode"};
inline constexpr OptionKey<double> kRatio{"ratio"};
inline constexpr OptionKey<EnumValue> kDeviceType{"device_type"};
inline constexpr OptionKey<int64_t> kPlatform{"platform"};
inline constexpr OptionKey<int64_t> kBatchHint{"batch_hint"};

/// One option of every type; scopes and init-only flags chosen to exercise every rule.
inline constexpr OptionSpec kTestSchema[] = {
    OptionSpec::integer(kNumThreads, 0, 0, 256, kAllScopes, "Worker threads; 0 = auto"),
    OptionSpec::boolean(kWeightCache, true, kInitScopes, "Cache packed weights"),
    OptionSpec::string(kCacheDir, "", kRuntimeScopes, "Directory for compiled kernels", 64),
    OptionSpec::enumeration(kPerfMode, "latency", kPerfModes, kAllScopes, "Performance mode"),
    OptionSpec::floating(kRatio, 0.5, 0.0, 1.0, kInitScopes, "Share of work on this backend"),
    OptionSpec::enumeration(kDeviceType, "cpu", kDeviceTypes, kInitScopes, "Device kind")
        .init_only(),
    OptionSpec::integer(kPlatform, 0, 0, 8, OptionLevel::Global | OptionLevel::Load,
                        "OpenCL platform index")
        .init_only(),
    OptionSpec::integer(kBatchHint, 1, 1, 64, OptionLevel::Execute, "Rows in this call"),
};

/// Registers a StubBackend (borrowed) under `name` for the lifetime of this object.
class ScopedStub {
 public:
  explicit ScopedStub(std::string name, Span<const OptionSpec> schema = kTestSchema)
      : name_(std::move(name)), backend_(schema) {
    Status s = register_backend(name_, &backend_);
    EXPECT_TRUE(s.is_ok()) << s.message();
  }
  ~ScopedStub() { (void)unregister_backend(name_); }
  ScopedStub(const ScopedStub&) = delete;
  ScopedStub& operator=(const ScopedStub&) = delete;

  testing::StubBackend& backend() { return backend_; }
  testing::StubBackend* operator->() { return &backend_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  testing::StubBackend backend_;
};

/// Collects log messages while alive.
class LogCapture {
 public:
  LogCapture() { set_log_sink(&LogCapture::sink, this); }
  ~LogCapture() { set_log_sink(nullptr); }
  std::vector<std::string> messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }
  bool contains(std::string_view text) {
    for (const std::string& m : messages()) {
      if (m.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  static void sink(LogLevel, const char* message, void* self) {
    auto* capture = static_cast<LogCapture*>(self);
    std::lock_guard<std::mutex> lock(capture->mutex_);
    capture->messages_.emplace_back(message);
  }
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

/// A BackendOption built from a typed key, asserting success.
template <OptionValueType T, typename V>
BackendOption opt(const OptionKey<T>& key, V&& value) {
  Result<BackendOption> r = make_option(key, static_cast<V&&>(value));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r.value() : BackendOption();
}

}  // namespace tessera::test
