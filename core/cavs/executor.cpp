// The Executor (core/cavs/executor.hpp): its options, the inputs of a batch,
// and the phases and steps it runs. The ops themselves are in
// executor_rowwise.cpp (fused row-local ops), executor_ops.cpp (gathers,
// scatters, embeddings, losses) and executor_matmul.cpp (merged matmuls,
// weight gradients).
#include "core/cavs/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/blas/blas.hpp"
#include "core/cavs/executor_detail.hpp"
#include "core/common/check.hpp"

namespace taihu::cavs {

using detail::add_row;
using detail::Clock;
using detail::seconds_since;

ExecutorOptions ExecutorOptions::serial() {
  ExecutorOptions o;
  o.schedule = LayoutKind::serial;
  o.eager_lazy = false;
  o.lazy_weight_gradients = false;
  return o;
}

ExecutorOptions ExecutorOptions::reference() {
  ExecutorOptions o = serial();
  o.fuse_elementwise = false;
  o.merge_matmuls = false;
  o.skip_zero_rows = false;
  o.assign_gradients = false;
  return o;
}

Executor::Executor(VertexFunction& f, ExecutorOptions options)
    : f_(f), options_(options), program_(Program::compile(f.shared_definition(),
                                       {options.merge_matmuls, options.fuse_elementwise, options.assign_gradients})) {
  data_.resize(program_->buffers.size());
  grad_.resize(program_->buffers.size());
  int32_t losses = 0;
  for (const Op& op : f.definition().ops)
    loss_index_.push_back(op.kind == OpKind::softmax_cross_entropy ? losses++ : -1);
  merged_weights_.resize(program_->groups.size());
  merged_diffs_.resize(program_->groups.size());
  merged_gradient_pending_.assign(program_->groups.size(), 0);
  for (size_t g = 0; g < program_->groups.size(); ++g) {
    const MatmulGroup& group = program_->groups[g];
    if (group.ops.size() < 2) continue;
    merged_weights_[g].reshape(Shape{group.width, group.in_width});
    merged_diffs_[g].reshape(Shape{group.width, group.in_width});
  }
}

namespace {
// Per-batch buffers (not the fixed-size transient tiles) grow to a quarter
// more than a batch needs: each growth allocates and zeroes fresh pages (page
// faults), and while training starts every few batches is the largest yet.
// Grown to fit exactly, that took 18-19% of a Tree-LSTM executor's time over
// batches 4-39 (SST-like trees, batch 25, one executor); with a quarter more,
// 0.2%.
int64_t with_headroom(int64_t count) { return count + count / 4; }
}  // namespace

void Executor::set_inputs(std::span<const InputGraph> graphs, int32_t first_sample) {
  const auto start = Clock::now();
  schedule_.build(f_.definition(), graphs, options_.schedule, first_sample);
  const int64_t rows = schedule_.num_rows(), edges = schedule_.num_edges();
  // A buffer (data or gradient) holds a fixed tile when transient, else `ld`
  // floats per row or edge of this batch.
  const auto fit = [&](Tensor& buffer, const BufferInfo& info, bool transient) {
    const int64_t count =
        transient ? info.ld * fused_tile_rows : std::max<int64_t>(1, (info.domain == Domain::edge ? edges : rows) * info.ld);
    if (buffer.count() < count) buffer.reshape(Shape{transient ? count : with_headroom(count)});
  };
  for (size_t b = 0; b < program_->buffers.size(); ++b) {
    const BufferInfo& info = program_->buffers[b];
    fit(data_[b], info, info.transient);
    if (info.needs_grad) fit(grad_[b], info, info.grad_transient);
  }
  int64_t losses = 0;
  for (const Op& op : f_.definition().ops) losses += op.kind == OpKind::softmax_cross_entropy;
  if (predictions_.size() < static_cast<size_t>(rows)) predictions_.resize(static_cast<size_t>(rows));
  if (log_normalizers_.size() < static_cast<size_t>(rows * losses))
    log_normalizers_.resize(static_cast<size_t>(rows * losses));
  std::fill(predictions_.begin(), predictions_.begin() + rows, -1);
  loss_ = 0;
  loss_vertices_ = 0;
  weight_gradients_prepared_ = false;  // a batch cut short never adds its scratch
  std::fill(merged_gradient_pending_.begin(), merged_gradient_pending_.end(), 0);
  stats_.schedule_seconds += seconds_since(start);
  stats_.batches += 1;
  stats_.rounds += schedule_.num_rounds();
  stats_.vertices += rows;
}

Executor::Range Executor::round_range(int32_t round) const {
  require(round >= 0 && round < schedule_.num_rounds(), "cavs executor: round {} outside [0, {})", round,
          schedule_.num_rounds());
  Range r;
  r.round = round;
  r.begin = schedule_.round_begin(round);
  r.end = schedule_.round_end(round);
  r.edge_begin = schedule_.child_offsets()[static_cast<size_t>(r.begin)];
  r.edge_end = schedule_.child_offsets()[static_cast<size_t>(r.end)];
  return r;
}

Executor::Range Executor::all_range() const {
  return Range{-1, 0, schedule_.num_rows(), 0, schedule_.num_edges()};
}

// ---------------------------------------------------------------- phases

void Executor::forward_eager() {
  const auto start = Clock::now();
  loss_ = 0;
  loss_vertices_ = 0;
  for (size_t g = 0; g < program_->groups.size(); ++g) {
    const MatmulGroup& group = program_->groups[g];
    if (group.ops.size() < 2) continue;
    float* dst = merged_weights_[g].ptr();
    for (size_t m = 0; m < group.ops.size(); ++m) {
      const Op& op = f_.definition().ops[static_cast<size_t>(group.ops[m])];
      std::memcpy(dst + static_cast<int64_t>(group.columns[m]) * group.in_width, weight(op.param),
                  sizeof(float) * static_cast<size_t>(op.width) * static_cast<size_t>(group.in_width));
    }
  }
  if (options_.eager_lazy) run_steps_forward(program_->steps[0], all_range());
  stats_.forward_seconds += seconds_since(start);
}

void Executor::forward_round(int32_t round) {
  const auto start = Clock::now();
  const Range r = round_range(round);
  if (options_.eager_lazy) {
    run_steps_forward(program_->steps[1], r);
  } else {
    for (const auto& steps : program_->steps) run_steps_forward(steps, r);
  }
  stats_.forward_seconds += seconds_since(start);
}

void Executor::forward_lazy() {
  const auto start = Clock::now();
  if (options_.eager_lazy) run_steps_forward(program_->steps[2], all_range());
  stats_.forward_seconds += seconds_since(start);
}

void Executor::backward_lazy() {
  const auto start = Clock::now();
  const auto tokens = schedule_.tokens();
  gradient_tokens_.insert(gradient_tokens_.end(), tokens.begin(), tokens.end());
  const int64_t rows = schedule_.num_rows(), edges = schedule_.num_edges();
  for (size_t b = 0; b < program_->buffers.size(); ++b) {
    const BufferInfo& info = program_->buffers[b];
    if (!info.needs_grad || info.assigned || info.grad_transient || (options_.eager_lazy ? info.round_local : info.round_local_all)) continue;
    const int64_t count = (info.domain == Domain::edge ? edges : rows) * info.ld;
    std::memset(grad_[b].ptr(), 0, sizeof(float) * static_cast<size_t>(count));
  }
  if (options_.eager_lazy) run_steps_backward(program_->steps[2], all_range());
  stats_.backward_seconds += seconds_since(start);
}

void Executor::backward_round(int32_t round) {
  const auto start = Clock::now();
  const Range r = round_range(round);
  for (size_t b = 0; b < program_->buffers.size(); ++b) {
    const BufferInfo& info = program_->buffers[b];
    if (!info.needs_grad || info.assigned || info.grad_transient || !(options_.eager_lazy ? info.round_local : info.round_local_all)) continue;
    const int64_t first = info.domain == Domain::edge ? r.edge_begin : r.begin;
    const int64_t last = info.domain == Domain::edge ? r.edge_end : r.end;
    std::memset(grad_[b].ptr() + first * info.ld, 0, sizeof(float) * static_cast<size_t>((last - first) * info.ld));
  }
  if (options_.eager_lazy) {
    run_steps_backward(program_->steps[1], r);
  } else {
    for (size_t p = 3; p-- > 0;) run_steps_backward(program_->steps[p], r);
  }
  stats_.backward_seconds += seconds_since(start);
}

void Executor::backward_eager() {
  const auto start = Clock::now();
  if (options_.eager_lazy) run_steps_backward(program_->steps[0], all_range());
  stats_.backward_seconds += seconds_since(start);
}

void Executor::prepare_weight_gradients() {
  if (!options_.lazy_weight_gradients) return;
  const auto start = Clock::now();
  for (size_t g = 0; g < program_->groups.size(); ++g) {
    if (program_->groups[g].ops.size() < 2) continue;
    merged_gradient_pending_[g] = matmul_weight_gradient(static_cast<int32_t>(g), merged_diffs_[g].ptr(), 0.0f);
  }
  weight_gradients_prepared_ = true;
  stats_.weight_gradient_seconds += seconds_since(start);
}

void Executor::accumulate_weight_gradients() {
  if (!options_.lazy_weight_gradients) return;
  require(weight_gradients_prepared_, "cavs executor: accumulate_weight_gradients() before prepare_weight_gradients()");
  weight_gradients_prepared_ = false;
  const auto start = Clock::now();
  const Definition& d = f_.definition();
  for (size_t gi = 0; gi < program_->groups.size(); ++gi) {
    const MatmulGroup& g = program_->groups[gi];
    if (g.ops.size() < 2) {
      matmul_weight_gradient(static_cast<int32_t>(gi), weight_diff(d.ops[static_cast<size_t>(g.ops[0])].param), 1.0f);
      continue;
    }
    if (!merged_gradient_pending_[gi]) continue;
    merged_gradient_pending_[gi] = 0;
    for (size_t m = 0; m < g.ops.size(); ++m) {
      const Op& op = d.ops[static_cast<size_t>(g.ops[m])];
      blas::axpy(static_cast<int64_t>(op.width) * g.in_width, 1.0f,
                 merged_diffs_[gi].ptr() + static_cast<int64_t>(g.columns[m]) * g.in_width, weight_diff(op.param));
    }
  }
  const Range all = all_range();
  const auto& ops = d.ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (ops[i].kind == OpKind::add_bias && transient(id)) {  // summed row by row in backward
      float* scratch = bias_scratch(id);
      add_row(weight_diff(ops[i].param), scratch, ops[i].width);
      std::fill(scratch, scratch + ops[i].width, 0.0f);
    } else if (ops[i].kind == OpKind::add_bias) {
      bias_weight_gradient(id, 0, ops[i].domain == Domain::edge ? all.edge_end : all.end);
    }
    else if (ops[i].kind == OpKind::embedding)
      embedding_weight_gradient(id, 0, all.end);
  }
  stats_.weight_gradient_seconds += seconds_since(start);
}

