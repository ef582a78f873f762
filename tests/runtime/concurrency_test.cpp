// Global options set from one thread while others load and execute: every load sees all of one
// update or none of it. Run under ThreadSanitizer by scripts/test.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/context.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/registry.h"
#include "tessera/backend/testing/stub_backend.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

int g_handle_target = 0;  // what the stubs' handles point at

constexpr OptionSpec kSchema[] = {
    OptionSpec::integer(OptionKey<int64_t>{"a"}, 0, 0, 1 << 30, kInitScopes,
                        "first half of an update"),
    OptionSpec::integer(OptionKey<int64_t>{"b"}, 0, 0, 1 << 30, kInitScopes,
                        "second half of an update"),
};
constexpr OptionKey<int64_t> kA{"a"};
constexpr OptionKey<int64_t> kB{"b"};

TEST(RuntimeConcurrency, LoadsSeeWholeGlobalUpdatesWhileOthersExecute) {
  testing::StubBackend stub(kSchema);
  std::atomic<int> torn{0}, inits{0};
  stub.on_init = [&](BackendInitContext& ctx, FreeableBuffer*, Span<const CompileSpec>) -> Result<DelegateHandle*> {
    if (*ctx.get(kA) != *ctx.get(kB)) torn.fetch_add(1);
    inits.fetch_add(1);
    return to_handle(&g_handle_target);  // nothing to free
  };
  stub.on_execute = [](BackendExecutionContext&, DelegateHandle*, Span<EValue*> args) {
    std::memcpy(args[1]->to_tensor().data(), args[0]->to_tensor().data(), args[0]->to_tensor().nbytes());
    return Status::ok();
  };
  ASSERT_TRUE(register_backend("stub_conc", &stub).is_ok());
  auto bytes = testing::delegate_chain_program({"stub_conc", "portable"}).build();
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);  // shared by every thread
  ASSERT_TRUE(program.ok());

  std::atomic<bool> stop{false};
  std::thread setter([&] {
    for (int64_t k = 1; !stop.load(); ++k) {
      BackendOptions<2> update;
      ASSERT_TRUE(update.set(kA, k).is_ok());
      ASSERT_TRUE(update.set(kB, k).is_ok());
      ASSERT_TRUE(set_option("stub_conc", update.view()).is_ok());
    }
  });
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        auto m = program->load_method("forward");
        if (!m.ok()) {
          failures.fetch_add(1);
          continue;
        }
        float x[8];
        for (int k = 0; k < 8; ++k) x[k] = static_cast<float>(k - 4 + t);
        int64_t sizes[] = {2, 4};
        if (!m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok()) failures.fetch_add(1);
        for (int r = 0; r < 5; ++r) {
          if (!m->execute().is_ok()) failures.fetch_add(1);
          const float* y = (*m->get_output(0))->data_as<float>();
          for (int k = 0; k < 8; ++k) {
            if (y[k] != (x[k] > 0 ? x[k] : 0)) failures.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  stop = true;
  setter.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(inits.load(), 120);
  (void)unregister_backend("stub_conc");
}

}  // namespace
}  // namespace tessera
