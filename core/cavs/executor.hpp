#pragma once
// Runs a compiled F over a mini-batch of input graphs (cavs.md §3).
//
// Memory: every buffer of the program is one row-major array with a row per
// vertex (or per edge) of the whole mini-batch, rows of a round contiguous, so
// a round's ops work in place on a row slice and every intermediate survives
// for backward. Buffers only grow; nothing is allocated per vertex or per round.
//
// The steps are public so that an actor runtime can drive them as work items,
// in this order per mini-batch:
//   set_inputs(graphs)
//   forward_eager(); forward_round(0 .. R-1); forward_lazy();
//   backward_lazy(); backward_round(R-1 .. 0); backward_eager();
//   prepare_weight_gradients(); accumulate_weight_gradients();
// forward_round(r) needs forward_round(r-1) done; backward_round(r) needs
// backward_round(r+1) done. Executors share nothing mutable except their
// VertexFunction's parameters, so executors over different VertexFunctions
// (different F's, or replicas from VertexFunction::replica()) may run
// concurrently on different threads. Several executors over the SAME
// VertexFunction (the graph actor runtime's parts of one mini-batch) may run
// every step concurrently except accumulate_weight_gradients(): with lazy
// weight gradients (the default) it is the only step that writes parameter
// diffs, so callers serialise it; without them backward writes diffs in
// every round and such executors must not overlap at all. The executor keeps
// a reference to its VertexFunction, which must outlive it and stay in place.
// Flush-to-zero is the caller's (core/common/flush_to_zero.hpp).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/cavs/function.hpp"
#include "core/cavs/program.hpp"
#include "core/cavs/batch_layout.hpp"
#include "core/solver/row_sparse_gradient.hpp"
#include "core/tensor/tensor.hpp"

namespace taihu::cavs {

struct ExecutorOptions {
  LayoutKind schedule = LayoutKind::batched;
  // Eager ops once over all vertices before round 0, lazy ops once after the
  // last round; off: every op runs in every round.
  bool eager_lazy = true;
  // Weight gradients as one GEMM per weight over all vertices after the
  // backward rounds; off: per step, on that step's rows.
  bool lazy_weight_gradients = true;
  // Row-local op chains run row by row (one pass over memory); off: op by op.
  bool fuse_elementwise = true;
  // Matmuls sharing an input run as one GEMM over a concatenated weight.
  bool merge_matmuls = true;
  // Skip GEMM work on rows known to be zero: matmuls of gathered state on
  // leaves, matmuls of embeddings on rows without a token.
  bool skip_zero_rows = true;
  // Gradients with one writer are assigned, not zeroed and accumulated, and
  // values living inside one fused step keep one scratch row (needs fusion).
  bool assign_gradients = true;

  // One vertex at a time with F's static optimisations (merge, fusion, zero
  // rows): the "same engine, no batching" baseline.
  static ExecutorOptions serial();
  // One vertex at a time with every optimisation off: the test reference.
  static ExecutorOptions reference();
};

struct ExecutorStats {
  double schedule_seconds = 0;
  double forward_seconds = 0;          // eager + rounds + lazy
  double backward_seconds = 0;         // lazy + rounds + eager data gradients
  double weight_gradient_seconds = 0;  // prepare_ and accumulate_weight_gradients
  int64_t batches = 0;
  int64_t rounds = 0;
  int64_t vertices = 0;
  int64_t gemm_calls = 0;
  double gemm_flops = 0;    // 2 m n k summed over GEMM calls
  double gemm_seconds = 0;  // inside those calls (part of the phases above)
  void reset() { *this = ExecutorStats{}; }
  // Sums another executor's counters into these.
  ExecutorStats& operator+=(const ExecutorStats& o) {
    schedule_seconds += o.schedule_seconds;
    forward_seconds += o.forward_seconds;
    backward_seconds += o.backward_seconds;
    weight_gradient_seconds += o.weight_gradient_seconds;
    batches += o.batches;
    rounds += o.rounds;
    vertices += o.vertices;
    gemm_calls += o.gemm_calls;
    gemm_flops += o.gemm_flops;
    gemm_seconds += o.gemm_seconds;
    return *this;
  }
};

// A row-major view: row i at data + i * ld.
struct MatrixView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t ld = 0;
  int32_t width = 0;
  const float* row(int64_t i) const { return data + i * ld; }
};

