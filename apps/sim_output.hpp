#pragma once
// taihu-sim's results (apps/taihu-sim.cpp): one row per node count and
// algorithm, printed as tables, written as JSON rows and plotted as SVG.

#include <cstdint>
#include <string>
#include <vector>

namespace taihu::sim_app {

struct Row {
  std::string algorithm;
  int nodes = 0;
  // Simulated synchronisation per iteration, seconds: the collective alone, or
  // in training the time it adds to compute (with buckets that overlap
  // backward, what backward did not hide).
  double comm = 0;
  double seconds = 0;    // per iteration (compute + comm + solver step), or comm alone
  double bandwidth = 0;  // gradient bytes / comm
  double speedup = 0;
  // Training a net on the SW26010 model: the speedup with the one-node compute
  // at the low and high ends of its lock-step range (both 0: no range).
  double speedup_low = 0, speedup_high = 0;
  double comm_share = 0;
  double host_seconds = 0;
  std::uint64_t messages = 0;
  double bytes = 0;          // payload all ranks sent
  std::uint64_t probes = 0;  // times the clock waited for a shard
};

// training: rows of training iterations (speedup over one node's compute)
// rather than of one collective (speedup over ring).
void print_tables(const std::vector<Row>& rows, bool training);
std::string rows_json(const std::vector<Row>& rows);
// Speedup against nodes, log2 x axis; no dependencies.
std::string speedup_svg(const std::vector<Row>& rows, bool training, const std::string& title);

}  // namespace taihu::sim_app
