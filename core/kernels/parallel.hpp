#pragma once
// A small persistent thread pool: the tiles of every BLAS product
// (core/blas/tiling.hpp) and the memory-bound parts around them (im2col,
// col2im, gathers) run on it.
//
// Work is cut into pieces claimed from an atomic counter, and the calling
// thread claims pieces too: if a worker is slow to wake (the machine is
// shared), the caller simply does more of the work instead of waiting.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace taihu {

namespace detail {
void run_pieces(int64_t pieces, void (*call)(void*, int64_t), void* context);
}

// Threads used by parallel_for: compute_threads() (1 inside a parallel_for).
int parallel_threads();

// Calls fn(piece) for every piece in [0, pieces), possibly concurrently.
// Runs inline when there is one piece or one thread, when called from inside
// a parallel_for, or while another thread is using the pool.
template <class Fn>
void parallel_for(int64_t pieces, Fn&& fn) {
  if (pieces <= 1 || parallel_threads() <= 1) {
    for (int64_t i = 0; i < pieces; ++i) fn(i);
    return;
  }
  auto call = [](void* context, int64_t piece) { (*static_cast<std::remove_reference_t<Fn>*>(context))(piece); };
  detail::run_pieces(pieces, call, const_cast<void*>(static_cast<const void*>(&fn)));
}

// Streaming work (floats read or written) below which waking another thread
// does not pay: use as parallel_ranges' min_size, divided by the work per item.
// Settable (bench_train --grain) so that hosts of many cores can measure it.
int64_t parallel_grain();
void set_parallel_grain(int64_t floats);

// Calls fn(i) for every item in [0, items): side by side on the compute
// threads when the items' streaming work together (`floats`) is worth waking
// threads for, else in order on this thread.
template <class Fn>
void parallel_for_items(int64_t items, int64_t floats, Fn&& fn) {
  if (floats < parallel_grain()) {
    for (int64_t i = 0; i < items; ++i) fn(i);
    return;
  }
  parallel_for(items, fn);
}

// Splits [0, n) into about `pieces_per_thread` pieces per thread, each at
// least `min_size` long, and calls fn(begin, end) for each.
template <class Fn>
void parallel_ranges(int64_t n, int64_t min_size, Fn&& fn, int64_t pieces_per_thread = 4) {
  const int64_t threads = parallel_threads();
  int64_t pieces = threads <= 1 ? 1 : threads * pieces_per_thread;
  pieces = std::max<int64_t>(1, std::min(pieces, n / std::max<int64_t>(min_size, 1)));
  if (pieces <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  parallel_for(pieces, [&](int64_t piece) { fn(piece * n / pieces, (piece + 1) * n / pieces); });
}

}  // namespace taihu
