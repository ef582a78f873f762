// Injected faults while loading and running: the method allocator failing at every k-th
// allocation (every compiled seed program, on every built backend), a backend whose init fails
// on the n-th delegate, and a backend whose execute fails. Each gives a clean error naming what
// failed, leaves nothing initialised or leaked (this binary also runs under ASan's
// LeakSanitizer), and a later load or execute succeeds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/core/log.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/failing_allocator.h"
#include "tests/testing/fuzz_inputs.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr int64_t kShape[2] = {2, 4};  // the chain programs' tensors

using testing::AllocationCounter;
using testing::FailingAllocator;

// Compiled by tessera-compile from small ONNX models (fuzz/make_seeds.py): kernels only, and the
// same models with xnnpack and onednn delegates.
constexpr const char* kSeedPrograms[] = {
    "elementwise_portable", "mlp_portable",          "conv_portable", "shapes_portable",
    "pool_resize_portable", "elementwise_delegates", "mlp_delegates", "conv_delegates",
    "shapes_delegates",     "pool_resize_delegates"};

struct Loaded {
  std::unique_ptr<testing::AlignedBuffer> buffer;
  std::unique_ptr<BufferDataLoader> loader;
  std::unique_ptr<Program> program;
};

Loaded load_seed(const char* name) {
  Loaded out;
  std::vector<uint8_t> bytes = testing::read_fuzz_input("program_load", name);
  EXPECT_FALSE(bytes.empty()) << name;
  out.buffer = std::make_unique<testing::AlignedBuffer>(bytes);
  out.loader = std::make_unique<BufferDataLoader>(out.buffer->data(), out.buffer->size());
  Result<Program> p = Program::load(out.loader.get());
  EXPECT_TRUE(p.ok()) << name << ": " << p.status().message();
  if (p.ok()) out.program = std::make_unique<Program>(std::move(*p));
  return out;
}

// Every delegate on `backend`, every symbolic dim at its upper bound.
LoadOptions options_for(const Program& program, std::string_view method, const char* backend) {
  LoadOptions options;
  for (const char* from : {"xnnpack", "onednn", "opencl", "armnn", "portable"}) {
    if (std::string_view(from) != backend) {
      EXPECT_TRUE(options.add_retarget(from, backend).is_ok());
    }
  }
  const fb::Method* m = program.find_method(method);
  if (m != nullptr && m->symbols() != nullptr) {
    for (const fb::Symbol* symbol : *m->symbols()) {
      EXPECT_TRUE(options.set_dim(symbol->name()->string_view(), symbol->max()).is_ok());
    }
  }
  return options;
}

// Fills the inputs deterministically, executes, and returns the outputs' bytes.
std::vector<std::vector<uint8_t>> run(Method& method) {
  for (size_t i = 0; i < method.inputs_size(); ++i) {
    Result<Tensor*> input = method.input(i);
    EXPECT_TRUE(input.ok());
    if (!input.ok() || (*input)->data() == nullptr) continue;
    Tensor* t = *input;
    if (t->dtype() == ScalarType::Float32) {
      float* f = static_cast<float*>(t->data());
      for (int64_t e = 0; e < t->numel(); ++e) f[e] = std::sin(0.37f * static_cast<float>(e + i));
    } else {
      std::memset(t->data(), 0, t->nbytes());
    }
  }
  Status st = method.execute();
  EXPECT_TRUE(st.is_ok()) << st.message();
  std::vector<std::vector<uint8_t>> outputs;
  for (size_t i = 0; i < method.outputs_size(); ++i) {
    Result<const Tensor*> out = method.get_output(i);
    EXPECT_TRUE(out.ok());
    if (!out.ok()) continue;
    const uint8_t* p = static_cast<const uint8_t*>((*out)->data());
    outputs.emplace_back(p, p + (*out)->nbytes());
  }
  return outputs;
}

Result<Method> load_with(const Program& program, std::string_view method,
                         const LoadOptions& options, FailingAllocator* method_memory,
                         FailingAllocator* arena) {
  MemoryManager memory(method_memory, arena);
  return program.load_method(method, &memory, options);
}

// The backends this build registered that can run here. OpenCL and ArmNN compile kernels or
// optimise a network per init: they get every k on the smallest seed programs only.
std::vector<std::string> usable_backends() {
  std::vector<std::string> out;
  for (const std::string& name : registered_backends()) {
    Result<BackendInterface*> b = get_backend(name);
    if (b.ok() && (*b)->is_available()) out.push_back(name);
  }
  return out;
}

