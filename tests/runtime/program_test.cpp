#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <unistd.h>

#include "tessera/core/heap_allocator.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

using testing::AlignedBuffer;

TEST(Program, RoundTripThroughBuilderAndBuffer) {
  auto bytes = testing::add_relu_mul_program().build();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  EXPECT_EQ(program->num_methods(), 1u);
  EXPECT_EQ(*program->method_name(0), "forward");
  EXPECT_EQ(program->method_name(1).error(), Error::NotFound);

  auto method = program->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_EQ(method->inputs_size(), 1u);
  EXPECT_EQ(method->outputs_size(), 1u);
  EXPECT_EQ(method->input_name(0), "x");
  EXPECT_EQ(method->output_name(0), "y");

  float x[8] = {0, 1, -2, 5, 3, -4, 1, 4};
  int64_t sizes[] = {2, 4};
  ASSERT_TRUE(method->set_input(0, Tensor(ScalarType::Float32, sizes, x)).is_ok());
  Status st = method->execute();
  ASSERT_TRUE(st.is_ok()) << st.message();
  auto out = method->get_output(0);
  ASSERT_TRUE(out.ok());
  float want[8];
  testing::add_relu_mul_reference(x, want, 2);
  ASSERT_EQ((*out)->numel(), 8);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ((*out)->data_as<float>()[i], want[i]) << i;
}

TEST(Program, MmapLoaderAndConstantsInPlace) {
  std::string path = ::testing::TempDir() + "/tessera_program_test.tsr";
  ASSERT_TRUE(testing::add_relu_mul_program().write(path).is_ok());
  auto loader = MmapDataLoader::from(path.c_str());
  ASSERT_TRUE(loader.ok()) << loader.status().message();
  auto program = Program::load(&*loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  Span<const uint8_t> c = program->constant(0);
  ASSERT_EQ(c.size(), 16u);
  // The constant is a view into the mapping, not a copy.
  EXPECT_GE(c.data(), loader->data().data());
  EXPECT_LT(c.data(), loader->data().data() + loader->data().size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.data()) % 64, 0u);
  EXPECT_TRUE(program->constant(7).empty());
  std::remove(path.c_str());
}

TEST(Program, MissingFileAndUnknownMethod) {
  auto loader = MmapDataLoader::from("/nonexistent/model.tsr");
  EXPECT_EQ(loader.error(), Error::NotFound);
  auto bytes = testing::add_relu_mul_program().build();
  AlignedBuffer buf(*bytes);
  BufferDataLoader bl(buf.data(), buf.size());
  auto program = Program::load(&bl);
  ASSERT_TRUE(program.ok());
  auto m = program->load_method("backward");
  EXPECT_EQ(m.error(), Error::NotFound);
  EXPECT_STREQ(m.status().message(), "no method 'backward' in the program (it has 'forward')");
}

TEST(Program, SymbolicBatchResolvedAtLoad) {
  auto bytes = testing::add_relu_mul_program(/*symbolic=*/true).build();
  ASSERT_TRUE(bytes.ok());
  AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();

  auto missing = program->load_method("forward");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), Error::InvalidArgument);
  EXPECT_NE(std::string(missing.status().message()).find("--dim batch=N"), std::string::npos);

  LoadOptions too_big;
  ASSERT_TRUE(too_big.set_dim("batch", 9).is_ok());
  auto big = program->load_method("forward", nullptr, too_big);
  EXPECT_EQ(big.error(), Error::InvalidArgument);
  EXPECT_NE(std::string(big.status().message()).find("outside the bounds [1, 8]"), std::string::npos);

  LoadOptions unknown;
  ASSERT_TRUE(unknown.set_dim("seq", 3).is_ok());
  EXPECT_EQ(program->load_method("forward", nullptr, unknown).error(), Error::InvalidArgument);

  for (int64_t batch : {1, 3, 8}) {
    LoadOptions opts;
    ASSERT_TRUE(opts.set_dim("batch", batch).is_ok());
    auto m = program->load_method("forward", nullptr, opts);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(*m->symbol_value("batch"), batch);
    auto in = m->input(0);
    ASSERT_TRUE(in.ok());
    EXPECT_EQ((*in)->size(0), batch);
    std::vector<float> x(batch * 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 5.0f;
    int64_t sizes[] = {batch, 4};
    ASSERT_TRUE(m->set_input(0, Tensor(ScalarType::Float32, sizes, x.data())).is_ok());
    int64_t wrong[] = {batch + 1, 4};
    EXPECT_EQ(m->set_input(0, Tensor(ScalarType::Float32, wrong, x.data())).code(), Error::ShapeMismatch);
    ASSERT_TRUE(m->execute().is_ok());
    std::vector<float> want(x.size());
    testing::add_relu_mul_reference(x.data(), want.data(), batch);
    const Tensor* out = *m->get_output(0);
    ASSERT_EQ(out->size(0), batch);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(out->data_as<float>()[i], want[i]);
  }
}

