// Measured selection (LoadOptions::selection = measure) with stub backends: the fastest
// candidate that matches the program's backend runs the delegate; wrong outputs, unsupported
// ops and failed inits are reported, not silently dropped; the budget cuts the search.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

constexpr const char* kStubs[] = {"sel_slow", "sel_fast", "sel_wrong", "sel_picky", "sel_broken"};

class SelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kStubs) {
      auto* stub = new testing::StubBackend();
      const std::string n = name;
      if (n == "sel_slow") {
        stub->on_execute = [](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
          std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(),
                      args[0]->to_tensor().nbytes());
          return Status::ok();
        };
      } else if (n == "sel_wrong") {
        stub->on_execute = [](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
          std::memset(args[1]->to_tensor().data(), 0, args[1]->to_tensor().nbytes());
          return Status::ok();
        };
      } else if (n == "sel_picky") {
        stub->on_supports_op = [](const OpView&) { return false; };
      } else if (n == "sel_broken") {
        stub->on_init = [](BackendInitContext&, FreeableBuffer*,
                           Span<const CompileSpec>) -> Result<DelegateHandle*> {
          return Status(Error::DelegateInvalidCompatibility, "no such device today");
        };
      }
      stubs_[n] = stub;
      ASSERT_TRUE(register_backend(name, std::unique_ptr<BackendInterface>(stub)).is_ok());
    }
    auto loaded = testing::load_built_program(testing::delegate_chain_program({"sel_slow"}));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    loaded_ = std::move(*loaded);
    program_ = loaded_.program.get();
  }
  void TearDown() override {
    loaded_ = testing::LoadedProgram{};
    for (const char* name : kStubs) (void)unregister_backend(name);
  }

  static LoadOptions measuring(const char* candidates) {
    LoadOptions o;
    o.selection = Selection::Measure;
    o.selection_cache_dir = "";  // nothing remembered (selection_cache_test covers the cache)
    EXPECT_TRUE(o.set_selection_candidates(candidates).is_ok());
    return o;
  }
  static const SelectionCandidate* candidate(const DelegateInfo& info, const char* backend) {
    for (size_t i = 0; i < info.selection.num_candidates; ++i) {
      if (std::string(info.selection.candidates[i].backend) == backend) {
        return &info.selection.candidates[i];
      }
    }
    return nullptr;
  }

  std::map<std::string, testing::StubBackend*> stubs_;
  testing::LoadedProgram loaded_;
  Program* program_ = nullptr;
};

TEST_F(SelectionTest, MeasureKeepsTheFastestCandidateThatMatches) {
  const LoadOptions o = measuring("sel_fast,sel_wrong,sel_picky,sel_broken");
  auto m = program_->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "sel_fast");
  EXPECT_STREQ(info.requested_backend, "sel_slow");
  EXPECT_STREQ(info.selection.mode, "measure");
  EXPECT_FALSE(info.selection.cached);
  ASSERT_EQ(info.selection.num_candidates, 5u);

  const SelectionCandidate* slow = candidate(info, "sel_slow");
  ASSERT_NE(slow, nullptr);
  EXPECT_TRUE(slow->accepted);
  EXPECT_FALSE(slow->chosen);
  EXPECT_STREQ(slow->reason, "reference");
  EXPECT_GE(slow->median_ms, 3.0);
  EXPECT_GT(slow->runs, 0);
  const SelectionCandidate* fast = candidate(info, "sel_fast");
  ASSERT_NE(fast, nullptr);
  EXPECT_TRUE(fast->accepted);
  EXPECT_TRUE(fast->chosen);
  EXPECT_LT(fast->median_ms, slow->median_ms);
  const SelectionCandidate* wrong = candidate(info, "sel_wrong");
  ASSERT_NE(wrong, nullptr);
  EXPECT_FALSE(wrong->accepted);
  EXPECT_NE(std::string(wrong->reason).find("outputs differ"), std::string::npos) << wrong->reason;
  EXPECT_NE(std::string(candidate(info, "sel_picky")->reason).find("does not support op 'Relu'"),
            std::string::npos);
  EXPECT_NE(std::string(candidate(info, "sel_broken")->reason).find("init failed: no such device"),
            std::string::npos);
  EXPECT_EQ(std::string(info.selection.summary).rfind("measured: sel_fast", 0), 0u)
      << info.selection.summary;
  EXPECT_NE(std::string(info.reason).find("measured: sel_fast"), std::string::npos) << info.reason;

  // Every candidate initialised for the measurement was destroyed; the chosen one was then
  // initialised again to run the delegate.
  EXPECT_EQ(stubs_["sel_slow"]->destroy_count(), 1);
  EXPECT_EQ(stubs_["sel_wrong"]->destroy_count(), 1);
  EXPECT_EQ(stubs_["sel_fast"]->init_count(), 2);
  EXPECT_EQ(stubs_["sel_fast"]->destroy_count(), 1);

  // And it runs: the identity of the input.
  float x[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  const int64_t sizes[] = {2, 4};
  ASSERT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  ASSERT_TRUE(m->execute().is_ok());
  const Tensor* y = *m->get_output(0);
  EXPECT_EQ(std::memcmp(y->data(), x, sizeof x), 0);
}

