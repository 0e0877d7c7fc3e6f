#include "core/cavs/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/blas/blas.hpp"
#include "core/common/check.hpp"
#include "core/common/multiversion.hpp"
#include "core/kernels/elementwise.hpp"

namespace taihu::cavs {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void add_row(float* __restrict y, const float* __restrict x, int32_t w) {
  for (int32_t j = 0; j < w; ++j) y[j] += x[j];
}

}  // namespace

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

// ---------------------------------------------------------------- row-local ops

// The row-wise and per-vertex loops are built for AVX2 too (core/common/multiversion.hpp).
TAIHU_MULTIVERSION void Executor::rowwise_forward(int32_t id, int32_t begin, int32_t end) {
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  float* y = data(id);
  const int64_t ldy = ld(id);
  auto in = [&](size_t k) { return op.inputs[k]; };
  switch (op.kind) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: {
      const float* a = data(in(0));
      const float* b = data(in(1));
      const int64_t lda = ld(in(0)), ldb = ld(in(1));
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* ar = a + i * lda;
        const float* br = b + i * ldb;
        if (op.kind == OpKind::add)
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] + br[j];
        else if (op.kind == OpKind::sub)
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] - br[j];
        else
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] * br[j];
      }
      break;
    }
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::relu:
    case OpKind::one_minus: {
      const float* x = data(in(0));
      const int64_t ldx = ld(in(0));
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* __restrict xr = x + i * ldx;
        if (op.kind == OpKind::sigmoid)
          for (int32_t j = 0; j < w; ++j) yr[j] = kernels::fast_sigmoid(xr[j]);
        else if (op.kind == OpKind::tanh)
          for (int32_t j = 0; j < w; ++j) yr[j] = kernels::fast_tanh(xr[j]);
        else if (op.kind == OpKind::relu)
          for (int32_t j = 0; j < w; ++j) yr[j] = xr[j] > 0.0f ? xr[j] : 0.0f;
        else
          for (int32_t j = 0; j < w; ++j) yr[j] = 1.0f - xr[j];
      }
      break;
    }
    case OpKind::add_bias: {
      const float* x = data(in(0));
      const int64_t ldx = ld(in(0));
      const float* __restrict bias = weight(op.param);
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* __restrict xr = x + i * ldx;
        for (int32_t j = 0; j < w; ++j) yr[j] = xr[j] + bias[j];
      }
      break;
    }
    case OpKind::concat: {
      int32_t col = 0;
      for (int32_t v : op.inputs) {
        const float* x = data(v);
        const int64_t ldx = ld(v);
        const int32_t wv = f_.definition().ops[static_cast<size_t>(v)].width;
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(y + i * ldy + col, x + i * ldx, sizeof(float) * static_cast<size_t>(wv));
        col += wv;
      }
      break;
    }
    default:
      raise("cavs executor: {} is not a row-local op", op_name(op.kind));
  }
}

