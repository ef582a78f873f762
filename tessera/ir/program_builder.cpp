#include "tessera/ir/program_builder.h"

#include <cstdio>
#include <cstring>

#include "tessera/ir/memory_plan.h"
#include "tessera/ir/serialize.h"

namespace tessera::ir {

int MethodBuilder::add_symbol(std::string symbol, int64_t min, int64_t max) {
  graph.symbols.push_back({std::move(symbol), min, max});
  return static_cast<int>(graph.symbols.size()) - 1;
}

int MethodBuilder::add_tensor(std::string value_name, ScalarType dtype, std::vector<Dim> dims) {
  Value v;
  v.name = std::move(value_name);
  v.dtype = dtype;
  v.dims = std::move(dims);
  graph.values.push_back(std::move(v));
  return static_cast<int>(graph.values.size()) - 1;
}

int MethodBuilder::add_constant_tensor(std::string value_name, ScalarType dtype,
                                       std::vector<Dim> dims, int constant) {
  int idx = add_tensor(std::move(value_name), dtype, std::move(dims));
  graph.values[idx].constant = constant;
  return idx;
}

int MethodBuilder::add_input(std::string value_name, ScalarType dtype, std::vector<Dim> dims) {
  int idx = add_tensor(std::move(value_name), dtype, std::move(dims));
  graph.inputs.push_back(idx);
  return idx;
}

void MethodBuilder::add_kernel(Node node) {
  InstructionDesc ins;
  ins.kind = fb::InstructionKind::Kernel;
  ins.node = std::move(node);
  chain.push_back(std::move(ins));
}

int MethodBuilder::add_delegate(DelegateDesc delegate) {
  delegates.push_back(std::move(delegate));
  InstructionDesc ins;
  ins.kind = fb::InstructionKind::Delegate;
  ins.delegate = static_cast<int>(delegates.size()) - 1;
  chain.push_back(std::move(ins));
  return ins.delegate;
}

Status MethodBuilder::plan_memory() {
  const int n = static_cast<int>(graph.values.size());
  const int end = static_cast<int>(chain.size());
  std::vector<int> first(n, -2), last(n, -2);
  auto check = [&](int v) -> Status {
    if (v < -1 || v >= n) {
      return Status::error(Error::InvalidArgument, "method '%s': value index %d out of range",
                           name.c_str(), v);
    }
    return Status::ok();
  };
  for (int v : graph.inputs) {
    TESSERA_RETURN_IF_ERROR(check(v));
    first[v] = -1;
    last[v] = std::max(last[v], -1);
  }
  for (int step = 0; step < end; ++step) {
    const InstructionDesc& ins = chain[step];
    const std::vector<int>* ins_in = &ins.node.inputs;
    const std::vector<int>* ins_out = &ins.node.outputs;
    if (ins.kind == fb::InstructionKind::Delegate) {
      if (ins.delegate < 0 || ins.delegate >= static_cast<int>(delegates.size())) {
        return Status(Error::InvalidArgument, "delegate instruction without a delegate");
      }
      ins_in = &delegates[ins.delegate].inputs;
      ins_out = &delegates[ins.delegate].outputs;
    }
    for (int v : *ins_in) {
      TESSERA_RETURN_IF_ERROR(check(v));
      if (v < 0 || graph.values[v].constant >= 0) continue;
      if (first[v] == -2) {
        return Status::error(Error::InvalidArgument,
                             "method '%s': value '%s' is read at step %d before it is written",
                             name.c_str(), graph.values[v].name.c_str(), step);
      }
      last[v] = std::max(last[v], step);
    }
    for (int v : *ins_out) {
      TESSERA_RETURN_IF_ERROR(check(v));
      if (v < 0) continue;
      if (first[v] == -2) first[v] = step;
      last[v] = std::max(last[v], step);
    }
  }
  for (int v : graph.outputs) {
    TESSERA_RETURN_IF_ERROR(check(v));
    if (v >= 0 && first[v] != -2) last[v] = end;
  }
  std::vector<PlanItem> items;
  std::vector<int> which;
  for (int v = 0; v < n; ++v) {
    Value& val = graph.values[v];
    if (val.kind != fb::ValueKind::Tensor || val.constant >= 0 || first[v] == -2) continue;
    items.push_back({val.max_nbytes(), first[v], last[v]});
    which.push_back(v);
  }
  MemoryPlan plan = ir::plan_memory(items);
  for (size_t i = 0; i < which.size(); ++i) graph.values[which[i]].arena_offset = plan.offsets[i];
  arena_size = plan.arena_size;
  unplanned_bytes = plan.total_size;
  return Status::ok();
}

int ProgramBuilder::add_constant(const void* data, size_t size) {
  size_t offset = (segment_.size() + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment;
  segment_.resize(offset + size);
  if (size) std::memcpy(segment_.data() + offset, data, size);
  constants_.emplace_back(offset, size);
  return static_cast<int>(constants_.size()) - 1;
}

MethodBuilder& ProgramBuilder::add_method(std::string name) {
  methods_.emplace_back(std::move(name));
  return methods_.back();
}

namespace {

flatbuffers::Offset<fb::Method> serialize_method(flatbuffers::FlatBufferBuilder& b,
                                                 const MethodBuilder& m) {
  std::vector<flatbuffers::Offset<fb::Delegate>> delegates;
  for (const DelegateDesc& d : m.delegates) {
    std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
    for (const CompileSpecDesc& s : d.compile_specs) {
      // One builder call per statement (here and below): the order of two calls in one
      // expression is unspecified, GCC and clang differ, and the bytes would differ with it.
      // (The order is the one GCC chose, so that programs it wrote keep their bytes.)
      auto value = b.CreateString(s.value);
      auto key = b.CreateString(s.key);
      specs.push_back(fb::CreateCompileSpec(b, key, value));
    }
    auto id = b.CreateString(d.id);
    auto backend = b.CreateString(d.backend);
    // Nested FlatBuffers need their own alignment inside the outer buffer.
    b.ForceVectorAlignment(d.payload.size(), sizeof(uint8_t), 16);
    auto payload = b.CreateVector(d.payload);
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> candidates;
    if (!d.candidates.empty()) candidates = b.CreateVectorOfStrings(d.candidates);
    auto specs_off = b.CreateVector(specs);
    delegates.push_back(fb::CreateDelegate(b, id, backend, payload, specs_off, candidates));
  }
  std::vector<flatbuffers::Offset<fb::Instruction>> chain;
  for (const InstructionDesc& ins : m.chain) {
    if (ins.kind == fb::InstructionKind::Kernel) {
      auto node = serialize_node(b, ins.node);
      chain.push_back(fb::CreateInstruction(b, ins.kind, node, -1));
    } else {
      // An out-of-range index is written as is (Program::load rejects it); tests rely on that.
      static const DelegateDesc kNone;
      const DelegateDesc& d = ins.delegate >= 0 && ins.delegate < static_cast<int>(m.delegates.size())
                                  ? m.delegates[ins.delegate]
                                  : kNone;
      auto outputs = b.CreateVector(d.outputs);
      auto inputs = b.CreateVector(d.inputs);
      chain.push_back(fb::CreateInstruction(b, ins.kind, 0, ins.delegate, inputs, outputs));
    }
  }
  auto name = b.CreateString(m.name);
  auto symbols = serialize_symbols(b, m.graph.symbols);
  auto values = serialize_values(b, m.graph.values);
  auto inputs = b.CreateVector(m.graph.inputs);
  auto outputs = b.CreateVector(m.graph.outputs);
  auto chain_off = b.CreateVector(chain);
  auto delegates_off = b.CreateVector(delegates);
  return fb::CreateMethod(b, name, symbols, values, inputs, outputs, chain_off, delegates_off,
                          m.arena_size);
}

}  // namespace

Result<std::vector<uint8_t>> ProgramBuilder::build() const {
  uint64_t segment_offset = 0;
  std::vector<uint8_t> out;
  // Two passes: the constant segment follows the FlatBuffer, whose size we only know once built.
  // Scalars are forced present, so the second pass has the same size.
  for (int pass = 0; pass < 2; ++pass) {
    flatbuffers::FlatBufferBuilder b(4096);
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<fb::Method>> methods;
    for (const MethodBuilder& m : methods_) methods.push_back(serialize_method(b, m));
    std::vector<fb::ConstantRef> refs;
    for (const auto& [off, size] : constants_) refs.emplace_back(off, size);
    auto methods_off = b.CreateVector(methods);
    auto refs_off = b.CreateVectorOfStructs(refs);
    auto program = fb::CreateProgram(b, kProgramVersion, methods_off, refs_off, segment_offset,
                                     segment_.size());
    b.FinishSizePrefixed(program, fb::ProgramIdentifier());
    size_t fb_size = b.GetSize();
    uint64_t want = (fb_size + kConstantAlignment - 1) / kConstantAlignment * kConstantAlignment;
    if (pass == 0) {
      segment_offset = want;
      continue;
    }
    if (want != segment_offset) {
      return Status(Error::Internal, "program layout changed between passes");
    }
    out.assign(b.GetBufferPointer(), b.GetBufferPointer() + fb_size);
    out.resize(segment_offset, 0);
    out.insert(out.end(), segment_.begin(), segment_.end());
  }
  return out;
}

Status ProgramBuilder::write(const std::string& path) const {
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, build());
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Status::error(Error::AccessFailed, "cannot write '%s'", tmp.c_str());
  }
  size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool ok = n == bytes.size() && std::fflush(f) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::error(Error::AccessFailed, "cannot write '%s'", path.c_str());
  }
  return Status::ok();
}

}  // namespace tessera::ir