TEST_F(SelectionTest, FixedAndAutoRunTheProgramsBackendWithoutMeasuring) {
  for (Selection mode : {Selection::Auto, Selection::Fixed}) {
    LoadOptions o;
    o.selection = mode;
    auto m = program_->load_method("forward", nullptr, o);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_STREQ(m->delegate_info(0).backend, "sel_slow");
    EXPECT_STREQ(m->delegate_info(0).selection.mode, "fixed");
    EXPECT_EQ(m->delegate_info(0).selection.num_candidates, 0u);
    EXPECT_STREQ(m->delegate_info(0).selection.summary, "");
  }
  EXPECT_EQ(stubs_["sel_fast"]->init_count(), 0);
}

TEST_F(SelectionTest, AnExhaustedBudgetSkipsTheRestAndSaysSo) {
  LoadOptions o = measuring("sel_fast");
  o.selection_budget_ms = 0;
  auto m = program_->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const DelegateInfo& info = m->delegate_info(0);
  EXPECT_STREQ(info.backend, "sel_slow");  // the program's backend is always measured
  const SelectionCandidate* fast = candidate(info, "sel_fast");
  ASSERT_NE(fast, nullptr);
  EXPECT_FALSE(fast->accepted);
  EXPECT_NE(std::string(fast->reason).find("skipped (budget"), std::string::npos) << fast->reason;
  EXPECT_NE(std::string(info.selection.summary).find("sel_fast skipped (budget"), std::string::npos)
      << info.selection.summary;
  EXPECT_EQ(stubs_["sel_fast"]->init_count(), 0);
}

TEST_F(SelectionTest, ARetargetWinsOverMeasuring) {
  LoadOptions o = measuring("sel_slow");
  ASSERT_TRUE(o.add_retarget("sel_slow", "sel_wrong").is_ok());
  auto m = program_->load_method("forward", nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_STREQ(m->delegate_info(0).backend, "sel_wrong");
  EXPECT_EQ(m->delegate_info(0).selection.num_candidates, 0u);
}

TEST_F(SelectionTest, BadSettingsAreClearErrors) {
  LoadOptions unknown = measuring("sel_fast,no_such_backend");
  auto m = program_->load_method("forward", nullptr, unknown);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("selection candidates"), std::string::npos)
      << m.status().message();
  EXPECT_NE(std::string(m.status().message()).find("no_such_backend"), std::string::npos);

  LoadOptions tolerance;
  tolerance.selection = Selection::Measure;
  tolerance.selection_tolerance = -1;
  m = program_->load_method("forward", nullptr, tolerance);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Error::InvalidArgument);
  EXPECT_NE(std::string(m.status().message()).find("tolerance"), std::string::npos);

  LoadOptions list;
  EXPECT_EQ(list.set_selection_candidates("a,,b").code(), Error::InvalidArgument);
  EXPECT_EQ(list.set_selection_candidates("a,a").code(), Error::InvalidArgument);
  EXPECT_EQ(list.set_selection_candidates("a,").code(), Error::InvalidArgument);
  EXPECT_EQ(list.selection_candidates_size(), 0u);  // nothing changed by the failures
  ASSERT_TRUE(list.set_selection_candidates("a, b").is_ok());
  EXPECT_EQ(list.selection_candidate(1), "b");

  EXPECT_EQ(*parse_selection("measure"), Selection::Measure);
  Result<Selection> bad = parse_selection("fastest");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("auto, fixed or measure"), std::string::npos);
}

}  // namespace
}  // namespace tessera
