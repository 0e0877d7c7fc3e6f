#pragma once
// A dynamic network (a Cavs vertex function over input graphs) as a
// data-parallel replica (core/train/replica.hpp), and the pieces it shares
// with the single-process GraphTrainer: the epoch order and evaluation over a
// list of graphs.
//
// Global batch b of epoch e is graphs [b·G, (b+1)·G) of that epoch's seeded
// permutation, G = ranks × batch_size; rank r trains on its r-th slice of
// batch_size graphs. An epoch has floor(graphs / G) batches (the tail that
// does not fill a global batch is left out, as for nets), but one replica
// alone also trains that tail as a last, smaller batch. Each rank scales
// its gradient as the single-process trainer does for its own slice (1/graphs
// or 1/labelled vertices); the allreduce then averages over the ranks.
//
// The vertex function's weight gradients are computed after backward (one
// GEMM per weight over all vertices), so the whole model is one gradient
// stage: its buckets start reducing when backward is over.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/cavs/batch_runner.hpp"
#include "core/cavs/function.hpp"
#include "core/train/replica.hpp"

namespace taihu {

class Solver;

// A seeded permutation of [0, n) for one epoch.
std::vector<int64_t> graph_epoch_order(int64_t n, uint64_t seed, int64_t epoch);

// Forward passes over `graphs`, `batch` graphs at a time.
Scores evaluate_graphs(cavs::BatchRunner& runner, std::span<const InputGraph> graphs, int64_t batch);


class GraphReplica final : public Replica {
 public:
  // `runner`: what gets mini-batches through F (the graph actor runtime);
  // empty: an InlineRunner on the worker's thread.
  GraphReplica(const config::Document& doc, const TrainSettings& settings, const ReplicaData& data, int rank,
               int ranks, const RunnerFactory& runner = {});
  ~GraphReplica() override;

  const std::string& name() const override { return model_type_; }
  int64_t learnable_parameters() const override;
  const char* sample_unit() const override;
  std::vector<GradientStage> gradient_stages() override;
  std::vector<Param*> params() override { return model_->param_pointers(); }
  int64_t iteration() const override;
  float learning_rate() const override;
  int64_t batches_per_epoch() const override { return per_epoch_; }
  void seek(int64_t epoch, int64_t batch) override;
  async::Task<ReplicaStep> compute(uint64_t iteration, StageDone stage_done) override;
  void update() override;
  ReplicaEvaluation evaluate() override;
  Checkpoint checkpoint(const TrainPosition& position) override;
  TrainPosition restore(const Checkpoint& checkpoint, bool rngs) override;
  ReplicaFigures figures() const override;

  bool language_model() const;
  const std::string& data_source() const;

 private:
  int rank_;
  int ranks_;
  TrainSettings settings_;
  std::shared_ptr<const GraphDataset> data_;
  std::string model_type_;
  bool per_vertex_loss_ = false;
  int64_t per_epoch_ = 0;
  std::unique_ptr<cavs::VertexFunction> model_;
  std::unique_ptr<cavs::BatchRunner> runner_;
  std::string runner_name_;
  cavs::ExecutorStats trained_;  // the runner's counters over the training batches
  std::unique_ptr<Solver> solver_;
  int64_t order_epoch_ = -1;  // the epoch `order_` is for
  std::vector<int64_t> order_;
  std::vector<InputGraph> batch_;  // reused between iterations
};

}  // namespace taihu