TAIHU_MULTIVERSION void Executor::rowwise_backward(int32_t id, int32_t begin, int32_t end) {
  const Program& p = *program_;
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const float* dy = grad(id);
  const float* y = data(id);
  const int64_t ldy = ld(id), ldg = gld(id);
  auto in = [&](size_t k) { return op.inputs[k]; };
  auto wants = [&](int32_t v) { return p.needs_grad[static_cast<size_t>(v)] != 0; };
  auto assigns = [&](int32_t v) { return p.assign_grad[static_cast<size_t>(v)] != 0; };
  // dx (= or +=) f(j) over the rows, for input v.
  auto write = [&](int32_t v, auto&& f) {
    float* dx = grad(v);
    const int64_t ldx = gld(v);
    if (assigns(v)) {
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict dxr = dx + i * ldx;
        for (int32_t j = 0; j < w; ++j) dxr[j] = f(i, j);
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict dxr = dx + i * ldx;
        for (int32_t j = 0; j < w; ++j) dxr[j] += f(i, j);
      }
    }
  };
  switch (op.kind) {
    case OpKind::add:
    case OpKind::sub:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
      if (wants(in(1))) {
        if (op.kind == OpKind::add)
          write(in(1), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
        else
          write(in(1), [&](int64_t i, int32_t j) { return -dy[i * ldg + j]; });
      }
      break;
    case OpKind::mul:
      for (size_t k = 0; k < 2; ++k) {
        if (!wants(in(k))) continue;
        const float* other = data(in(1 - k));
        const int64_t ldo = ld(in(1 - k));
        write(in(k), [&](int64_t i, int32_t j) { return dy[i * ldg + j] * other[i * ldo + j]; });
      }
      break;
    case OpKind::sigmoid:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) {
          const float v = y[i * ldy + j];
          return dy[i * ldg + j] * v * (1.0f - v);
        });
      break;
    case OpKind::tanh:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) {
          const float v = y[i * ldy + j];
          return dy[i * ldg + j] * (1.0f - v * v);
        });
      break;
    case OpKind::relu:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) { return y[i * ldy + j] > 0.0f ? dy[i * ldg + j] : 0.0f; });
      break;
    case OpKind::one_minus:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return -dy[i * ldg + j]; });
      break;
    case OpKind::add_bias:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
      if (!options_.lazy_weight_gradients)
        bias_weight_gradient(id, begin, end);
      else if (transient(id))
        bias_weight_gradient(id, begin, end, bias_scratch(id));
      break;
    case OpKind::concat: {
      int32_t col = 0;
      for (int32_t v : op.inputs) {
        const int32_t wv = f_.definition().ops[static_cast<size_t>(v)].width;
        if (wants(v)) {
          float* dx = grad(v);
          const int64_t ldx = gld(v);
          for (int64_t i = begin; i < end; ++i) {
            if (assigns(v))
              std::memcpy(dx + i * ldx, dy + i * ldg + col, sizeof(float) * static_cast<size_t>(wv));
            else
              add_row(dx + i * ldx, dy + i * ldg + col, wv);
          }
        }
        col += wv;
      }
      break;
    }
    default:
      raise("cavs executor: {} is not a row-local op", op_name(op.kind));
  }
}

// ---------------------------------------------------------------- other ops

TAIHU_MULTIVERSION void Executor::op_forward(int32_t id, const Range& r) {
  const Definition& d = f_.definition();
  const Op& op = d.ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const auto offsets = schedule_.child_offsets();
  const auto child_rows = schedule_.child_rows();
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(w);
  switch (op.kind) {
    case OpKind::gather:
    case OpKind::gather_sum:
    case OpKind::children: {
      const float* s = data(d.scatter_value);
      const int64_t lds = ld(d.scatter_value);
      float* y = data(id);
      const int64_t ldy = ld(id);
      if (op.kind == OpKind::gather) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          const int32_t c = schedule_.child(i, op.slot);
          if (c < 0)
            std::memset(y + i * ldy, 0, row_bytes);
          else
            std::memcpy(y + i * ldy, s + c * lds, row_bytes);
        }
      } else if (op.kind == OpKind::gather_sum) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          float* yr = y + i * ldy;
          std::memset(yr, 0, row_bytes);
          for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
            add_row(yr, s + child_rows[static_cast<size_t>(e)] * lds, w);
        }
      } else {
        for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
          std::memcpy(y + e * ldy, s + child_rows[static_cast<size_t>(e)] * lds, row_bytes);
      }
      break;
    }
    case OpKind::to_edges: {
      const float* x = data(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      float* y = data(id);
      const int64_t ldy = ld(id);
      const auto parents = schedule_.edge_parents();
      for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
        std::memcpy(y + e * ldy, x + parents[static_cast<size_t>(e)] * ldx, row_bytes);
      break;
    }
    case OpKind::sum_children: {
      const float* x = data(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      float* y = data(id);
      const int64_t ldy = ld(id);
      for (int32_t i = r.begin; i < r.end; ++i) {
        float* yr = y + i * ldy;
        std::memset(yr, 0, row_bytes);
        for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
          add_row(yr, x + e * ldx, w);
      }
      break;
    }
    case OpKind::embedding: {
      const float* table = weight(op.param);
      float* y = data(id);
      const int64_t ldy = ld(id);
      const auto tokens = schedule_.tokens();
      for (int32_t i = r.begin; i < r.end; ++i) {
        const int32_t t = tokens[static_cast<size_t>(i)];
        if (t < 0)
          std::memset(y + i * ldy, 0, row_bytes);
        else
          std::memcpy(y + i * ldy, table + static_cast<int64_t>(t) * w, row_bytes);
      }
      break;
    }
    case OpKind::softmax_cross_entropy: {
      const int32_t logits_id = op.inputs[0];
      const float* x = data(logits_id);
      const int64_t ldx = ld(logits_id);
      const int32_t c = d.ops[static_cast<size_t>(logits_id)].width;
      const int32_t k = loss_index_[static_cast<size_t>(id)];  // which loss this is
      float* lse = log_normalizers_.data() + static_cast<int64_t>(k) * schedule_.num_rows();
      const auto labels = schedule_.labels();
      for (int32_t i = r.begin; i < r.end; ++i) {
        const float* xr = x + i * ldx;
        int32_t best = 0;
        float m = xr[0];
        for (int32_t j = 1; j < c; ++j)
          if (xr[j] > m) {
            m = xr[j];
            best = j;
          }
        if (k == 0) predictions_[static_cast<size_t>(i)] = best;
        const int32_t label = labels[static_cast<size_t>(i)];
        if (label < 0) continue;
        float sum = 0.0f;
        for (int32_t j = 0; j < c; ++j) sum += kernels::fast_exp(xr[j] - m);
        lse[i] = m + std::log(sum);
        loss_ += static_cast<double>(lse[i] - xr[label]);
        ++loss_vertices_;
      }
      break;
    }
    default:
      raise("cavs executor: no forward for {}", d.describe(id));
  }
}

