// A size bound for an on-disk cache directory (cache_max_mb): least recently used entries go
// first. Entries are marked used when read (their modification time set to now), so the
// modification time orders them by last use. Safe with several processes sharing the
// directory: an entry another process removed first is skipped, and a reader that has an entry
// open keeps reading it whole after it is removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

/// Marks the entry at `path` as just used. Failures (a read-only directory) are ignored: the
/// entry is then only older than it should be.
void touch_cache_entry(const std::string& path);

/// Removes the entry at `path`: true when it is gone, including when another process removed it
/// first.
bool remove_cache_entry(const std::string& path);

struct CacheTrim {
  uint64_t bytes_before = 0;  // of the entries counted
  uint64_t bytes_after = 0;
  size_t removed = 0;
  size_t failed = 0;  // entries that could not be removed (their bytes stay counted)
};

/// Removes the regular files of `dir` whose names end in `suffix` (temporary files of
/// writers in progress never do), least recently used first, until their total size is at most
/// `max_bytes`. Never fails: what it could not read or remove is counted in the result.
CacheTrim trim_cache_dir(const std::string& dir, std::string_view suffix, uint64_t max_bytes);

/// The same over the files ending in any of `suffixes`, each removed by `remove` (its path):
/// true when it is gone (or was already), false when it stays (its bytes stay counted, as
/// `failed`). A cache whose entries have companions (a lock file) removes them together there.
CacheTrim trim_cache_dir(const std::string& dir, const std::vector<std::string_view>& suffixes,
                         uint64_t max_bytes, const std::function<bool(const std::string&)>& remove);

}  // namespace tessera
