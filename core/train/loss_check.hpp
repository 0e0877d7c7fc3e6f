#pragma once
// A NaN or infinite training loss ends the run (taihu-train exits with code
// 3): no later iteration could undo it, and the checkpoint on disk, written
// before it, stays intact to resume from at a lower rate.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include <fmt/format.h>


namespace taihu {

// Why the run must stop (for a NumericError), or "" when `loss` is finite;
// `iteration`, `epoch` and `batch` are 0-based positions of the iteration
// that produced it.
inline std::string loss_failure(double loss, std::uint64_t iteration, int64_t epoch, int64_t batch,
                                const std::filesystem::path& checkpoint) {
  if (std::isfinite(loss)) return {};
  const bool kept = !checkpoint.empty() && std::filesystem::exists(checkpoint);
  return fmt::format(
      "loss became {} at iteration {} (epoch {}, batch {}); training stopped. {}Lower solver.base_lr or set "
      "solver.clip_gradients.",
      std::isnan(loss) ? "NaN" : "infinite", iteration + 1, epoch + 1, batch + 1,
      kept ? fmt::format("The last good checkpoint '{}' is intact. ", checkpoint.string()) : std::string());
}

}  // namespace taihu
