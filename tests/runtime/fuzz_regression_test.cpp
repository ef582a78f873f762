// Program files the program_load fuzz target (fuzz/program_load.cpp) found crashing the loader,
// kept in fuzz/corpus/program_load/regression-*: each must now load or fail cleanly, run as the
// target runs it (every delegate retargeted to the portable backend).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/runtime/data_loader.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"
#include "tests/testing/fuzz_inputs.h"
#include "tests/testing/test_programs.h"

namespace tessera {
namespace {

// A method whose instruction chain is absent (the FlatBuffers field left out, not empty): the
// loader dereferenced the missing vector (UBSan: reference binding to null pointer).
TEST(FuzzRegression, MethodWithoutChainLoadsAsAnEmptyMethod) {
  const std::vector<uint8_t> bytes =
      testing::read_fuzz_input("program_load", "regression-method-without-chain");
  ASSERT_FALSE(bytes.empty());
  testing::AlignedBuffer buffer(bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << program.status().message();
  ASSERT_EQ(program->num_methods(), 1u);
  Result<std::string_view> name = program->method_name(0);
  ASSERT_TRUE(name.ok());
  LoadOptions options;
  ASSERT_TRUE(options.set_fallback("portable").is_ok());
  Result<Method> method = program->load_method(*name, nullptr, options);
  ASSERT_TRUE(method.ok()) << method.status().message();
  EXPECT_EQ(method->num_instructions(), 0u);
  EXPECT_TRUE(method->execute().is_ok());
}

// A kernel node whose input was an Int value, not a tensor: the loader bound the Int's storage
// as a Tensor and the Add kernel read through a garbage data pointer (UBSan: misaligned load of
// 0xbebebebebebebebe). The verifier now requires kernel inputs and outputs to be tensors.
TEST(FuzzRegression, KernelInputThatIsNotATensorIsInvalid) {
  const std::vector<uint8_t> bytes =
      testing::read_fuzz_input("program_load", "regression-kernel-input-not-a-tensor");
  ASSERT_FALSE(bytes.empty());
  testing::AlignedBuffer buffer(bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(program.status().message()).find("is not a tensor"), std::string::npos)
      << program.status().message();
}

// A delegate payload whose Add node read a value that nothing defines (not a graph input or
// output, not a constant, no earlier node's output): the portable backend gave it no storage
// and the kernel read through a null pointer. The verifier now rejects such payloads.
TEST(FuzzRegression, PayloadNodeReadingAnUndefinedValueIsInvalid) {
  const std::vector<uint8_t> bytes =
      testing::read_fuzz_input("program_load", "regression-payload-reads-undefined-value");
  ASSERT_FALSE(bytes.empty());
  testing::AlignedBuffer buffer(bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(program.status().message()).find("before anything defines it"),
            std::string::npos)
      << program.status().message();
}

// A tensor with a 0 dim (so 0 bytes, which passed the size check) and other dims whose product
// overflows int64: Transpose's prepare computed strides over them (UBSan: signed integer
// overflow). The verifier now bounds the product of the non-zero dims like a tensor's size.
TEST(FuzzRegression, ZeroSizedTensorWithHugeDimsIsInvalid) {
  const std::vector<uint8_t> bytes =
      testing::read_fuzz_input("program_load", "regression-zero-sized-tensor-with-huge-dims");
  ASSERT_FALSE(bytes.empty());
  testing::AlignedBuffer buffer(bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(program.status().message()).find("is too large"), std::string::npos)
      << program.status().message();
}

// A delegate whose payload field is absent: the verifier called the generated
// payload_nested_root(), which dereferences the payload vector (UBSan: member call on null).
TEST(FuzzRegression, DelegateWithoutPayloadIsInvalid) {
  const std::vector<uint8_t> bytes =
      testing::read_fuzz_input("program_load", "regression-delegate-without-payload");
  ASSERT_FALSE(bytes.empty());
  testing::AlignedBuffer buffer(bytes);
  BufferDataLoader loader(buffer.data(), buffer.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  EXPECT_NE(std::string(program.status().message()).find("has no payload"), std::string::npos)
      << program.status().message();
}

}  // namespace
}  // namespace tessera