TAIHU_MULTIVERSION void Executor::op_backward(int32_t id, const Range& r) {
  const Definition& d = f_.definition();
  const Program& p = *program_;
  const Op& op = d.ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const auto offsets = schedule_.child_offsets();
  const auto child_rows = schedule_.child_rows();
  switch (op.kind) {
    case OpKind::gather:
    case OpKind::gather_sum:
    case OpKind::children: {
      if (!p.needs_grad[static_cast<size_t>(d.scatter_value)]) break;
      float* ds = grad(d.scatter_value);
      const int64_t lds = ld(d.scatter_value);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      if (op.kind == OpKind::gather) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          const int32_t c = schedule_.child(i, op.slot);
          if (c >= 0) add_row(ds + c * lds, dy + i * ldy, w);
        }
      } else if (op.kind == OpKind::gather_sum) {
        for (int32_t i = r.begin; i < r.end; ++i)
          for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
            add_row(ds + child_rows[static_cast<size_t>(e)] * lds, dy + i * ldy, w);
      } else {
        for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
          add_row(ds + child_rows[static_cast<size_t>(e)] * lds, dy + e * ldy, w);
      }
      break;
    }
    case OpKind::to_edges: {
      if (!p.needs_grad[static_cast<size_t>(op.inputs[0])]) break;
      float* dx = grad(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      const auto parents = schedule_.edge_parents();
      for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
        add_row(dx + parents[static_cast<size_t>(e)] * ldx, dy + e * ldy, w);
      break;
    }
    case OpKind::sum_children: {
      if (!p.needs_grad[static_cast<size_t>(op.inputs[0])]) break;
      float* dx = grad(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      const bool assign = p.assign_grad[static_cast<size_t>(op.inputs[0])] != 0;
      for (int32_t i = r.begin; i < r.end; ++i)
        for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e) {
          if (assign)
            std::memcpy(dx + e * ldx, dy + i * ldy, sizeof(float) * static_cast<size_t>(w));
          else
            add_row(dx + e * ldx, dy + i * ldy, w);
        }
      break;
    }
    case OpKind::embedding:
      if (!options_.lazy_weight_gradients) embedding_weight_gradient(id, r.begin, r.end);
      break;
    case OpKind::softmax_cross_entropy: {
      const int32_t logits_id = op.inputs[0];
      if (!p.needs_grad[static_cast<size_t>(logits_id)]) break;
      const float* x = data(logits_id);
      float* dx = grad(logits_id);
      const int64_t ldx = ld(logits_id);
      const int32_t c = d.ops[static_cast<size_t>(logits_id)].width;
      const int32_t k = loss_index_[static_cast<size_t>(id)];
      const float* lse = log_normalizers_.data() + static_cast<int64_t>(k) * schedule_.num_rows();
      const auto labels = schedule_.labels();
      const float scale = loss_scale_;
      for (int32_t i = r.begin; i < r.end; ++i) {
        const int32_t label = labels[static_cast<size_t>(i)];
        if (label < 0) continue;
        const float* __restrict xr = x + i * ldx;
        float* __restrict dxr = dx + i * ldx;
        const float shift = lse[i];
        for (int32_t j = 0; j < c; ++j) dxr[j] += scale * kernels::fast_exp(xr[j] - shift);
        dxr[label] -= scale;
      }
      break;
    }
    default:
      raise("cavs executor: no backward for {}", d.describe(id));
  }
}

// ---------------------------------------------------------------- matmuls

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
