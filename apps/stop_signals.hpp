#pragma once
// SIGINT (Ctrl-C) and SIGTERM (what Slurm, Kubernetes and `kill` send before
// SIGKILL) stop a taihu-train run cleanly: after the iteration in flight the
// coordinator writes a checkpoint where the run stands and the report, and
// the process exits with 128 + the signal's number; a coordinator still
// waiting for its nodes stops at once (actors/compute/coordinator_actor.cpp).
// A second signal ends the process at once (the default action), for a run
// that does not stop.

#include <atomic>
#include <memory>

namespace taihu::app {

class StopSignals {
 public:
  // Installs the handlers for the process (one instance at a time).
  StopSignals();
  ~StopSignals();  // restores the previous handlers
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Set by the first signal (TrainingOptions::stop).
  std::shared_ptr<const std::atomic<bool>> flag() const;
  // The signal that stopped the run, 0 for none.
  int received() const;
};

}  // namespace taihu::app
