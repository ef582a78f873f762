#include "tessera/compiler/host_kernel.h"

#include <algorithm>

#include <flatbuffers/flatbuffers.h>

#include "tessera/core/heap_allocator.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/serialize.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera::compiler {

Status run_host_kernel(const ir::Node& node, const std::vector<const HostTensor*>& inputs,
                       std::vector<HostTensor>* outputs) {
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(ir::serialize_node(builder, node));
  const fb::Node* fb_node = flatbuffers::GetRoot<fb::Node>(builder.GetBufferPointer());

  // A kernel's Tensor holds at most kMaxDims sizes: a larger rank would be cut short, and the
  // kernel would read the data as a tensor of other sizes (a Gather's rank-9 indices, empty
  // through their last dim, read as 48 million indices).
  auto rank_ok = [&](const char* what, size_t k, const std::vector<int64_t>& dims) {
    if (dims.size() <= static_cast<size_t>(kMaxDims)) return Status::ok();
    return Status::error(Error::NotSupported, "%s %zu of '%s' has rank %zu, above %d", what, k,
                         node.name.c_str(), dims.size(), kMaxDims);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] != nullptr) TESSERA_RETURN_IF_ERROR(rank_ok("input", k, inputs[k]->dims));
  }
  for (size_t k = 0; k < outputs->size(); ++k) {
    TESSERA_RETURN_IF_ERROR(rank_ok("output", k, (*outputs)[k].dims));
  }

  // Byte buffers in each dtype (at least one byte, so an empty tensor still has an address).
  std::vector<std::vector<uint8_t>> in_bytes(inputs.size()), out_bytes(outputs->size());
  std::vector<Tensor> in_tensors(inputs.size()), out_tensors(outputs->size());
  std::vector<const Tensor*> in_ptrs(inputs.size(), nullptr);
  std::vector<Tensor*> out_ptrs(outputs->size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr) continue;
    in_bytes[k] = inputs[k]->to_bytes();
    in_bytes[k].resize(std::max<size_t>(in_bytes[k].size(), 1));
    in_tensors[k] = Tensor(inputs[k]->dtype, inputs[k]->dims, in_bytes[k].data());
    in_ptrs[k] = &in_tensors[k];
  }
  for (size_t k = 0; k < outputs->size(); ++k) {
    const HostTensor& o = (*outputs)[k];
    out_bytes[k].assign(std::max<size_t>(static_cast<size_t>(o.numel()) * element_size(o.dtype), 1),
                        0);
    out_tensors[k] = Tensor(o.dtype, o.dims, out_bytes[k].data());
    out_ptrs[k] = &out_tensors[k];
  }
  const Span<const Tensor* const> ins(in_ptrs.data(), in_ptrs.size());
  const Span<Tensor* const> outs(out_ptrs.data(), out_ptrs.size());
  HeapMemoryAllocator allocator;
  portable::KernelNode kernel_node{fb_node, ins,
                                   Span<const Tensor* const>(outs.data(), outs.size())};
  TESSERA_ASSIGN_OR_RETURN(portable::PreparedKernel kernel,
                           portable::prepare_kernel(kernel_node, allocator));
  TESSERA_RETURN_IF_ERROR(portable::run_kernel(kernel, ins, outs));
  for (size_t k = 0; k < outputs->size(); ++k) {
    HostTensor& o = (*outputs)[k];
    o = HostTensor::from_bytes(o.dtype, std::move(o.dims), out_bytes[k].data());
  }
  return Status::ok();
}

}  // namespace tessera::compiler
