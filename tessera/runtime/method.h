// Method: one loaded method of a Program, ready to execute. Made by Program::load_method.
// Used by one thread at a time; several Methods (of one Program or not) run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "tessera/backend/policy.h"
#include "tessera/core/evalue.h"
#include "tessera/core/memory_manager.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/core/tensor.h"
#include "tessera/runtime/delegate_info.h"

namespace tessera::fb {
struct Method;  // generated (tessera/ir/schema.h); declared only, see program.h
}  // namespace tessera::fb

namespace tessera {

class Program;
class HeapMemoryAllocator;
class ExecuteOptions;
class ProfileBuffer;
struct LoadOptions;

namespace internal {
struct MethodState;
}

class Method {
 public:
  Method(Method&& other) noexcept;
  Method& operator=(Method&& other) noexcept;
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;
  /// Destroys every delegate handle; frees memory the Method owns.
  ~Method();

  std::string_view name() const;
  size_t inputs_size() const;
  size_t outputs_size() const;
  std::string_view input_name(size_t index) const;
  std::string_view output_name(size_t index) const;

  /// The input's dtype and resolved sizes; its data points at the input's arena slot, which a
  /// caller may fill in place instead of calling set_input. NotFound past the end.
  Result<Tensor*> input(size_t index);
  /// Copies `value` into input `index`. Errors: NotFound (index), InvalidType (dtype),
  /// ShapeMismatch (sizes differ from the resolved input shape; the message gives both).
  Status set_input(size_t index, const Tensor& value);
  /// Runs the instruction chain. Allocates nothing on the heap. Errors name the failing
  /// instruction (node or delegate id).
  Status execute();
  /// Same, with per-call options for backends that declare execute-scoped keys. Each option is
  /// validated (scope, type, range) against its backend's schema; options for a backend that
  /// runs no delegate of this method are an error. Backends report timed events (such as
  /// per-operator profiles) into `profile` when given.
  Status execute(const ExecuteOptions& options, ProfileBuffer* profile = nullptr);
  /// Output `index`, valid until the next execute() or the Method's destruction.
  Result<const Tensor*> get_output(size_t index) const;

  /// Resolved value of symbolic dim `name`; NotFound if the method has no such symbol.
  Result<int64_t> symbol_value(std::string_view name) const;
  /// Delegates in chain order, with the backend that runs each and its effective options.
  size_t num_delegates() const;
  const DelegateInfo& delegate_info(size_t index) const;

  /// LoadOptions::startup_backend: waits until every delegate's background init has finished,
  /// at most `timeout_ms` (< 0: no limit), and moves those that succeeded to their own backend
  /// now (execute does so too, at its start). A failed init leaves its delegate on the startup
  /// backend, with the reason in DelegateInfo::startup. Returns true when no init is pending.
  /// Like execute, called by the thread using the Method; allocates nothing.
  bool wait_for_startup(double timeout_ms = -1);

  /// The policy this Method was loaded under and the values derived from it.
  const PolicyDecision& policy() const;

  size_t arena_bytes() const;
  size_t num_instructions() const;

 private:
  friend class Program;
  Method() = default;
  static Result<Method> load(const Program& program, const fb::Method* method,
                             MemoryManager* memory, const LoadOptions& options);
  void release();

  std::unique_ptr<HeapMemoryAllocator> owned_allocator_;
  internal::MethodState* state_ = nullptr;  // lives in the method allocator
};

}  // namespace tessera
