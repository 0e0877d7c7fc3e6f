#pragma once
// A NaN or infinite training loss ends the run (taihu-train exits with code
// 3): no later iteration could undo it. A run that diverges does not jump to
// NaN at once, though: its loss climbs for a while, and every checkpoint
// written meanwhile holds finite but useless weights (at base_lr = 1e6, values
// of 1e24, which give NaN again at any rate). A checkpoint's weights show
// what they are worth in the loss of the iterations after it, so the loss is
// watched between checkpoints: when the interval after a checkpoint was sane,
// that checkpoint is kept as the last sane one ("<stem>-sane<ext>", a second
// name of the file, taken before the next save replaces it), and the message
// of a stop names the checkpoint to resume from.

#include <cstdint>
#include <filesystem>
#include <string>

namespace taihu {

// The loss between checkpoints. An interval is sane when it has iterations
// and its mean is finite and at most twice the lowest loss seen in this run
// so far: the first iteration's and every earlier interval's mean. A
// diverging run's loss grows by orders of magnitude; a healthy one's interval
// means stay near their best.
class LossWatch {
 public:
  void add(double loss);
  // Whether the interval so far is sane (at a stop: the one after the latest checkpoint).
  bool open_interval_sane() const;
  // Ends the interval (at a checkpoint) and says whether it was sane.
  bool close_interval();
  double last_mean() const { return last_mean_; }  // of the interval just closed
  double lowest() const { return lowest_; }

 private:
  bool sane(double mean) const;
  double sum_ = 0.0;
  std::int64_t count_ = 0;
  double lowest_ = 0.0;
  bool seen_ = false;
  double last_mean_ = 0.0;
};

// The checkpoints a stopped run can point to.
struct CheckpointHistory {
  struct Written {
    std::filesystem::path path;   // empty: none
    std::uint64_t iteration = 0;  // iterations done when it was written
    double loss_after = 0.0;      // mean loss of the interval after it (once known)
  };
  Written latest;  // written by this run (or the one it resumed from, at the same path)
  Written sane;    // the last one after which the loss was sane, kept as <stem>-sane<ext>
};

// "<stem>-sane<ext>": where the last sane checkpoint of `checkpoint` is kept.
std::filesystem::path sane_checkpoint_path(const std::filesystem::path& checkpoint);

// Why the run must stop (for a NumericError), or "" when `loss` is finite;
// `iteration`, `epoch` and `batch` are 0-based positions of the iteration
// that produced it. Names the checkpoint to resume from: the latest if the
// loss after it stayed sane up to this iteration (`latest_held`), else the
// last sane one, else none: start over (or `configured`, the run's checkpoint
// file, when it is from before this run).
std::string loss_failure(double loss, std::uint64_t iteration, std::int64_t epoch, std::int64_t batch,
                         const CheckpointHistory& history, bool latest_held, const std::filesystem::path& configured);

}  // namespace taihu
