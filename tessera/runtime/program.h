// Program: a verified program file. Create with Program::load; then load_method() any number of
// times, from any thread (a Program is immutable once loaded).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/core/memory_manager.h"
#include "tessera/core/result.h"
#include "tessera/core/span.h"
#include "tessera/runtime/data_loader.h"

// The FlatBuffers accessors (tessera/ir/schema.h, generated) are declared only: an application
// including this header needs neither the generated code nor FlatBuffers.
namespace tessera::fb {
struct Program;
struct Method;
}  // namespace tessera::fb

namespace tessera {

class Method;
struct LoadOptions;

/// Largest activation arena a program may ask for; larger is rejected as hostile.
inline constexpr uint64_t kMaxArenaBytes = uint64_t{1} << 36;

class Program {
 public:
  /// Verifies the file (FlatBuffers verifier, then every index, offset, size, shape, alignment
  /// and bound). `loader` is borrowed and must outlive the Program and every Method from it.
  /// Errors: InvalidProgram (wrong magic, malformed or inconsistent content), Truncated (the file
  /// ends before a section it declares), NotSupported (a newer format version), InvalidArgument
  /// (a buffer not aligned to 64 bytes). The message says which check failed and where.
  static Result<Program> load(const DataLoader* loader);

  size_t num_methods() const;
  /// Name of method `index`; NotFound past the end.
  Result<std::string_view> method_name(size_t index) const;

  /// Loads method `name`: resolves symbolic dims and backend options, prepares kernels and
  /// initialises delegates. `memory` is borrowed and must outlive the Method; nullptr lets the
  /// Method own heap memory. Errors name the method, delegate, backend or option concerned.
  Result<Method> load_method(std::string_view name, MemoryManager* memory,
                             const LoadOptions& options) const;
  Result<Method> load_method(std::string_view name, MemoryManager* memory = nullptr) const;

  /// Bytes of constant `index` (in the mapped file); empty if out of range.
  Span<const uint8_t> constant(int index) const;
  /// The same, for a reader about to read them whole (a backend's init packing its weights):
  /// the loader may map them at once now (DataLoader::will_read).
  Span<const uint8_t> constant_to_read(int index) const;
  /// A hint that nothing reads constant `index` for now (a backend made its own copy of it):
  /// passed to the DataLoader (DataLoader::release), which may drop its pages from memory. The
  /// bytes stay valid. Out of range: nothing.
  void release_constant(int index) const;
  /// The same for any range of bytes() (the selection cache's program hash reads them all).
  void release(Span<const uint8_t> range) const;
  /// Copies bytes() from `offset` on into `out` without mapping them, where the loader can
  /// (DataLoader::read); false where it cannot: then read bytes().
  bool read(size_t offset, Span<uint8_t> out) const;
  /// The identity of the file the program was loaded from, as it is now
  /// (DataLoader::file_identity); false for a program in a caller's buffer.
  bool file_identity(FileIdentity* out) const;
  /// The verified FlatBuffer root (for tools and backends that read the IR; they include
  /// tessera/ir/schema.h).
  const fb::Program* flatbuffer() const { return program_; }
  /// The program's bytes, as loaded (borrowed from its DataLoader).
  Span<const uint8_t> bytes() const { return data_; }
  const fb::Method* find_method(std::string_view name) const;
  uint32_t version() const;

 private:
  Program(const DataLoader* loader, Span<const uint8_t> data, const fb::Program* program)
      : loader_(loader), data_(data), program_(program) {}

  const DataLoader* loader_;
  Span<const uint8_t> data_;
  const fb::Program* program_;
};

}  // namespace tessera
