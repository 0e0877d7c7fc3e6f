#pragma once
// A gradient known to be exactly zero outside some rows of a 2-D param: an
// embedding table's gradient touches only the rows a batch looked up, a few
// hundred of a table that may be 100x the rest of the model. A solver whose
// update leaves a zero-gradient element unchanged (plain SGD) then updates
// those rows only, with the same bits as the whole table (Solver::step).

#include <cstdint>
#include <vector>

namespace taihu {

class Blob;

struct RowSparseGradient {
  const Blob* blob = nullptr;  // the param's blob
  std::vector<int32_t> rows;   // sorted, unique; every other row's diff is 0
};

// Adds `more`'s rows to `into` (a union per table): several executors'
// gradients summed into the same diffs.
void merge_sparse_gradients(std::vector<RowSparseGradient>& into, const std::vector<RowSparseGradient>& more);

}  // namespace taihu
