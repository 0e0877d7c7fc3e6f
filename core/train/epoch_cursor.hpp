#pragma once
// Where a run is in its epochs, and what comes after each iteration: the
// epoch arithmetic of a training run, once (actors/compute/coordinator.hpp).
//
// Iteration numbers are global: batch b of epoch e is iteration
// e * per_epoch + b. A run ends after `epochs` epochs, or mid-epoch once it
// has done `max_iterations` iterations in all (the root key `iterations`);
// every `checkpoint_every` iterations inside an epoch it checkpoints too
// (the epoch's end always does).

#include <cstdint>

#include "core/train/train_setup.hpp"

namespace taihu {

class EpochCursor {
 public:
  EpochCursor() = default;
  EpochCursor(int64_t epochs, int64_t per_epoch, int64_t max_iterations, int64_t checkpoint_every,
              TrainPosition start)
      : epochs_(epochs),
        per_epoch_(per_epoch),
        max_iterations_(max_iterations),
        checkpoint_every_(checkpoint_every),
        epoch_(start.epoch),
        batch_(start.batch),
        first_batch_(start.batch) {}

  int64_t epoch() const { return epoch_; }  // 0-based
  int64_t batch() const { return batch_; }  // batches done in this epoch
  int64_t per_epoch() const { return per_epoch_; }
  int64_t epochs() const { return epochs_; }
  // The batch this epoch started at (not 0 when resumed mid-epoch).
  int64_t first_batch() const { return first_batch_; }
  std::uint64_t iteration() const { return static_cast<std::uint64_t>(epoch_ * per_epoch_ + batch_); }

  bool finished() const { return epoch_ >= epochs_ || limit_reached(); }
  bool limit_reached() const { return max_iterations_ > 0 && static_cast<int64_t>(iteration()) >= max_iterations_; }
  // Whether this epoch has batches left to train (and the limit allows one).
  bool batch_left() const { return batch_ < per_epoch_ && !limit_reached(); }

  // One iteration done.
  void advance() { ++batch_; }
  // A checkpoint inside the epoch is due after the iteration just done.
  bool checkpoint_due() const {
    return checkpoint_every_ > 0 && static_cast<int64_t>(iteration()) % checkpoint_every_ == 0 && batch_ < per_epoch_;
  }
  // The epoch ended here for good (all its batches, not the iteration limit).
  bool epoch_complete() const { return batch_ >= per_epoch_; }
  void next_epoch() {
    ++epoch_;
    batch_ = 0;
    first_batch_ = 0;
  }

 private:
  int64_t epochs_ = 1;
  int64_t per_epoch_ = 1;
  int64_t max_iterations_ = 0;
  int64_t checkpoint_every_ = 0;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  int64_t first_batch_ = 0;
};

}  // namespace taihu