bool is_slow_backend(std::string_view name) {
  return name == "opencl" || name == "armnn";
}

TEST(AllocationFailure, EveryKWhileLoadingEachSeedProgramOnEachBackend) {
  const std::vector<std::string> backends = usable_backends();
  ASSERT_FALSE(backends.empty());
  int combinations = 0;
  long injected = 0;
  for (const char* seed : kSeedPrograms) {
    Loaded loaded = load_seed(seed);
    ASSERT_TRUE(loaded.program);
    const Program& program = *loaded.program;
    const std::string_view name = *program.method_name(0);
    const bool has_delegates = std::string_view(seed).ends_with("_delegates");
    for (const std::string& backend : backends) {
      if (!has_delegates && backend != "portable") continue;  // kernels only: no backend runs
      if (is_slow_backend(backend) && std::string_view(seed) != "elementwise_delegates") continue;
      SCOPED_TRACE(std::string(seed) + " on " + backend);
      const LoadOptions options = options_for(program, name, backend.c_str());
      // The reference: a load that never fails, and how many allocations it makes.
      AllocationCounter reference_counter;
      std::vector<std::vector<uint8_t>> reference;
      {
        FailingAllocator method_memory(&reference_counter), arena(&reference_counter);
        Result<Method> m = load_with(program, name, options, &method_memory, &arena);
        if (!m.ok()) {
          // A backend that cannot take this model (an op it lacks) is not what is tested here.
          EXPECT_EQ(m.status().code(), Error::DelegateInvalidCompatibility) << m.status().message();
          continue;
        }
        reference = run(*m);
      }
      const long n = reference_counter.calls;
      ASSERT_GT(n, 0);
      ++combinations;
      for (long k = 1; k <= n; ++k) {
        AllocationCounter counter;
        counter.fail_at = k;
        FailingAllocator method_memory(&counter), arena(&counter);
        Result<Method> m = load_with(program, name, options, &method_memory, &arena);
        ASSERT_TRUE(counter.failed) << "allocation " << k;
        ASSERT_FALSE(m.ok()) << "allocation " << k << " failed but the load succeeded";
        EXPECT_TRUE(m.status().code() == Error::MemoryAllocationFailed ||
                    m.status().code() == Error::DelegateMemoryAllocationFailed)
            << "allocation " << k << ": " << m.status().message();
        EXPECT_NE(std::strstr(m.status().message(), "alloc"), nullptr)
            << "allocation " << k << ": " << m.status().message();
        ++injected;
      }
      // A later load with a working allocator succeeds and computes the same outputs.
      AllocationCounter counter;
      FailingAllocator method_memory(&counter), arena(&counter);
      Result<Method> m = load_with(program, name, options, &method_memory, &arena);
      ASSERT_TRUE(m.ok()) << m.status().message();
      EXPECT_EQ(run(*m), reference);
    }
  }
  EXPECT_GE(combinations, 6);  // 5 kernel-only programs on portable, 5 with delegates on it
  std::printf("[ fault    ] %d program/backend pairs, %ld injected allocation failures\n",
              combinations, injected);
}

// The Method's own heap allocator (no MemoryManager given) failing is the same clean error.
TEST(AllocationFailure, ArenaLargerThanTheCallersAllocatorIsACleanError) {
  Loaded loaded = load_seed("conv_portable");
  ASSERT_TRUE(loaded.program);
  const std::string_view name = *loaded.program->method_name(0);
  HeapMemoryAllocator method_memory;
  std::vector<uint8_t> small(64);
  MemoryAllocator arena(small.data(), small.size());
  MemoryManager memory(&method_memory, &arena);
  Result<Method> m =
      loaded.program->load_method(name, &memory, options_for(*loaded.program, name, "portable"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Error::MemoryAllocationFailed);
  EXPECT_NE(std::strstr(m.status().message(), "activation arena"), nullptr) << m.status().message();
}

// A stub whose handles are heap objects (so LeakSanitizer sees one that is never destroyed) and
// that counts the live ones.
class CountingBackend : public testing::StubBackend {
 public:
  CountingBackend() {
    on_init = [this](BackendInitContext& ctx, FreeableBuffer*,
                     Span<const CompileSpec>) -> Result<DelegateHandle*> {
      const int call = inits_.fetch_add(1);
      if (call == fail_init_at) {
        return Status::error(Error::DelegateUnavailable, "injected init failure in '%.*s'",
                             static_cast<int>(ctx.delegate_id().size()), ctx.delegate_id().data());
      }
      live_.fetch_add(1);
      return to_handle(new int(call));
    };
  }
  void destroy(DelegateHandle* handle) const override {
    StubBackend::destroy(handle);
    delete from_handle<int>(handle);
    live_.fetch_sub(1);
  }
  int live() const { return live_.load(); }
  void reset_inits() { inits_ = 0; }

  int fail_init_at = -1;  // which init call fails (0 for the first); -1: none

 private:
  std::atomic<int> inits_{0};
  mutable std::atomic<int> live_{0};
};

class BackendFault : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = new CountingBackend();
    ASSERT_TRUE(
        register_backend("stub_fault", std::unique_ptr<BackendInterface>(backend_)).is_ok());
  }
  void TearDown() override { (void)unregister_backend("stub_fault"); }
  CountingBackend* backend_ = nullptr;
};

