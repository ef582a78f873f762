// docs/usage.md "Example", whole: the region below is the snippet (check_snippets.py).
// Not formatted: the docs show 'Tensor* input' (clang-format spaces a macro argument's '*').
// clang-format off
// [usage-example]
#include "tessera/backend/device_info.h"
#include "tessera/backend/global_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program.h"

constexpr tessera::OptionKey<int64_t> kNumThreads{"num_threads"};

tessera::Status run(const char* path) {
  using namespace tessera;
  const DeviceInfo& device = DeviceInfo::get();

  BackendOptions<2> global;
  TESSERA_RETURN_IF_ERROR(global.set(kNumThreads, int64_t{device.recommended_threads()}));
  TESSERA_RETURN_IF_ERROR(set_option("xnnpack", global.view()));

  TESSERA_ASSIGN_OR_RETURN(MmapDataLoader loader, MmapDataLoader::from(path));
  TESSERA_ASSIGN_OR_RETURN(Program program, Program::load(&loader));

  DelegateOptionsMap per_delegate;  // the second delegate gets one thread
  TESSERA_RETURN_IF_ERROR(per_delegate.set("xnnpack#1", kNumThreads, 1));
  LoadOptions load;
  load.delegate_options = &per_delegate;
  TESSERA_RETURN_IF_ERROR(load.set_dim("batch", 4));
  TESSERA_RETURN_IF_ERROR(load.set_fallback("xnnpack,portable"));
  TESSERA_ASSIGN_OR_RETURN(Method method, program.load_method("forward", nullptr, load));

  TESSERA_ASSIGN_OR_RETURN(Tensor* input, method.input(0));
  float* x = input->data_as<float>();  // your data here
  for (int64_t i = 0; i < input->numel(); ++i) x[i] = 0.5f;
  TESSERA_RETURN_IF_ERROR(method.execute());
  TESSERA_ASSIGN_OR_RETURN(const Tensor* output, method.get_output(0));
  (void)output;
  return Status::ok();
}
// [usage-example]
// clang-format on
