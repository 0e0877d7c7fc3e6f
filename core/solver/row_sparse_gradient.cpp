#include "core/solver/row_sparse_gradient.hpp"

#include <algorithm>
#include <iterator>

namespace taihu {

void merge_sparse_gradients(std::vector<RowSparseGradient>& into, const std::vector<RowSparseGradient>& more) {
  for (const RowSparseGradient& g : more) {
    const auto same = std::find_if(into.begin(), into.end(), [&](const auto& h) { return h.blob == g.blob; });
    if (same == into.end()) {
      into.push_back(g);
      continue;
    }
    std::vector<int32_t> rows;
    rows.reserve(same->rows.size() + g.rows.size());
    std::set_union(same->rows.begin(), same->rows.end(), g.rows.begin(), g.rows.end(), std::back_inserter(rows));
    same->rows = std::move(rows);
  }
}

}  // namespace taihu
