// One program, its CPU delegates run on XNNPACK or on oneDNN, chosen at load time: delegates
// compiled for "xnnpack" retargeted to "onednn" (and the other way), with the same results.
#include <gtest/gtest.h>

#include "tessera/backend/registry.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

std::vector<float> run(const Program& program, const LoadOptions& options, std::string* backend) {
  auto m = program.load_method("forward", nullptr, options);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  float x[8] = {-1, 2, -3, 4, 5, -6, 7, -8};
  int64_t sizes[] = {2, 4};
  EXPECT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  EXPECT_TRUE(m->execute().is_ok());
  *backend = m->delegate_info(0).backend;
  const Tensor* y = *m->get_output(0);
  return std::vector<float>(y->data_as<float>(), y->data_as<float>() + y->numel());
}

TEST(OnednnRetarget, XnnpackDelegatesRunOnOnednnAtLoad) {
  if (!get_backend("xnnpack").ok()) GTEST_SKIP() << "xnnpack backend not built";
  auto bytes = testing::delegate_chain_program({"xnnpack"}).build();
  testing::AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok());

  std::string on_xnnpack, on_onednn;
  std::vector<float> a = run(*program, LoadOptions(), &on_xnnpack);
  LoadOptions retarget;
  ASSERT_TRUE(retarget.add_retarget("xnnpack", "onednn").is_ok());
  std::vector<float> b = run(*program, retarget, &on_onednn);
  EXPECT_EQ(on_xnnpack, "xnnpack");
  EXPECT_EQ(on_onednn, "onednn");
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
  for (int i = 0; i < 8; ++i) EXPECT_GE(a[i], 0.0f);
}

}  // namespace
}  // namespace tessera