std::vector<uint8_t> Executor::embedding_tables() const {
  const Definition& d = f_.definition();
  std::vector<uint8_t> table(d.params.size(), 0);
  for (const Op& op : d.ops)
    if (op.kind == OpKind::embedding) table[static_cast<size_t>(op.param)] = 1;
  return table;
}

void Executor::zero_gradients() {
  const Definition& d = f_.definition();
  const std::vector<uint8_t> table = embedding_tables();
  for (size_t p = 0; p < d.params.size(); ++p) {
    Tensor& diff = f_.params()[p].blob->diff();
    if (!table[p]) {
      diff.zero();
      continue;
    }
    const auto width = static_cast<size_t>(d.params[p].shape[1]);
    for (int32_t t : gradient_tokens_)
      if (t >= 0) std::memset(diff.ptr() + static_cast<size_t>(t) * width, 0, sizeof(float) * width);
  }
  gradient_tokens_.clear();
}

std::vector<RowSparseGradient> Executor::sparse_gradients() const {
  std::vector<int32_t> rows;
  for (const int32_t t : gradient_tokens_)
    if (t >= 0) rows.push_back(t);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::vector<RowSparseGradient> sparse;
  const std::vector<uint8_t> table = embedding_tables();
  for (size_t p = 0; p < table.size(); ++p)
    if (table[p]) sparse.push_back({f_.params()[p].blob.get(), rows});
  return sparse;
}