TEST(Program, SetInputChecksDtypeAndIndex) {
  auto bytes = testing::add_relu_mul_program().build();
  AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  auto m = program->load_method("forward");
  ASSERT_TRUE(m.ok());
  int32_t xi[8] = {};
  int64_t sizes[] = {2, 4};
  Status st = m->set_input(0, Tensor(ScalarType::Int32, sizes, xi));
  EXPECT_EQ(st.code(), Error::InvalidType);
  EXPECT_STREQ(st.message(), "input 0 ('x') is float32, got int32");
  EXPECT_EQ(m->set_input(3, Tensor(ScalarType::Float32, sizes, xi)).code(), Error::NotFound);
  EXPECT_EQ(m->get_output(1).error(), Error::NotFound);
}

TEST(Program, CallerProvidedMemory) {
  auto bytes = testing::add_relu_mul_program().build();
  AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  alignas(64) static uint8_t method_pool[16 * 1024];
  alignas(64) static uint8_t arena_pool[1024];
  MemoryAllocator method_alloc(method_pool, sizeof method_pool);
  MemoryAllocator arena_alloc(arena_pool, sizeof arena_pool);
  MemoryManager mm(&method_alloc, &arena_alloc);
  auto m = program->load_method("forward", &mm);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_GT(arena_alloc.used(), 0u);
  auto in = m->input(0);
  EXPECT_GE(static_cast<uint8_t*>((*in)->data()), arena_pool);
  EXPECT_LT(static_cast<uint8_t*>((*in)->data()), arena_pool + sizeof arena_pool);

  // Too little memory is an error, not a crash.
  alignas(64) static uint8_t tiny_pool[128];
  MemoryAllocator tiny(tiny_pool, sizeof tiny_pool);
  MemoryManager small(&tiny);
  EXPECT_EQ(program->load_method("forward", &small).error(), Error::MemoryAllocationFailed);
}

TEST(Program, MisalignedBufferRejected) {
  auto bytes = testing::add_relu_mul_program().build();
  std::vector<uint8_t> shifted(bytes->size() + 1);
  AlignedBuffer buf(shifted);
  std::copy(bytes->begin(), bytes->end(), buf.data() + 1);
  BufferDataLoader loader(buf.data() + 1, bytes->size());
  EXPECT_EQ(Program::load(&loader).error(), Error::InvalidArgument);
}

TEST(Program, TwoMethodsFromOneProgram) {
  auto bytes = testing::add_relu_mul_program().build();
  AlignedBuffer buf(*bytes);
  BufferDataLoader loader(buf.data(), buf.size());
  auto program = Program::load(&loader);
  auto a = program->load_method("forward");
  auto b = program->load_method("forward");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a->input(0))->data(), (*b->input(0))->data());  // separate arenas
  Method moved = std::move(*a);
  EXPECT_EQ(moved.name(), "forward");
}

}  // namespace
}  // namespace tessera
