#pragma once
// The run's metric records as series, for the dashboard (core/train/
// dashboard_page.hpp): every training iteration's record (loss, learning
// rate, throughput, and in data-parallel runs the allreduce's share of the
// iteration and the bytes sent against dense) and every evaluation's. The
// coordinator adds them as RunLog makes them; the status endpoint's thread
// renders them. Bounded: past `capacity` training records every other one is
// dropped and only every second iteration after that is kept (then every
// fourth, ...), so a run of any length costs the same memory and the curves
// keep their shape. Thread-safe.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/train/metrics_log.hpp"

namespace taihu {

class RunSeries {
 public:
  explicit RunSeries(std::size_t capacity = 2048) : capacity_(capacity) {}

  // A RunLog record: "train" records join the training series, the others
  // (test, eval) the evaluations.
  void add(const MetricRecord& record);

  // {"train": [records], "evaluations": [records]}.
  std::string json() const;

 private:
  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::uint64_t stride_ = 1;  // training records kept: one in `stride_`
  std::uint64_t seen_ = 0;
  std::vector<std::string> train_, evaluations_;  // as JSON objects
};

}  // namespace taihu