TEST_F(BackendFault, InitFailingOnTheNthDelegateDestroysTheOthersAndNamesIt) {
  auto loaded = testing::load_built_program(
      testing::delegate_chain_program({"stub_fault", "stub_fault", "stub_fault", "stub_fault"}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Program& program = *loaded->program;
  for (int n = 0; n < 4; ++n) {
    SCOPED_TRACE("init " + std::to_string(n) + " fails");
    backend_->reset_inits();
    backend_->fail_init_at = n;
    const int destroyed_before = backend_->destroy_count();
    Result<Method> m = program.load_method("forward");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), Error::DelegateUnavailable);
    const std::string id = "stub_fault#" + std::to_string(n);
    EXPECT_NE(std::string(m.status().message()).find("delegate '" + id + "'"), std::string::npos)
        << m.status().message();
    // The n delegates initialised before it were destroyed, and nothing else is alive.
    EXPECT_EQ(backend_->destroy_count() - destroyed_before, n);
    EXPECT_EQ(backend_->live(), 0);
  }
  // With init working again, the same Program loads and runs.
  backend_->reset_inits();
  backend_->fail_init_at = -1;
  {
    Result<Method> m = program.load_method("forward");
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(backend_->live(), 4);
    EXPECT_TRUE(m->execute().is_ok());
  }
  EXPECT_EQ(backend_->live(), 0);
}

TEST_F(BackendFault, ExecuteFailureReachesTheCallerWithTheDelegateAndTheMethodStaysUsable) {
  auto loaded = testing::load_built_program(
      testing::delegate_chain_program({"stub_fault", "stub_fault", "stub_fault"}));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::atomic<int> fail_next_of{-1};  // which delegate (by its handle's init index) fails once
  backend_->on_execute = [&](BackendExecutionContext&, DelegateHandle* h, Span<EValue*> args) {
    int expected = *from_handle<int>(h);
    if (fail_next_of.compare_exchange_strong(expected, -1)) {
      return Status(Error::DelegateExecutionFailed, "injected execute failure");
    }
    std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
                args[0]->to_tensor().nbytes());
    return Status::ok();
  };
  Result<Method> m = loaded->program->load_method("forward");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const float x[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  for (int failing = 0; failing < 3; ++failing) {
    SCOPED_TRACE("delegate " + std::to_string(failing) + " fails");
    ASSERT_TRUE(
        m->set_input(0, Tensor(ScalarType::Float32, {kShape, 2}, const_cast<float*>(x))).is_ok());
    fail_next_of = failing;
    Status st = m->execute();
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), Error::DelegateExecutionFailed);
    const std::string id = "stub_fault#" + std::to_string(failing);
    EXPECT_NE(std::string(st.message()).find("delegate '" + id + "' on 'stub_fault'"),
              std::string::npos)
        << st.message();
    EXPECT_NE(std::string(st.message()).find("injected execute failure"), std::string::npos);
    // The next call runs every delegate and gives the right answer.
    ASSERT_TRUE(m->execute().is_ok());
    const Tensor* y = *m->get_output(0);
    EXPECT_EQ(std::memcmp(y->data(), x, sizeof x), 0);
  }
}