class Executor {
 public:
  explicit Executor(VertexFunction& f, ExecutorOptions options = {});
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Builds the schedule (errors name sample and vertex; samples numbered
  // from `first_sample`) and sizes buffers.
  void set_inputs(std::span<const InputGraph> graphs, int32_t first_sample = 0);
  const BatchLayout& schedule() const { return schedule_; }
  int32_t num_rounds() const { return schedule_.num_rounds(); }

  void forward_eager();
  void forward_round(int32_t round);
  void forward_lazy();
  void backward_lazy();
  void backward_round(int32_t round);
  void backward_eager();
  // Lazy weight gradients in two steps. prepare_weight_gradients() computes
  // what goes to this executor's own scratch — the GEMMs of merged matmul
  // groups, most of the work — so executors sharing a VertexFunction may run
  // it at once. accumulate_weight_gradients() then adds into the shared
  // parameter diffs, the only step that writes them. The split changes no
  // bit: the same operations, the diffs written in the same order.
  void prepare_weight_gradients();
  void accumulate_weight_gradients();  // after prepare_weight_gradients()

  void run_forward();
  void run_backward();  // backward_lazy .. accumulate_weight_gradients
  void run_forward_backward() {
    run_forward();
    run_backward();
  }

  // Zeroes what backward added to the parameter diffs: every dense parameter,
  // but only the embedding rows of the tokens of the batches run backward
  // since the last call (a 20k-row table is not swept per batch; forward-only
  // batches in between do not matter). Valid when the diffs were zero before
  // those batches, e.g. called right after the solver step.
  void zero_gradients();
  // What zero_gradients() would clear of each embedding table: the rows
  // whose diff backward may have written since its last call (sorted,
  // unique). A solver updates only those (Solver::step).
  std::vector<RowSparseGradient> sparse_gradients() const;

  // Gradients are loss_scale * d(sum of per-vertex losses); default 1. Read
  // by backward_lazy, so it may be set after forward (e.g. 1 / loss_vertices()).
  void set_loss_scale(float scale) { loss_scale_ = scale; }
  float loss_scale() const { return loss_scale_; }

  // After forward: the summed loss, the number of labelled vertices, and
  // every row's argmax of the first loss's logits.
  double loss() const { return loss_; }
  int64_t loss_vertices() const { return loss_vertices_; }
  std::span<const int32_t> predictions() const { return {predictions_.data(), static_cast<size_t>(schedule_.num_rows())}; }
  int32_t prediction(int32_t sample, int32_t vertex) const {
    return predictions_[static_cast<size_t>(schedule_.row(sample, vertex))];
  }
  // The k-th push()ed value, one row per schedule row.
  MatrixView output(size_t k = 0) const;
  // Any value of F (vertex or edge rows), for tests and debugging; a
  // transient value (BufferInfo::transient) keeps only its last tile of rows.
  MatrixView value(Value v) const;

  const Program& program() const { return *program_; }
  const ExecutorOptions& options() const { return options_; }
  const ExecutorStats& stats() const { return stats_; }
  ExecutorStats& stats() { return stats_; }

 private:
  struct Range {
    int32_t round;  // -1: all rows
    int32_t begin, end;
    int32_t edge_begin, edge_end;
  };
  Range round_range(int32_t round) const;
  Range all_range() const;
  // Per param of F: 1 for an embedding table (its gradient is in the rows of
  // the tokens looked up), 0 for a dense param.
  std::vector<uint8_t> embedding_tables() const;

  void run_steps_forward(const std::vector<Instruction>& steps, const Range& r);
  void run_steps_backward(const std::vector<Instruction>& steps, const Range& r);
  template <class RunRows>
  void for_each_tile(const Instruction& s, const Range& r, RunRows&& run_rows);
  void op_forward(int32_t id, const Range& r);
  void op_backward(int32_t id, const Range& r);
  void rowwise_forward(int32_t id, int32_t begin, int32_t end);
  void rowwise_backward(int32_t id, int32_t begin, int32_t end);
  void matmul_forward(int32_t group, const Range& r);
  void matmul_backward(int32_t group, const Range& r);
  // GEMMs of the group's weight gradient over every active row into `dw`
  // (beta for the first); whether any row was active.
  bool matmul_weight_gradient(int32_t group, float* dw, float beta);
  float* bias_scratch(int32_t id);
  // Adds the bias gradient of rows [begin, end) to `db` (the param's diff
  // when null).
  void bias_weight_gradient(int32_t id, int32_t begin, int32_t end, float* db = nullptr);
  void embedding_weight_gradient(int32_t id, int32_t begin, int32_t end);
  template <class Fn>
  void for_active_rows(const MatmulGroup& g, const Range& r, int32_t begin, int32_t end, Fn&& fn) const;
  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

  // Row i of a value is at data(v) + i * ld(v). A transient buffer holds only
  // the rows of the current tile, [tile_origin_, tile_origin_ + fused_tile_rows),
  // so its base is shifted back by tile_origin_ rows.
  float* data(int32_t value) {
    const auto b = static_cast<size_t>(program_->value_buffer[static_cast<size_t>(value)]);
    const BufferInfo& info = program_->buffers[b];
    return data_[b].ptr() + program_->value_column[static_cast<size_t>(value)] -
           (info.transient ? tile_origin_ * info.ld : 0);
  }
  float* grad(int32_t value) {
    const auto b = static_cast<size_t>(program_->value_buffer[static_cast<size_t>(value)]);
    const BufferInfo& info = program_->buffers[b];
    return grad_[b].ptr() + program_->value_column[static_cast<size_t>(value)] -
           (info.grad_transient ? tile_origin_ * info.ld : 0);
  }
  int64_t ld(int32_t value) const {
    return program_->buffers[static_cast<size_t>(program_->value_buffer[static_cast<size_t>(value)])].row_stride;
  }
  bool transient(int32_t value) const {
    return program_->buffers[static_cast<size_t>(program_->value_buffer[static_cast<size_t>(value)])].grad_transient;
  }
  int64_t gld(int32_t value) const {
    return program_->buffers[static_cast<size_t>(program_->value_buffer[static_cast<size_t>(value)])].grad_stride;
  }
  const float* weight(int32_t param) const { return f_.params()[static_cast<size_t>(param)].blob->data().ptr(); }
  float* weight_diff(int32_t param) { return f_.params()[static_cast<size_t>(param)].blob->diff().ptr(); }

  VertexFunction& f_;
  ExecutorOptions options_;
  std::shared_ptr<const Program> program_;
  BatchLayout schedule_;
  std::vector<Tensor> data_, grad_;      // per buffer
  std::vector<Tensor> merged_weights_;   // per group (empty for one member)
  std::vector<Tensor> merged_diffs_;     // per group, lazy weight-gradient scratch
  std::vector<uint8_t> merged_gradient_pending_;  // per group: scratch holds a gradient not yet added
  bool weight_gradients_prepared_ = false;
  std::vector<float> log_normalizers_;   // per loss and row, for the loss backward
  // Per add_bias op whose output is transient (its gradient rows do not
  // outlive the backward step): the bias gradient summed during the backward
  // rounds, added to the shared diff in accumulate_weight_gradients, so that
  // with lazy weight gradients only that step writes parameter diffs and
  // executors sharing a VertexFunction may run their backward rounds at once.
  std::vector<std::vector<float>> bias_scratch_;
  std::vector<int32_t> gradient_tokens_;  // tokens whose embedding rows backward touched
  std::vector<int32_t> loss_index_;      // per op: which softmax_cross_entropy it is, or -1
  std::vector<int32_t> predictions_;
  double loss_ = 0;
  int64_t loss_vertices_ = 0;
  float loss_scale_ = 1.0f;
  int64_t tile_origin_ = 0;  // first row of the fused tile being run
  ExecutorStats stats_;
};

}  // namespace taihu::cavs
