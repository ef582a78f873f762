#include "tessera/backends/armnn/delegate.h"

#include <armnn/Exceptions.hpp>

#include <chrono>

namespace tessera::armnn_backend {

Status Delegate::execute(BackendExecutionContext& context, Span<EValue*> args) {
  const size_t num_inputs = input_infos.size(), num_outputs = output_infos.size();
  if (args.size() != num_inputs + num_outputs) {
    return Status::error(Error::InvalidArgument,
                         "armnn: delegate '%s' takes %zu inputs and %zu outputs, got %zu "
                         "arguments",
                         id, num_inputs, num_outputs, args.size());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const armnn::TensorInfo& info = i < num_inputs ? input_infos[i] : output_infos[i - num_inputs];
    const EValue* a = args[i];
    if (a == nullptr || !a->is_tensor() || a->to_tensor().dtype() != ScalarType::Float32 ||
        a->to_tensor().numel() != static_cast<int64_t>(info.GetNumElements()) ||
        a->to_tensor().data() == nullptr) {
      return Status::error(Error::InvalidArgument,
                           "armnn: delegate '%s': argument %zu is not a float32 tensor of %u "
                           "elements with data",
                           id, i, info.GetNumElements());
    }
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    inputs[i].second = armnn::ConstTensor(input_infos[i], args[i]->to_tensor().data());
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    outputs[i].second = armnn::Tensor(output_infos[i], args[num_inputs + i]->to_tensor().data());
  }
  const auto start = std::chrono::steady_clock::now();
  armnn::Status st = armnn::Status::Failure;
  try {
    st = runtime->EnqueueWorkload(network, inputs, outputs);
  } catch (const armnn::Exception& e) {
    return Status::error(Error::DelegateExecutionFailed, "armnn: delegate '%s': %s", id, e.what());
  }
  if (st != armnn::Status::Success) {
    return Status::error(Error::DelegateExecutionFailed,
                         "armnn: delegate '%s': EnqueueWorkload failed", id);
  }
  if (profiling) {
    context.report_event("armnn:EnqueueWorkload", std::chrono::duration<double, std::milli>(
                                                      std::chrono::steady_clock::now() - start)
                                                      .count());
  }
  return Status::ok();
}

}  // namespace tessera::armnn_backend
