#include "tessera/backends/onednn/winograd_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/backend/cache_limit.h"
#include "tessera/backend/integrity_file.h"
#include "tessera/core/log.h"

namespace tessera::onednn {

using dnnl::memory;

// oneDNN's Winograd weight transform (wino_reorder) is slow: 115-157 ms for one 512x512 3x3
// weight, most of a ResNet-18 load with conv_algorithm=winograd (much of that was the page
// faults of its scratchpad, which reorder_at_init now places in huge pages). Its result depends
// only on the source weights and on the target layout, which the Winograd descriptor's fields say
// entirely, so it can be kept on disk (an integrity-checked file, see integrity_file.h) and read
// back.
void transform_winograd_weights_cached(const BuildOptions& options, Delegate& delegate, memory from,
                                       memory to, LargeBuffer* scratch) {
  auto transform = [&] {
    if (delegate.winograd_convs ==
        delegate.weights_from_cache + 1) {  // the delegate's first transform
      TESSERA_LOG_INFO(
          "onednn: transforming 3x3 convolution weights to the Winograd layout (about "
          "0.1 s per convolution); %s%s%s",
          options.cache_write  ? "cached in '"
          : options.cache_read ? "cache_mode is read, so not cached"
                               : "not cached (set onednn.cache_dir to keep them)",
          options.cache_write ? options.cache_dir.c_str() : "", options.cache_write ? "'" : "");
    }
    reorder_at_init(delegate.engine, delegate.stream, from, to, scratch,
                    &delegate.init_scratchpad_bytes);
  };
  if (!options.cache_read) {  // no cache: nothing to key, hash or look up
    transform();
    return;
  }
  const dnnl_memory_desc_t& md = to.get_desc().data;
  const dnnl_wino_desc_t& wd = md.format_desc.wino_desc;
  const size_t bytes = to.get_desc().get_size();
  const size_t from_bytes = from.get_desc().get_size();
  IntegrityKey key{};
  std::memcpy(key.magic, "TSDNNLW1", sizeof key.magic);
  const dnnl_version_t* v = dnnl_version();
  char device[96];
  std::snprintf(device, sizeof device, "onednn %d.%d.%d %s isa %d", v->major, v->minor, v->patch,
                v->hash, static_cast<int>(dnnl_get_effective_cpu_isa()));
  key.device = fnv1a64(std::string(device));
  // The layout: dims, type and every field of the Winograd descriptor, one by one (the struct
  // may hold padding bytes); then the source weights.
  uint64_t content = fnv1a64(md.dims, sizeof(md.dims[0]) * static_cast<size_t>(md.ndims));
  const int64_t fields[] = {md.ndims,
                            md.data_type,
                            md.format_kind,
                            wd.wino_format,
                            wd.r,
                            wd.alpha,
                            wd.ic,
                            wd.oc,
                            wd.ic_block,
                            wd.oc_block,
                            wd.ic2_block,
                            wd.oc2_block,
                            static_cast<int64_t>(wd.size),
                            static_cast<int64_t>(bytes)};
  content = fnv1a64(fields, sizeof fields, content);
  content = fnv1a64(&wd.adj_scale, sizeof wd.adj_scale, content);
  key.content = hash64(from.get_data_handle(), from_bytes, content);

  char file[40];
  std::snprintf(
      file, sizeof file, "%016llx.dnnlw",
      static_cast<unsigned long long>(fnv1a64(&key.content, sizeof key.content, key.device)));
  std::string path = options.cache_dir;
  if (path.back() != '/') path += '/';
  path += file;
  // Straight into the weights' memory: ResNet-18's thirteen entries are 68 MB, and a vector
  // filled and copied cost a zeroing, a copy and a page fault per page of each (its load with
  // conv_algorithm=winograd and the cache warm took 263-451 ms, now 67-118, at 1 and 2 threads).
  // A bad entry may leave part of itself there; the transform below overwrites it.
  const Status read = read_integrity_file_into(path, key, to.get_data_handle(), bytes);
  if (read.is_ok()) {
    ++delegate.weights_from_cache;
    touch_cache_entry(path);  // recently used: evicted last
    return;
  }
  if (read.code() != Error::NotFound) {
    TESSERA_LOG_WARNING("onednn: cache entry unusable: %s; recomputing", read.message());
  }
  transform();
  if (!options.cache_write) return;
  if (::mkdir(options.cache_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    TESSERA_LOG_WARNING("onednn: cannot create cache_dir '%s': %s", options.cache_dir.c_str(),
                        std::strerror(errno));
    return;
  }
  const auto* p = static_cast<const uint8_t*>(to.get_data_handle());
  const Status written = write_integrity_file(path, key, std::vector<uint8_t>(p, p + bytes));
  if (!written.is_ok()) {
    TESSERA_LOG_WARNING("onednn: cache not written: %s", written.message());
    return;
  }
  ++delegate.weights_cached;
  if (options.cache_max_bytes != 0) {
    const CacheTrim trim = trim_cache_dir(options.cache_dir, ".dnnlw", options.cache_max_bytes);
    if (trim.removed > 0 || trim.failed > 0) {
      TESSERA_LOG_INFO(
          "onednn: cache_dir '%s' above cache_max_mb: removed %zu least recently "
          "used entries (%zu could not be), %llu bytes left",
          options.cache_dir.c_str(), trim.removed, trim.failed,
          static_cast<unsigned long long>(trim.bytes_after));
    }
  }
}

}  // namespace tessera::onednn
