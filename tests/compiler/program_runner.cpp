#include "tests/compiler/program_runner.h"

#include <cstring>
#include <fstream>
#include <memory>

#include "tessera/core/memory_allocator.h"
#include "tessera/core/tensor.h"
#include "tessera/ir/schema.h"
#include "tessera/ir/shape_expr.h"
#include "tessera/kernels/portable/kernel.h"

namespace tessera::compiler::testing {

Result<std::vector<HostArray>> run_program(const std::vector<uint8_t>& bytes, const std::vector<int64_t>& symbol_values,
                                           const std::vector<HostArray>& inputs) {
  if (bytes.size() < 8) return Status(Error::InvalidProgram, "program too small");
  const size_t fb_size = flatbuffers::GetPrefixedSize(bytes.data()) + sizeof(flatbuffers::uoffset_t);
  flatbuffers::Verifier verifier(bytes.data(), fb_size);
  if (!fb::VerifySizePrefixedProgramBuffer(verifier)) return Status(Error::InvalidProgram, "program does not verify");
  const fb::Program* program = fb::GetSizePrefixedProgram(bytes.data());
  const fb::Method* m = program->methods()->Get(0);
  const uint8_t* segment = bytes.data() + program->segment_offset();
  const size_t nvalues = m->values()->size();
  std::vector<int64_t> symbols = symbol_values;
  if (symbols.empty() && m->symbols() && m->symbols()->size() > 0) {
    symbols.assign(m->symbols()->size(), -1);
    for (size_t i = 0; i < inputs.size() && i < m->inputs()->size(); ++i) {
      const fb::Value* val = m->values()->Get(static_cast<flatbuffers::uoffset_t>(m->inputs()->Get(i)));
      for (size_t k = 0; k < val->dims()->size() && k < inputs[i].dims.size(); ++k) {
        const auto* expr = val->dims()->Get(static_cast<flatbuffers::uoffset_t>(k))->expr();
        if (expr && expr->size() == 1 && expr->Get(0)->op() == fb::ShapeOp::Sym) {
          symbols[static_cast<size_t>(expr->Get(0)->value())] = inputs[i].dims[k];
        }
      }
    }
  }

  // Resolved sizes and data of every value.
  std::vector<std::vector<int64_t>> sizes(nvalues);
  std::vector<void*> data(nvalues, nullptr);
  std::vector<uint8_t> arena(m->arena_size() + 64);
  for (size_t v = 0; v < nvalues; ++v) {
    const fb::Value* val = m->values()->Get(static_cast<flatbuffers::uoffset_t>(v));
    for (const fb::Dim* d : *val->dims()) {
      TESSERA_ASSIGN_OR_RETURN(int64_t size, ir::eval_dim(d, symbols));
      sizes[v].push_back(size);
    }
    if (val->constant() >= 0) {
      const fb::ConstantRef* ref = program->constants()->Get(static_cast<flatbuffers::uoffset_t>(val->constant()));
      data[v] = const_cast<uint8_t*>(segment + ref->offset());
    } else if (val->arena_offset() >= 0) {
      data[v] = arena.data() + val->arena_offset();
    }
  }
  auto make_tensor = [&](int v) {
    const fb::Value* val = m->values()->Get(static_cast<flatbuffers::uoffset_t>(v));
    return Tensor(static_cast<ScalarType>(val->dtype()), Span<const int64_t>(sizes[v].data(), sizes[v].size()), data[v]);
  };
  if (inputs.size() != m->inputs()->size()) return Status(Error::InvalidArgument, "wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int v = m->inputs()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (inputs[i].dims != sizes[v]) return Status::error(Error::ShapeMismatch, "input %zu has other dims", i);
    std::memcpy(data[v], inputs[i].data.data(), inputs[i].data.size() * sizeof(float));
  }
  const size_t scratch_size = size_t{128} << 20;
  std::unique_ptr<uint8_t[]> scratch(new uint8_t[scratch_size]);
  MemoryAllocator allocator(scratch.get(), scratch_size);
  for (const fb::Instruction* ins : *m->chain()) {
    if (ins->kind() != fb::InstructionKind::Kernel) {
      return Status(Error::NotSupported, "program_runner runs kernel instructions only");
    }
    const fb::Node* node = ins->node();
    std::vector<Tensor> in_t, out_t;
    in_t.reserve(node->inputs()->size());
    out_t.reserve(node->outputs()->size());
    std::vector<const Tensor*> in_p;
    std::vector<Tensor*> out_p;
    for (int v : *node->inputs()) {
      if (v < 0) {
        in_p.push_back(nullptr);
        continue;
      }
      in_t.push_back(make_tensor(v));
      in_p.push_back(&in_t.back());
    }
    for (int v : *node->outputs()) {
      out_t.push_back(make_tensor(v));
      out_p.push_back(&out_t.back());
    }
    std::vector<const Tensor*> out_cp(out_p.begin(), out_p.end());
    portable::KernelNode kn{node, Span<const Tensor* const>(in_p.data(), in_p.size()),
                            Span<const Tensor* const>(out_cp.data(), out_cp.size())};
    allocator.reset();
    TESSERA_ASSIGN_OR_RETURN(portable::PreparedKernel k, portable::prepare_kernel(kn, allocator));
    TESSERA_RETURN_IF_ERROR(portable::run_kernel(k, Span<const Tensor* const>(in_p.data(), in_p.size()),
                                                 Span<Tensor* const>(out_p.data(), out_p.size())));
  }
  std::vector<HostArray> outputs;
  for (int v : *m->outputs()) {
    HostArray a;
    a.dims = sizes[v];
    int64_t n = 1;
    for (int64_t d : a.dims) n *= d;
    a.data.resize(static_cast<size_t>(n));
    std::memcpy(a.data.data(), data[v], a.data.size() * sizeof(float));
    outputs.push_back(std::move(a));
  }
  return outputs;
}

Result<HostArray> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Error::NotFound, "cannot open '%s'", path.c_str());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    return Status::error(Error::InvalidArgument, "'%s' is not a .npy file", path.c_str());
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else {
    uint32_t n;
    std::memcpy(&n, bytes.data() + 8, 4);
    header_len = n;
    header_start = 12;
  }
  const std::string header = bytes.substr(header_start, header_len);
  if (header.find("'descr': '<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos) {
    return Status::error(Error::NotSupported, "'%s': only little-endian float32 C-order arrays", path.c_str());
  }
  HostArray a;
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  std::string shape = header.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while (pos < shape.size()) {
    size_t comma = shape.find(',', pos);
    if (comma == std::string::npos) comma = shape.size();
    std::string item = shape.substr(pos, comma - pos);
    if (item.find_first_of("0123456789") != std::string::npos) a.dims.push_back(std::stoll(item));
    pos = comma + 1;
  }
  int64_t n = 1;
  for (int64_t d : a.dims) n *= d;
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != static_cast<size_t>(n) * 4) {
    return Status::error(Error::InvalidArgument, "'%s': size does not match its shape", path.c_str());
  }
  a.data.resize(static_cast<size_t>(n));
  std::memcpy(a.data.data(), bytes.data() + data_start, a.data.size() * 4);
  return a;
}

}  // namespace tessera::compiler::testing
