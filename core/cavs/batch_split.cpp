#include "core/cavs/batch_split.hpp"

#include <algorithm>
#include <cstdint>

namespace taihu::cavs {

std::vector<GraphRange> split_by_vertices(std::span<const InputGraph> graphs, std::size_t parts) {
  int64_t total = 0;
  for (const auto& g : graphs) total += g.num_vertices();
  const std::size_t k = std::min(parts, graphs.size());
  std::vector<GraphRange> ranges;
  ranges.reserve(k);
  std::size_t begin = 0;
  int64_t seen = 0;
  for (std::size_t p = 0; p < k; ++p) {
    const int64_t target = total * static_cast<int64_t>(p + 1) / static_cast<int64_t>(k);
    const std::size_t limit = graphs.size() - (k - p - 1);  // one graph for each later part
    std::size_t end = begin;
    while (end < limit && (end == begin || seen + graphs[end].num_vertices() / 2 <= target)) {
      seen += graphs[end].num_vertices();
      ++end;
    }
    if (p + 1 == k) end = graphs.size();
    ranges.push_back({begin, end});
    begin = end;
  }
  return ranges;
}

}  // namespace taihu::cavs
