#include "tessera/runtime/program.h"

#include <string>

#include "tessera/core/trace.h"

#include <cstring>

#include "tessera/ir/program_builder.h"
#include "tessera/ir/schema.h"
#include "tessera/runtime/load_options.h"
#include "tessera/runtime/method.h"
#include "tessera/runtime/program_validation.h"

namespace tessera {

namespace {
constexpr size_t kHeaderBytes = 12;  // size prefix, root offset, identifier
}

Result<Program> Program::load(const DataLoader* loader) {
  if (loader == nullptr) return Status(Error::InvalidArgument, "Program::load: null loader");
  TraceSpan span("load", "program load");
  Span<const uint8_t> data = loader->data();
  if (data.size() < kHeaderBytes) {
    return Status::error(Error::Truncated,
                         "program is %zu bytes, shorter than the %zu-byte header", data.size(),
                         kHeaderBytes);
  }
  if (reinterpret_cast<uintptr_t>(data.data()) % 64 != 0) {
    return Status(Error::InvalidArgument,
                  "program buffer must be 64-byte aligned so constants can be used in place");
  }
  if (!flatbuffers::BufferHasIdentifier(data.data(), fb::ProgramIdentifier(), /*size_prefixed=*/true)) {
    char magic[5] = {};
    for (int i = 0; i < 4; ++i) {
      char c = static_cast<char>(data[8 + i]);
      magic[i] = (c >= 32 && c < 127) ? c : '?';
    }
    return Status::error(Error::InvalidProgram,
                         "not a Tessera program: magic is '%s', expected '%s'", magic,
                         fb::ProgramIdentifier());
  }
  uint32_t fb_size = flatbuffers::ReadScalar<uint32_t>(data.data());
  if (fb_size > data.size() - sizeof(uint32_t)) {
    return Status::error(Error::Truncated,
                         "program header declares %u bytes but the file has %zu after the prefix",
                         fb_size, data.size() - sizeof(uint32_t));
  }
  const uint64_t fb_end = uint64_t{fb_size} + sizeof(uint32_t);
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  opts.max_tables = 10'000'000;
  opts.check_alignment = true;
  flatbuffers::Verifier verifier(data.data(), static_cast<size_t>(fb_end), opts);
  if (!fb::VerifySizePrefixedProgramBuffer(verifier)) {
    return Status(Error::InvalidProgram,
                  "program failed FlatBuffers verification (corrupted or hostile file)");
  }
  const fb::Program* program = fb::GetSizePrefixedProgram(data.data());
  if (program->version() != ir::kProgramVersion) {
    return Status::error(Error::NotSupported,
                         "program format version %u is not supported (this runtime reads %u)",
                         program->version(), ir::kProgramVersion);
  }
  TESSERA_RETURN_IF_ERROR(internal::validate_program(program, data.size(), fb_end));
  return Program(loader, data, program);
}

size_t Program::num_methods() const { return program_->methods()->size(); }

Result<std::string_view> Program::method_name(size_t index) const {
  if (index >= num_methods()) {
    return Status::error(Error::NotFound, "method index %zu out of range (%zu methods)", index,
                         num_methods());
  }
  return program_->methods()->Get(static_cast<uint32_t>(index))->name()->string_view();
}

uint32_t Program::version() const {
  return program_->version();
}

const fb::Method* Program::find_method(std::string_view name) const {
  for (const fb::Method* m : *program_->methods()) {
    if (m->name()->string_view() == name) return m;
  }
  return nullptr;
}

Span<const uint8_t> Program::constant(int index) const {
  if (index < 0 || program_->constants() == nullptr ||
      static_cast<uint32_t>(index) >= program_->constants()->size()) {
    return {};
  }
  const fb::ConstantRef* c = program_->constants()->Get(static_cast<uint32_t>(index));
  return {data_.data() + program_->segment_offset() + c->offset(), static_cast<size_t>(c->size())};
}

Span<const uint8_t> Program::constant_to_read(int index) const {
  const Span<const uint8_t> c = constant(index);
  if (c.size() > 0) loader_->will_read(c);
  return c;
}

void Program::release_constant(int index) const {
  const Span<const uint8_t> c = constant(index);
  if (c.size() > 0) loader_->release(c);
}

void Program::release(Span<const uint8_t> range) const {
  loader_->release(range);
}

bool Program::read(size_t offset, Span<uint8_t> out) const {
  return loader_->read(offset, out);
}

bool Program::file_identity(FileIdentity* out) const {
  return loader_->file_identity(out);
}

Result<Method> Program::load_method(std::string_view name, MemoryManager* memory) const {
  return load_method(name, memory, LoadOptions());
}

Result<Method> Program::load_method(std::string_view name, MemoryManager* memory,
                                    const LoadOptions& options) const {
  const fb::Method* m = find_method(name);
  if (m == nullptr) {
    char names[160] = {};
    size_t pos = 0;
    for (const fb::Method* mm : *program_->methods()) {
      int n = std::snprintf(names + pos, sizeof names - pos, "%s'%s'", pos ? ", " : "",
                            mm->name()->c_str());
      if (n < 0 || static_cast<size_t>(n) >= sizeof names - pos) break;
      pos += static_cast<size_t>(n);
    }
    return Status::error(Error::NotFound, "no method '%.*s' in the program (it has %s)",
                         static_cast<int>(name.size()), name.data(), names);
  }
  TraceSpan span("load", "method load " + std::string(name));
  return Method::load(*this, m, memory, options);
}

}  // namespace tessera
