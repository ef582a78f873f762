#include "tessera/backend/cache_limit.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tessera {

void touch_cache_entry(const std::string& path) {
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
}

bool remove_cache_entry(const std::string& path) {
  return ::unlink(path.c_str()) == 0 || errno == ENOENT;  // ENOENT: another process did
}

CacheTrim trim_cache_dir(const std::string& dir, std::string_view suffix, uint64_t max_bytes) {
  return trim_cache_dir(dir, std::vector<std::string_view>{suffix}, max_bytes, remove_cache_entry);
}

CacheTrim trim_cache_dir(const std::string& dir, const std::vector<std::string_view>& suffixes,
                         uint64_t max_bytes,
                         const std::function<bool(const std::string&)>& remove) {
  auto ends_in_one = [&suffixes](std::string_view name) {
    for (std::string_view suffix : suffixes) {
      if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
        return true;
      }
    }
    return false;
  };
  struct Entry {
    std::string path;
    uint64_t bytes;
    timespec used;
  };
  CacheTrim out;
  std::vector<Entry> entries;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!ends_in_one(name)) continue;
    std::string path = dir;
    if (path.empty() || path.back() != '/') path += '/';
    path += name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // removed meanwhile
    entries.push_back({std::move(path), static_cast<uint64_t>(st.st_size), st.st_mtim});
    out.bytes_before += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  out.bytes_after = out.bytes_before;
  if (out.bytes_before <= max_bytes) return out;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry& e : entries) {
    if (out.bytes_after <= max_bytes) break;
    if (remove(e.path)) {
      out.bytes_after -= e.bytes;
      ++out.removed;
    } else {
      ++out.failed;
    }
  }
  return out;
}

}  // namespace tessera
