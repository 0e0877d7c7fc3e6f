#pragma once
// A net as a data-parallel replica (core/train/replica.hpp): its layers are
// the gradient stages, its batches come from a sharded BatchFeed.

#include <memory>
#include <string>
#include <vector>

#include "core/train/replica.hpp"

namespace taihu {

class Net;
class Solver;
class BatchFeed;

class NetReplica final : public Replica {
 public:
  // `services.devices` makes the executor for a `device` other than cpu (root
  // key); `services.feeds` the feeds of batches (default: BatchSource).
  NetReplica(const config::Document& doc, const TrainSettings& settings, const ReplicaData& data, int rank,
             int ranks, const ReplicaServices& services = {});
  ~NetReplica() override;

  const std::string& name() const override;
  int64_t learnable_parameters() const override;
  const char* sample_unit() const override { return "images"; }
  std::vector<GradientStage> gradient_stages() override { return layer_stages(*net_); }
  std::vector<Param*> params() override;
  int64_t iteration() const override;
  float learning_rate() const override;
  int64_t batches_per_epoch() const override;
  void seek(int64_t epoch, int64_t batch) override;
  async::Task<ReplicaStep> compute(uint64_t iteration, StageDone stage_done) override;
  void update() override;
  ReplicaEvaluation evaluate() override;
  void decide_kernels() override;
  Checkpoint checkpoint(const TrainPosition& position) override;
  TrainPosition restore(const Checkpoint& checkpoint, bool rngs) override;
  ReplicaFigures figures() const override;

  Net& net() { return *net_; }

 private:
  int rank_;
  TrainSettings settings_;
  std::unique_ptr<Net> net_;
  std::string device_ = "cpu";
  std::unique_ptr<LayerExecutor> executor_;  // after net_: destroyed first
  std::unique_ptr<Solver> solver_;
  std::unique_ptr<BatchFeed> train_;  // this rank's shard of every global batch
  std::unique_ptr<BatchFeed> test_;   // rank 0 only
};

}  // namespace taihu