void Executor::run_forward() {
  forward_eager();
  for (int32_t r = 0; r < num_rounds(); ++r) forward_round(r);
  forward_lazy();
}

void Executor::run_backward() {
  backward_lazy();
  for (int32_t r = num_rounds(); r-- > 0;) backward_round(r);
  backward_eager();
  prepare_weight_gradients();
  accumulate_weight_gradients();
}

MatrixView Executor::output(size_t k) const {
  const auto& pushes = f_.definition().push_values;
  require(k < pushes.size(), "cavs executor: output {} requested, F pushes {} values", k, pushes.size());
  return value(Value{pushes[k]});
}

MatrixView Executor::value(Value v) const {
  const auto& ops = f_.definition().ops;
  require(v.id >= 0 && static_cast<size_t>(v.id) < ops.size() && program_->value_buffer[static_cast<size_t>(v.id)] >= 0,
          "cavs executor: value {} has no rows", v.id);
  const auto b = static_cast<size_t>(program_->value_buffer[static_cast<size_t>(v.id)]);
  const BufferInfo& info = program_->buffers[b];
  MatrixView m;
  m.data = data_[b].ptr() + program_->value_column[static_cast<size_t>(v.id)];
  m.rows = info.domain == Domain::edge ? schedule_.num_edges() : schedule_.num_rows();
  if (info.transient) m.rows = std::min<int64_t>(m.rows, fused_tile_rows);  // the scratch tile only
  m.ld = info.row_stride;
  m.width = ops[static_cast<size_t>(v.id)].width;
  return m;
}