// Recovery at run time (LoadOptions::on_execute_failure).
class ExecuteRecovery : public BackendFault {
 protected:
  void SetUp() override {
    BackendFault::SetUp();
    other_ = new testing::StubBackend();
    ASSERT_TRUE(register_backend("stub_other", std::unique_ptr<BackendInterface>(other_)).is_ok());
    // Delegate #1 of the stub always fails; the others copy their input (identity).
    backend_->on_execute = [this](BackendExecutionContext&, DelegateHandle* h, Span<EValue*> args) {
      if (*from_handle<int>(h) == failing_) {
        return Status(Error::DelegateExecutionFailed, "injected device loss");
      }
      std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
                  args[0]->to_tensor().nbytes());
      return Status::ok();
    };
    auto loaded = testing::load_built_program(
        testing::delegate_chain_program({"stub_fault", "stub_fault", "stub_fault"}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_ = std::move(*loaded);
  }
  void TearDown() override {
    (void)unregister_backend("stub_other");
    BackendFault::TearDown();
  }
  Result<Method> load(const char* fallback, OnExecuteFailure mode) {
    LoadOptions options;
    if (fallback[0] != '\0') {
      EXPECT_TRUE(options.set_fallback(fallback).is_ok());
    }
    options.on_execute_failure = mode;
    return loaded_.program->load_method("forward", nullptr, options);
  }
  void set_input(Method& m) {
    ASSERT_TRUE(m.set_input(0, Tensor(ScalarType::Float32, {kShape, 2}, x_)).is_ok());
  }
  // relu(x): what delegate #1 computes on the portable backend, the stubs passing it through.
  void expect_relu_of_x(Method& m) {
    const float* y = static_cast<const float*>((*m.get_output(0))->data());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], x_[i] > 0 ? x_[i] : 0.0f) << i;
  }

  testing::StubBackend* other_ = nullptr;
  int failing_ = 1;
  float x_[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  testing::LoadedProgram loaded_;
};

TEST_F(ExecuteRecovery, OptionNamesParse) {
  EXPECT_EQ(*parse_on_execute_failure("fail"), OnExecuteFailure::Fail);
  EXPECT_EQ(*parse_on_execute_failure("fallback"), OnExecuteFailure::Fallback);
  Result<OnExecuteFailure> bad = parse_on_execute_failure("retry");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Error::InvalidArgument);
  EXPECT_STREQ(bad.status().message(),
               "unknown on_execute_failure 'retry' (expected fail or fallback)");
  EXPECT_EQ(LoadOptions().on_execute_failure, OnExecuteFailure::Fail);
}

TEST_F(ExecuteRecovery, FailIsTheDefaultEvenWithAFallbackChain) {
  Result<Method> m = load("portable", OnExecuteFailure::Fail);
  ASSERT_TRUE(m.ok()) << m.status().message();
  set_input(*m);
  for (int call = 0; call < 2; ++call) {
    Status st = m->execute();
    ASSERT_FALSE(st.is_ok());
    EXPECT_STREQ(st.message(),
                 "instruction 1 (delegate 'stub_fault#1' on 'stub_fault'): injected device loss");
  }
  EXPECT_STREQ(m->delegate_info(1).backend, "stub_fault");
  EXPECT_EQ(m->delegate_info(1).execute_fallbacks, 0);
}

