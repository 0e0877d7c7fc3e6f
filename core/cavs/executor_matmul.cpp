// The Executor's merged matmuls (core/cavs/executor.hpp), forward and
// backward over the rows that may be non-zero, and the weight gradients of
// matmuls, biases and embeddings. (executor.cpp runs the phases and steps,
// executor_rowwise.cpp the fused row-local ops, executor_ops.cpp the others.)
#include "core/cavs/executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/blas/blas.hpp"
#include "core/cavs/executor_detail.hpp"

namespace taihu::cavs {

using detail::add_row;
using detail::Clock;
using detail::seconds_since;

void Executor::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const auto start = Clock::now();
  blas::gemm(trans_a ? blas::Trans::yes : blas::Trans::no, trans_b ? blas::Trans::yes : blas::Trans::no, m, n, k,
             1.0f, a, lda, b, ldb, beta, c, ldc);
  stats_.gemm_seconds += seconds_since(start);
  ++stats_.gemm_calls;
  stats_.gemm_flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

// Calls fn(lo, hi) for the sub-ranges of [begin, end) whose input rows may be
// non-zero; the others hold zero input, so their outputs are zero too.
template <class Fn>
void Executor::for_active_rows(const MatmulGroup& g, const Range& r, int32_t begin, int32_t end, Fn&& fn) const {
  if (!options_.skip_zero_rows) {
    fn(begin, end);
    return;
  }
  if (g.zero_at_leaves || g.dead_at_leaves) {
    if (r.round >= 0 && schedule_.leaf_round(r.round)) return;
    if (g.domain == Domain::vertex && schedule_.kind() == LayoutKind::batched)
      begin = std::max(begin, schedule_.first_inner_row());
  }
  if (g.sparse_input) {
    const auto runs = schedule_.token_runs();
    const size_t pairs = runs.size() / 2;
    // First run ending after begin.
    size_t lo = 0, hi = pairs;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (runs[2 * mid + 1] <= begin)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (size_t k = lo; k < pairs && runs[2 * k] < end; ++k) {
      const int32_t a = std::max(begin, runs[2 * k]), b = std::min(end, runs[2 * k + 1]);
      if (a < b) fn(a, b);
    }
    return;
  }
  if (begin < end) fn(begin, end);
}

void Executor::matmul_forward(int32_t gi, const Range& r) {
  const MatmulGroup& g = program_->groups[static_cast<size_t>(gi)];
  const Definition& d = f_.definition();
  const int32_t begin = g.domain == Domain::edge ? r.edge_begin : r.begin;
  const int32_t end = g.domain == Domain::edge ? r.edge_end : r.end;
  const float* w = g.ops.size() > 1 ? merged_weights_[static_cast<size_t>(gi)].ptr()
                                    : weight(d.ops[static_cast<size_t>(g.ops[0])].param);
  const float* x = data(g.input);
  const int64_t ldx = ld(g.input);
  float* y = data_[static_cast<size_t>(g.buffer)].ptr();
  const int64_t ldy = program_->buffers[static_cast<size_t>(g.buffer)].ld;
  int32_t done = begin;  // rows below `done` are written
  auto zero_rows = [&](int32_t a, int32_t b) {
    for (int64_t i = a; i < b; ++i) std::memset(y + i * ldy, 0, sizeof(float) * static_cast<size_t>(g.width));
  };
  for_active_rows(g, r, begin, end, [&](int32_t lo, int32_t hi) {
    zero_rows(done, lo);
    gemm(false, true, hi - lo, g.width, g.in_width, x + lo * ldx, ldx, w, g.in_width, 0.0f, y + lo * ldy, ldy);
    done = hi;
  });
  zero_rows(done, end);
}

void Executor::matmul_backward(int32_t gi, const Range& r) {
  const MatmulGroup& g = program_->groups[static_cast<size_t>(gi)];
  const Definition& d = f_.definition();
  const int32_t begin = g.domain == Domain::edge ? r.edge_begin : r.begin;
  const int32_t end = g.domain == Domain::edge ? r.edge_end : r.end;
  if (program_->needs_grad[static_cast<size_t>(g.input)]) {
    const float* w = g.ops.size() > 1 ? merged_weights_[static_cast<size_t>(gi)].ptr()
                                      : weight(d.ops[static_cast<size_t>(g.ops[0])].param);
    float* dx = grad(g.input);
    const int64_t ldx = ld(g.input);
    const float* dy = grad_[static_cast<size_t>(g.buffer)].ptr();
    const int64_t ldy = program_->buffers[static_cast<size_t>(g.buffer)].ld;
    const bool assign = program_->assign_grad[static_cast<size_t>(g.input)] != 0;
    int32_t done = begin;
    auto zero_rows = [&](int32_t a, int32_t b) {
      if (!assign) return;
      for (int64_t i = a; i < b; ++i) std::memset(dx + i * ldx, 0, sizeof(float) * static_cast<size_t>(g.in_width));
    };
    for_active_rows(g, r, begin, end, [&](int32_t lo, int32_t hi) {
      zero_rows(done, lo);
      gemm(false, false, hi - lo, g.in_width, g.width, dy + lo * ldy, ldy, w, g.in_width, assign ? 0.0f : 1.0f,
           dx + lo * ldx, ldx);
      done = hi;
    });
    zero_rows(done, end);
  }
  if (!options_.lazy_weight_gradients) {
    const float* x = data(g.input);
    const int64_t ldx = ld(g.input);
    const float* dy = grad_[static_cast<size_t>(g.buffer)].ptr();
    const int64_t ldy = program_->buffers[static_cast<size_t>(g.buffer)].ld;
    for_active_rows(g, r, begin, end, [&](int32_t lo, int32_t hi) {
      // Per step the rows are few: one GEMM per member straight into its diff.
      for (size_t m = 0; m < g.ops.size(); ++m) {
        const Op& op = d.ops[static_cast<size_t>(g.ops[m])];
        gemm(true, false, op.width, g.in_width, hi - lo, dy + lo * ldy + g.columns[m], ldy, x + lo * ldx, ldx, 1.0f,
             weight_diff(op.param), g.in_width);
      }
    });
  }
}

bool Executor::matmul_weight_gradient(int32_t gi, float* dw, float beta) {
  const MatmulGroup& g = program_->groups[static_cast<size_t>(gi)];
  const Range all = all_range();
  const int32_t end = g.domain == Domain::edge ? all.edge_end : all.end;
  const float* x = data(g.input);
  const int64_t ldx = ld(g.input);
  const float* dy = grad_[static_cast<size_t>(g.buffer)].ptr();
  const int64_t ldy = program_->buffers[static_cast<size_t>(g.buffer)].ld;
  bool any = false;
  for_active_rows(g, all, 0, end, [&](int32_t lo, int32_t hi) {
    gemm(true, false, g.width, g.in_width, hi - lo, dy + lo * ldy, ldy, x + lo * ldx, ldx, beta, dw, g.in_width);
    beta = 1.0f;
    any = true;
  });
  return any;
}

float* Executor::bias_scratch(int32_t id) {
  if (bias_scratch_.empty()) bias_scratch_.resize(f_.definition().ops.size());
  auto& scratch = bias_scratch_[static_cast<size_t>(id)];
  if (scratch.empty()) scratch.assign(static_cast<size_t>(f_.definition().ops[static_cast<size_t>(id)].width), 0.0f);
  return scratch.data();
}

void Executor::bias_weight_gradient(int32_t id, int32_t begin, int32_t end, float* db) {
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  if (db == nullptr) db = weight_diff(op.param);
  const float* dy = grad(id);
  const int64_t ldy = gld(id);
  for (int64_t i = begin; i < end; ++i) add_row(db, dy + i * ldy, op.width);
}

void Executor::embedding_weight_gradient(int32_t id, int32_t begin, int32_t end) {
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  float* de = weight_diff(op.param);
  const float* dy = grad(id);
  const int64_t ldy = ld(id);
  const auto tokens = schedule_.tokens();
  for (int32_t i = begin; i < end; ++i) {
    const int32_t t = tokens[static_cast<size_t>(i)];
    if (t >= 0) add_row(de + static_cast<int64_t>(t) * op.width, dy + i * ldy, op.width);
  }
}

}  // namespace taihu::cavs
