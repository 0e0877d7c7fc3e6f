#include "core/train/loss_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace taihu {

void LossWatch::add(double loss) {
  if (!seen_) lowest_ = loss;  // the first iteration's loss: where training starts
  seen_ = true;
  sum_ += loss;
  ++count_;
}

bool LossWatch::sane(double mean) const {
  // A loss at or below zero has no "twice": only finiteness counts then.
  return std::isfinite(mean) && (lowest_ <= 0.0 || mean <= 2.0 * lowest_);
}

bool LossWatch::open_interval_sane() const {
  return count_ > 0 && sane(sum_ / static_cast<double>(count_));
}

bool LossWatch::close_interval() {
  const bool verdict = open_interval_sane();
  last_mean_ = count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0;
  if (verdict) lowest_ = std::min(lowest_, last_mean_);
  sum_ = 0.0;
  count_ = 0;
  return verdict;
}

std::filesystem::path sane_checkpoint_path(const std::filesystem::path& checkpoint) {
  auto sane = checkpoint;
  sane.replace_filename(fmt::format("{}-sane{}", checkpoint.stem().string(), checkpoint.extension().string()));
  return sane;
}

namespace {

std::string describe(const CheckpointHistory::Written& w) {
  return fmt::format("'{}' (iteration {})", w.path.string(), w.iteration);
}

std::string resume_advice(const CheckpointHistory& history, bool latest_held, const std::filesystem::path& configured) {
  const auto& latest = history.latest;
  const auto& sane = history.sane;
  if (!latest.path.empty() && latest_held)
    return fmt::format("The loss stayed sane after the last checkpoint {}: resume from it with a lower "
                       "solver.base_lr or with solver.clip_gradients.",
                       describe(latest));
  if (!sane.path.empty())
    return fmt::format("{}{} is the last checkpoint after which the loss stayed sane (mean {:.4g}): resume from it "
                       "with a lower solver.base_lr or with solver.clip_gradients.",
                       latest.path.empty() || latest.iteration == sane.iteration
                           ? std::string()
                           : fmt::format("The loss diverged after the last checkpoint {}. ", describe(latest)),
                       describe(sane), sane.loss_after);
  if (!latest.path.empty())
    return fmt::format("The loss diverged after every checkpoint of this run (the last: {}): start over with a "
                       "lower solver.base_lr or with solver.clip_gradients.",
                       describe(latest));
  std::error_code ec;
  if (!configured.empty() && std::filesystem::exists(configured, ec))
    return fmt::format("The checkpoint '{}', from before this run, is intact. Lower solver.base_lr or set "
                       "solver.clip_gradients.",
                       configured.string());
  return "Lower solver.base_lr or set solver.clip_gradients.";
}

}  // namespace

std::string loss_failure(double loss, std::uint64_t iteration, std::int64_t epoch, std::int64_t batch,
                         const CheckpointHistory& history, bool latest_held, const std::filesystem::path& configured) {
  if (std::isfinite(loss)) return {};
  return fmt::format("loss became {} at iteration {} (epoch {}, batch {}); training stopped. {}",
                     std::isnan(loss) ? "NaN" : "infinite", iteration + 1, epoch + 1, batch + 1,
                     resume_advice(history, latest_held, configured));
}

}  // namespace taihu