TEST_F(ExecuteRecovery, FallbackMovesTheFailingDelegateAndRetriesTheCall) {
  Result<Method> m = load("portable", OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(backend_->live(), 3);
  set_input(*m);
  const int executes_before = backend_->execute_count();
  ASSERT_TRUE(m->execute().is_ok());
  expect_relu_of_x(*m);
  // #0 ran once, #1 failed once, #2 ran once; #1's handle on the stub was destroyed.
  EXPECT_EQ(backend_->execute_count() - executes_before, 3);
  EXPECT_EQ(backend_->live(), 2);
  const DelegateInfo& info = m->delegate_info(1);
  EXPECT_STREQ(info.backend, "portable");
  EXPECT_STREQ(info.requested_backend, "stub_fault");
  EXPECT_EQ(info.execute_fallbacks, 1);
  EXPECT_STREQ(info.execute_fallback_reason,
               "'stub_fault' execute failed: injected device loss; moved to 'portable' and "
               "retried");
  EXPECT_NE(std::strstr(info.reason, info.execute_fallback_reason), nullptr) << info.reason;
  EXPECT_NE(info.options, nullptr);
  EXPECT_NE(info.derived, nullptr);
  // The other delegates did not move.
  EXPECT_STREQ(m->delegate_info(0).backend, "stub_fault");
  EXPECT_EQ(m->delegate_info(2).execute_fallbacks, 0);
  // Later calls run on the new backend without failing again.
  x_[0] = -1;
  set_input(*m);
  ASSERT_TRUE(m->execute().is_ok());
  expect_relu_of_x(*m);
  EXPECT_EQ(backend_->execute_count() - executes_before, 5);
  EXPECT_EQ(m->delegate_info(1).execute_fallbacks, 1);
}

TEST_F(ExecuteRecovery, CandidatesThatCannotTakeTheDelegateAreSkippedAndSaid) {
  other_->available = false;
  Result<Method> m = load("stub_other,portable", OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  set_input(*m);
  ASSERT_TRUE(m->execute().is_ok());
  expect_relu_of_x(*m);
  EXPECT_STREQ(m->delegate_info(1).backend, "portable");
  EXPECT_STREQ(m->delegate_info(1).execute_fallback_reason,
               "'stub_fault' execute failed: injected device loss; 'stub_other' is not available "
               "on this machine; moved to 'portable' and retried");
  EXPECT_EQ(other_->init_count(), 0);
}

TEST_F(ExecuteRecovery, InitFailureOnTheNextBackendTriesTheOneAfter) {
  other_->on_init = [](BackendInitContext&, FreeableBuffer*,
                       Span<const CompileSpec>) -> Result<DelegateHandle*> {
    return Status(Error::DelegateUnavailable, "injected init failure");
  };
  Result<Method> m = load("stub_other,portable", OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  set_input(*m);
  ASSERT_TRUE(m->execute().is_ok());
  expect_relu_of_x(*m);
  EXPECT_STREQ(m->delegate_info(1).execute_fallback_reason,
               "'stub_fault' execute failed: injected device loss; 'stub_other' init failed: "
               "injected init failure; moved to 'portable' and retried");
}

TEST_F(ExecuteRecovery, ARetryThatFailsTooReachesTheCallerAndTheNextCallMovesOn) {
  other_->on_execute = [](BackendExecutionContext&, DelegateHandle*, Span<EValue*>) {
    return Status(Error::DelegateExecutionFailed, "other device lost too");
  };
  Result<Method> m = load("stub_other,portable", OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  set_input(*m);
  Status st = m->execute();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), Error::DelegateExecutionFailed);
  EXPECT_STREQ(st.message(),
               "instruction 1 (delegate 'stub_fault#1' on 'stub_other', retried after "
               "'stub_fault' failed): other device lost too");
  EXPECT_STREQ(m->delegate_info(1).backend, "stub_other");
  // Retried once only: the next call's failure moves it on to portable.
  ASSERT_TRUE(m->execute().is_ok());
  expect_relu_of_x(*m);
  EXPECT_STREQ(m->delegate_info(1).backend, "portable");
  EXPECT_EQ(m->delegate_info(1).execute_fallbacks, 2);
  EXPECT_EQ(other_->destroy_count(), 1);
}

TEST_F(ExecuteRecovery, NoBackendLeftGivesTheOriginalErrorAndTheMethodStaysUsable) {
  Result<Method> m = load("", OnExecuteFailure::Fallback);
  ASSERT_TRUE(m.ok()) << m.status().message();
  set_input(*m);
  Status st = m->execute();
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), Error::DelegateExecutionFailed);
  EXPECT_STREQ(st.message(),
               "instruction 1 (delegate 'stub_fault#1' on 'stub_fault'; no fallback backend "
               "left): injected device loss");
  EXPECT_STREQ(m->delegate_info(1).backend, "stub_fault");
  EXPECT_EQ(m->delegate_info(1).execute_fallbacks, 0);
  failing_ = -1;  // the device recovers
  ASSERT_TRUE(m->execute().is_ok());
  const float* y = static_cast<const float*>((*m->get_output(0))->data());
  EXPECT_EQ(std::memcmp(y, x_, sizeof x_), 0);
}

TEST_F(ExecuteRecovery, AllocationFailuresWhilePreparingRecoveryLeakNothing) {
  LoadOptions options;
  ASSERT_TRUE(options.set_fallback("stub_other,portable").is_ok());
  options.on_execute_failure = OnExecuteFailure::Fallback;
  AllocationCounter reference;
  {
    FailingAllocator memory(&reference);
    MemoryManager mm(&memory);
    ASSERT_TRUE(loaded_.program->load_method("forward", &mm, options).ok());
  }
  for (long k = 1; k <= reference.calls; ++k) {
    AllocationCounter counter;
    counter.fail_at = k;
    FailingAllocator memory(&counter);
    MemoryManager mm(&memory);
    Result<Method> m = loaded_.program->load_method("forward", &mm, options);
    ASSERT_FALSE(m.ok()) << k;
    EXPECT_EQ(m.status().code(), Error::MemoryAllocationFailed) << m.status().message();
    EXPECT_EQ(backend_->live(), 0) << k;
  }
}

}  // namespace
}  // namespace tessera
