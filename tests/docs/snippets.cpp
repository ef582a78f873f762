// The C++ fragments of README.md and docs/usage.md, each a region of a function that gives it
// the names it uses (check_snippets.py compares them with the docs). Compiled, never run: the
// behaviour is tested where each feature is.
#include <cstdint>
#include <vector>

#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/core/trace.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

namespace docs {

using namespace tessera;

constexpr OptionKey<int64_t> kNumThreads{"num_threads"};

Status readme_options(Program& program) {
  // [readme-options]
  tessera::BackendOptions<4> global;
  TESSERA_RETURN_IF_ERROR(global.set(kNumThreads, 4));  // typed key: checked at compile time
  TESSERA_RETURN_IF_ERROR(tessera::set_option("xnnpack", global.view()));

  tessera::LoadBackendOptionsMap per_backend;
  TESSERA_RETURN_IF_ERROR(per_backend.set("xnnpack", kNumThreads, 2));
  tessera::LoadOptions load;
  load.backend_options = &per_backend;
  TESSERA_RETURN_IF_ERROR(load.set_dim("batch", 4));
  TESSERA_ASSIGN_OR_RETURN(tessera::Method method, program.load_method("forward", nullptr, load));
  // [readme-options]
  return method.execute();
}

Status input_shapes(Program& program) {
  // [input-shapes]
  LoadOptions load;
  TESSERA_RETURN_IF_ERROR(load.set_input_shape("input", {4, 3, 224, 224}));  // or by position: 0
  TESSERA_ASSIGN_OR_RETURN(Method method, program.load_method("forward", nullptr, load));
  // method.symbol_value("batch") == 4
  // [input-shapes]
  return method.execute();
}

Status selection_measure() {
  // [selection-measure]
  LoadOptions load;
  load.selection = Selection::Measure;  // or tessera-run --select measure
  load.selection_budget_ms = 300;       // per delegate, inits and runs
  load.selection_tolerance = 1e-4;      // relative to max |reference|
  TESSERA_RETURN_IF_ERROR(load.set_selection_candidates("xnnpack,onednn"));  // default: all
  // [selection-measure]
  return Status::ok();
}

LoadOptions selection_cache() {
  // [selection-cache]
  LoadOptions remembered;                                       // selection = Selection::Auto
  remembered.selection_cache_dir = "/var/cache/myapp/tessera";  // or tessera-run --select-cache DIR
  // nullptr (the default): $XDG_CACHE_HOME/tessera/selection, else ~/.cache/tessera/selection;
  // "" disables the cache (auto then runs every delegate on its program's backend).
  // [selection-cache]
  return remembered;
}

LoadOptions selection_bf16() {
  // [selection-bf16]
  LoadOptions bf16_ok;
  bf16_ok.selection = Selection::Measure;
  bf16_ok.selection_lower_precision = true;  // oneDNN precision=bf16 becomes a candidate
  bf16_ok.selection_tolerance = 2e-2;        // what the application accepts
  // [selection-bf16]
  return bf16_ok;
}

Result<LoadOptions> startup_backend() {
  // [startup-backend]
  LoadOptions load;
  TESSERA_RETURN_IF_ERROR(load.set_startup_backend("xnnpack"));  // or "onednn", "auto"
  // tessera-run --startup-backend xnnpack; Python load_method(startup_backend="xnnpack");
  // C tessera_load_options_set_startup_backend(options, "xnnpack")
  // [startup-backend]
  return load;
}

Status trace(Method& method) {
  // [trace]
  TESSERA_RETURN_IF_ERROR(Trace::start());  // process-wide; InvalidState if one runs
  // ... Program::load, load_method, execute ...
  TESSERA_ASSIGN_OR_RETURN(std::vector<TraceEvent> events, Trace::stop());
  TESSERA_RETURN_IF_ERROR(Trace::write_chrome_json(events, "run.json"));
  // [trace]
  return method.execute();
}

}  // namespace docs
