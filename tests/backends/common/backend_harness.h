// The backend conformance harness shared by every backend's tests: build a small portable-IR
// graph, run it as one delegate through a registered backend (init/execute/destroy with
// hand-made contexts, as the runtime does), and run the same graph node by node with the
// portable reference kernels. Each backend's tests wrap it in tests/backends/<name>/harness.h.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/backend/context.h"
#include "tessera/backend/execute_options.h"
#include "tessera/backend/interface.h"
#include "tessera/backend/options_map.h"
#include "tessera/backend/profile_buffer.h"
#include "tessera/core/heap_allocator.h"
#include "tessera/core/result.h"
#include "tessera/ir/graph.h"

namespace tessera::backend_testing {

/// The data of one tensor. A float32 tensor holds its values; a tensor of another dtype holds its
/// raw bytes, little-endian, in ceil(nbytes / 4) words (the rest zero).
using Floats = std::vector<float>;

/// A graph under test. Values are float32 unless given a dtype; constants keep their data here.
class GraphCase {
 public:
  /// Declares a symbol with its concrete value for this run.
  int symbol(const std::string& name, int64_t max, int64_t value);
  int input(std::vector<ir::Dim> dims, ScalarType dtype = ScalarType::Float32);
  /// A float32 constant; random in [-1, 1] when `data` is empty.
  int constant(std::vector<int64_t> dims, Floats data = {});
  /// A constant of integer or bool `dtype` holding `values` (wrapped to the dtype).
  int constant_ints(std::vector<int64_t> dims, ScalarType dtype,
                    const std::vector<int64_t>& values);
  int tensor(std::vector<ir::Dim> dims, ScalarType dtype = ScalarType::Float32);
  void output(int value) { graph.outputs.push_back(value); }
  /// Adds a node; returns it for attributes.
  ir::Node& node(fb::OpType op, std::vector<int> inputs, int output);

  /// Shorthand: one node over fresh graph inputs (dims `in`) and constants; output dims `out`.
  static GraphCase single(fb::OpType op, std::vector<std::vector<int64_t>> in,
                          std::vector<int64_t> out);

  /// Concrete dims of value `v` (symbols at their values).
  std::vector<int64_t> dims_of(int v) const;

  ir::Graph graph;
  std::vector<Floats> constants;  // by program constant index
  std::vector<int64_t> symbol_values;
  uint32_t seed = 1;
  /// Random integer inputs are drawn from [int_lo, int_hi]; bool inputs are 0 or 1.
  int64_t int_lo = -4, int_hi = 4;
};

/// Words of a Floats buffer holding `numel` elements of `dtype`.
size_t words_of(ScalarType dtype, int64_t numel);

/// Options for one run through the backend.
struct RunOptions {
  const LoadBackendOptionsMap* load = nullptr;
  const DelegateOptionsMap* delegates = nullptr;
  std::vector<CompileSpec> compile_specs;
  const ExecuteOptions* execute = nullptr;
  ProfileBuffer* profile = nullptr;
  int repeat = 1;
  std::string delegate_id;  // empty: "<backend>#0"
  /// The load's policy decision as the runtime would pass it; null: the context's fallback.
  const PolicyDecision* policy = nullptr;
  /// BackendInitContext::cpu_pool_peers: other CPU pool backends of the (imagined) method.
  std::vector<std::string_view> cpu_pool_peers;
  /// BackendInitContext::method_instance: sessions given the same nonzero value are delegates
  /// of one (imagined) Method.
  uint64_t method_instance = 0;
  /// Lists the constants the backend releases at init (BackendInitContext::release_constant);
  /// null: releases are dropped, as for a program in a caller's buffer.
  std::vector<uint32_t>* released = nullptr;
  /// With `released`: each released constant of the GraphCase is overwritten with NaN at once,
  /// so a backend that reads it again (it said it would not) gives NaN. Changes the case: run
  /// the reference first.
  bool poison_released = false;
};

/// An initialised delegate with its inputs/outputs, for tests that run it several times.
class Session {
 public:
  /// `backend` names a registered backend; it must outlive the session.
  explicit Session(const char* backend) : backend_name_(backend) {}
  /// The context of the ConstantSource an init gets (see RunOptions::released).
  struct Constants {
    GraphCase* graph = nullptr;
    std::vector<uint32_t>* released = nullptr;
    bool poison = false;
  };
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session();

