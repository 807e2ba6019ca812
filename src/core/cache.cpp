#include "desync/core/cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace desync::core {

namespace {
// "32768K" -> 33554432; 0 if unreadable.
std::size_t read_cache_size(const std::string& path) {
  std::ifstream f(path);
  std::string text;
  if (!(f >> text) || text.empty()) return 0;
  std::size_t v = 0;
  try {
    v = std::stoul(text);
  } catch (...) {
    return 0;
  }
  if (text.back() == 'K') v *= 1024;
  else if (text.back() == 'M') v *= 1024 * 1024;
  return v;
}

// "0-7" / "0,2,4-5" -> number of CPUs; 0 if unreadable.
int count_cpu_list(const std::string& path) {
  std::ifstream f(path);
  std::string list;
  if (!(f >> list)) return 0;
  int count = 0;
  std::size_t pos = 0;
  while (pos < list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    try {
      count += dash == std::string::npos ? 1 : std::stoi(item.substr(dash + 1)) - std::stoi(item.substr(0, dash)) + 1;
    } catch (...) {
      return 0;
    }
    pos = comma + 1;
  }
  return count;
}
}  // namespace

CacheInfo last_level_cache() {
  CacheInfo info;
  int best_level = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream level_file(dir + "level"), type_file(dir + "type");
    int level = 0;
    std::string type;
    if (!(level_file >> level) || !(type_file >> type)) continue;
    if (type == "Instruction" || level <= best_level) continue;
    const std::size_t bytes = read_cache_size(dir + "size");
    if (bytes == 0) continue;
    best_level = level;
    info.bytes = bytes;
    info.shared_by = std::max(1, count_cpu_list(dir + "shared_cpu_list"));
  }
#ifdef _SC_LEVEL3_CACHE_SIZE
  if (info.bytes == 0) {
    const long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (s > 0) info = {static_cast<std::size_t>(s), 1};
  }
#endif
  return info;
}

int ranks_on_node(MPI_Comm comm) {
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

bool exceeds_cache_share(double bytes, int ranks_on_node, int threads_per_rank, CacheInfo cache) {
  if (cache.bytes == 0) return false;
  const double threads = std::max(1, threads_per_rank);
  const double sharing = std::max(threads, std::min(static_cast<double>(std::max(1, ranks_on_node)) * threads,
                                                    static_cast<double>(std::max(1, cache.shared_by))));
  const double share = static_cast<double>(cache.bytes) * threads / sharing;
  return bytes > share;
}

}  // namespace desync::core
