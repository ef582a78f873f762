// Program files the program_load fuzz target (fuzz/program_load.cpp) found crashing the loader,
// kept in fuzz/corpus/program_load/regression-*: each must now load or fail cleanly, run as the
// target runs it (every delegate retargeted to the portable backend).
#include <gtest/gtest.h>

#include <cstring>
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

// Regression input `name` of the program_load corpus, given to Program::load from an aligned
// buffer that lives as long as the program (`found` false when the input is missing).
struct RegressionInput {
  explicit RegressionInput(const char* name)
      : bytes(testing::read_fuzz_input("program_load", name)),
        buffer(bytes),
        loader(buffer.data(), buffer.size()),
        program(Program::load(&loader)) {}
  bool found() const { return !bytes.empty(); }

  std::vector<uint8_t> bytes;
  testing::AlignedBuffer buffer;
  BufferDataLoader loader;
  Result<Program> program;
};

// Loads regression input `name`: Program::load must refuse it with InvalidProgram and a message
// containing `needle`.
::testing::AssertionResult refused_as_invalid(const char* name, const char* needle) {
  const RegressionInput input(name);
  if (!input.found()) return ::testing::AssertionFailure() << "no input " << name;
  const Result<Program>& program = input.program;
  if (program.ok()) return ::testing::AssertionFailure() << name << " loaded";
  if (program.error() != Error::InvalidProgram ||
      std::string(program.status().message()).find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << name << ": " << error_name(program.error()) << ": " << program.status().message();
  }
  return ::testing::AssertionSuccess();
}

// A method whose instruction chain is absent (the FlatBuffers field left out, not empty): the
// loader dereferenced the missing vector (UBSan: reference binding to null pointer).
TEST(FuzzRegression, MethodWithoutChainLoadsAsAnEmptyMethod) {
  RegressionInput input("regression-method-without-chain");
  ASSERT_TRUE(input.found());
  Result<Program>& program = input.program;
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
  EXPECT_TRUE(refused_as_invalid("regression-kernel-input-not-a-tensor", "is not a tensor"));
}

// A delegate payload whose Add node read a value that nothing defines (not a graph input or
// output, not a constant, no earlier node's output): the portable backend gave it no storage
// and the kernel read through a null pointer. The verifier now rejects such payloads.
TEST(FuzzRegression, PayloadNodeReadingAnUndefinedValueIsInvalid) {
  EXPECT_TRUE(refused_as_invalid("regression-payload-reads-undefined-value", "before anything defines it"));
}

// A tensor with a 0 dim (so 0 bytes, which passed the size check) and other dims whose product
// overflows int64: Transpose's prepare computed strides over them (UBSan: signed integer
// overflow). The verifier now bounds the product of the non-zero dims like a tensor's size.
TEST(FuzzRegression, ZeroSizedTensorWithHugeDimsIsInvalid) {
  EXPECT_TRUE(refused_as_invalid("regression-zero-sized-tensor-with-huge-dims", "is too large"));
}

// A delegate whose payload field is absent: the verifier called the generated
// payload_nested_root(), which dereferences the payload vector (UBSan: member call on null).
TEST(FuzzRegression, DelegateWithoutPayloadIsInvalid) {
  EXPECT_TRUE(refused_as_invalid("regression-delegate-without-payload", "has no payload"));
}

// A copy kernel (Identity/Reshape) whose input and output the program's memory plan placed
// partly over each other: the copy was a memcpy of overlapping ranges (ASan:
// memcpy-param-overlap). The kernel was made to use memmove; the verifier now refuses any step
// whose output shares arena bytes with one of its inputs or another of its outputs.
TEST(FuzzRegression, CopyBetweenOverlappingTensorsIsInvalid) {
  EXPECT_TRUE(
      refused_as_invalid("regression-copy-between-overlapping-tensors", "shares arena bytes"));
}

// The same with a one-input Max, whose kernel copies its input to its output with memcpy (ASan:
// memcpy-param-overlap in run_arith): every kernel would have needed its own memmove.
TEST(FuzzRegression, ArithmeticOutputOverlappingItsInputIsInvalid) {
  EXPECT_TRUE(refused_as_invalid("regression-output-overlaps-input", "shares arena bytes"));
}

// A delegate payload whose symbolic dim evaluated, at the dim values the load gave, to far above
// the bound the verifier had checked the tensor's size with (7.9e18 in a dim bounded by
// 4): the portable backend's init multiplied the dims (UBSan: signed integer overflow in
// Tensor::numel). PayloadGraph::make now holds every evaluated dim to its bound.
TEST(FuzzRegression, PayloadDimAboveItsBoundIsInvalidAtLoad) {
  RegressionInput input("regression-payload-dim-above-its-bound");
  ASSERT_TRUE(input.found());
  Result<Program>& program = input.program;
  ASSERT_TRUE(program.ok()) << program.status().message();
  // As the fuzz target loads it: every delegate on the portable backend, each symbol at its
  // upper bound.
  LoadOptions options;
  for (const char* backend : {"xnnpack", "onednn", "opencl", "armnn"}) {
    ASSERT_TRUE(options.add_retarget(backend, "portable").is_ok());
  }
  ASSERT_TRUE(options.set_fallback("portable").is_ok());
  bool refused = false;
  for (size_t m = 0; m < program->num_methods(); ++m) {
    Result<std::string_view> name = program->method_name(m);
    ASSERT_TRUE(name.ok());
    LoadOptions with_dims = options;
    const fb::Method* method = program->find_method(*name);
    if (method != nullptr && method->symbols() != nullptr) {
      for (const fb::Symbol* symbol : *method->symbols()) {
        (void)with_dims.set_dim(symbol->name()->string_view(), symbol->max());
      }
    }
    Result<Method> loaded = program->load_method(*name, nullptr, with_dims);
    if (loaded.ok()) continue;
    EXPECT_EQ(loaded.error(), Error::InvalidProgram) << loaded.status().message();
    EXPECT_NE(std::string(loaded.status().message()).find("above its bound"), std::string::npos)
        << loaded.status().message();
    refused = true;
  }
  EXPECT_TRUE(refused);
}

}  // namespace
}  // namespace tessera