// ---------------------------------------------------------------- steps

// A row-local step over its domain's rows of `r`: tile by tile when fused (one
// pass over memory per tile; transient buffers hold one tile), else at once.
template <class RunRows>
void Executor::for_each_tile(const Instruction& s, const Range& r, RunRows&& run_rows) {
  const int32_t b = s.domain == Domain::edge ? r.edge_begin : r.begin;
  const int32_t e = s.domain == Domain::edge ? r.edge_end : r.end;
  if (!options_.fuse_elementwise) return run_rows(b, e);
  for (int32_t tile = b; tile < e; tile += fused_tile_rows) {
    tile_origin_ = tile;
    run_rows(tile, std::min(e, tile + fused_tile_rows));
  }
}

void Executor::run_steps_forward(const std::vector<Instruction>& steps, const Range& r) {
  for (const Instruction& s : steps) {
    switch (s.kind) {
      case InstructionKind::op:
        op_forward(s.index, r);
        break;
      case InstructionKind::matmul:
        matmul_forward(s.index, r);
        break;
      case InstructionKind::rowwise:
        for_each_tile(s, r, [&](int32_t begin, int32_t end) {
          for (int32_t id : s.ops) rowwise_forward(id, begin, end);
        });
        break;
    }
  }
}

void Executor::run_steps_backward(const std::vector<Instruction>& steps, const Range& r) {
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const Instruction& s = *it;
    switch (s.kind) {
      case InstructionKind::op:
        op_backward(s.index, r);
        break;
      case InstructionKind::matmul:
        matmul_backward(s.index, r);
        break;
      case InstructionKind::rowwise:
        for_each_tile(s, r, [&](int32_t begin, int32_t end) {
          // Tile-sized gradient buffers start each tile at zero.
          if (options_.fuse_elementwise)
            for (int32_t buffer : s.zero_grad_rows) {
              const BufferInfo& info = program_->buffers[static_cast<size_t>(buffer)];
              std::memset(grad_[static_cast<size_t>(buffer)].ptr(), 0,
                          sizeof(float) * static_cast<size_t>(info.ld) * static_cast<size_t>(end - begin));
            }
          for (auto id = s.ops.rbegin(); id != s.ops.rend(); ++id) rowwise_backward(*id, begin, end);
        });
        break;
    }
  }
}

}  // namespace taihu::cavs