  /// Resolves options, inits the delegate. Errors from resolution or init.
  Status init(const GraphCase& c, const RunOptions& options = {});
  /// Copies `inputs` in, executes, copies outputs into `outputs`.
  Status run(const std::vector<Floats>& inputs, std::vector<Floats>* outputs,
             const ExecuteOptions* execute = nullptr, ProfileBuffer* profile = nullptr);
  DelegateHandle* handle() const { return handle_; }
  /// What the backend reported deriving at init (BackendInitContext::report_derived).
  const DerivedValues& derived() const { return derived_; }

 private:
  const char* backend_name_;
  BackendInterface* backend_ = nullptr;
  // The method allocator of the init: a backend may place its delegate in it (the portable
  // backend does), so it lives as long as the handle (destroyed in ~Session's body, before it).
  HeapMemoryAllocator allocator_;
  DelegateHandle* handle_ = nullptr;
  Constants constants_;  // the init's ConstantSource context
  ResolvedOptions resolved_;
  DerivedValues derived_;
  std::vector<uint8_t> payload_;
  const GraphCase* case_ = nullptr;
  std::vector<Floats> in_data_, out_data_;
  std::vector<Tensor> tensors_;
  std::vector<EValue> values_;
  std::vector<EValue*> args_;
};

/// Random inputs for every graph input (uniform in [lo, hi]).
std::vector<Floats> random_inputs(const GraphCase& c, uint32_t seed, float lo = -1.0f,
                                  float hi = 1.0f);

/// Runs through backend `backend`.
Result<std::vector<Floats>> run_backend(const char* backend, const GraphCase& c,
                                        const std::vector<Floats>& inputs,
                                        const RunOptions& options = {});
/// Runs node by node with the portable kernels.
Result<std::vector<Floats>> run_portable(const GraphCase& c, const std::vector<Floats>& inputs);

/// max |a - b| <= 1e-4 * max |b| (b the reference); returns a description of the worst error.
/// Float32 outputs only; see matches_portable for the others.
::testing::AssertionResult close(const std::vector<Floats>& got, const std::vector<Floats>& want,
                                 double relative = 1e-4);

/// Runs both ways (backend `backend` and the portable kernels) on random inputs and compares:
/// float32 outputs with close(), outputs of other dtypes bit for bit.
::testing::AssertionResult matches_portable(const char* backend, const GraphCase& c,
                                            float lo = -1.0f, float hi = 1.0f,
                                            double relative = 1e-4);

/// The harness bound to one registered backend, for that backend's own tests: each
/// tests/backends/<name>/harness.h names its backend once and gets a Session, a run function and
/// matches_portable that need no backend argument.

/// A Session of backend `kName`, with the backend's own summary of its delegate (`kSummarize`,
/// the backend's summarize_delegate).
template <const char* kName, auto kSummarize>
class BoundSession : public Session {
 public:
  BoundSession() : Session(kName) {}
  decltype(auto) summary() const { return kSummarize(handle()); }
};

/// run_backend through one backend.
struct BoundRun {
  const char* backend;
  Result<std::vector<Floats>> operator()(const GraphCase& c, const std::vector<Floats>& inputs,
                                         const RunOptions& options = {}) const {
    return run_backend(backend, c, inputs, options);
  }
};

/// matches_portable through one backend.
struct BoundMatchesPortable {
  const char* backend;
  ::testing::AssertionResult operator()(const GraphCase& c, float lo = -1.0f, float hi = 1.0f,
                                        double relative = 1e-4) const {
    return matches_portable(backend, c, lo, hi, relative);
  }
};

}  // namespace tessera::backend_testing
