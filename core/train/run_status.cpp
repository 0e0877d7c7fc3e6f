#include "core/train/run_status.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "core/train/metrics_log.hpp"

namespace taihu {

void RunStatus::set_run(std::string net_name, int ranks, int nodes, std::vector<Bucket> buckets) {
  std::lock_guard lock(mutex_);
  net_name_ = std::move(net_name);
  ranks_ = ranks;
  nodes_ = nodes;
  buckets_ = std::move(buckets);
}

void RunStatus::set_state(std::string state) {
  std::lock_guard lock(mutex_);
  state_ = std::move(state);
}

void RunStatus::set_members(std::vector<Member> members, std::vector<int> rank_node, int ranks) {
  std::lock_guard lock(mutex_);
  members_ = std::move(members);
  rank_node_ = std::move(rank_node);
  ranks_ = ranks;
}

void RunStatus::set_progress(std::uint64_t iterations, std::int64_t epoch, double loss, double images_per_second) {
  std::lock_guard lock(mutex_);
  iterations_ = iterations;
  epoch_ = epoch;
  loss_ = loss;
  images_per_second_ = images_per_second;
}

std::string RunStatus::prometheus() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += "# HELP taihu_iteration Training iterations completed.\n# TYPE taihu_iteration counter\n";
  out += fmt::format("taihu_iteration {}\n", iterations_);
  out += "# HELP taihu_epoch The epoch being trained (1-based).\n# TYPE taihu_epoch gauge\n";
  out += fmt::format("taihu_epoch {}\n", epoch_);
  out += "# HELP taihu_loss Mean training loss of the last iteration.\n# TYPE taihu_loss gauge\n";
  out += fmt::format("taihu_loss {}\n", loss_);
  out += "# HELP taihu_images_per_second Training throughput of the current epoch.\n"
         "# TYPE taihu_images_per_second gauge\n";
  out += fmt::format("taihu_images_per_second {}\n", images_per_second_);
  out += "# HELP taihu_members Processes taking part, by state.\n# TYPE taihu_members gauge\n";
  std::map<std::string, int> states;
  for (const auto& m : members_) ++states[m.state];
  for (const auto& [state, n] : states) out += fmt::format("taihu_members{{state=\"{}\"}} {}\n", state, n);
  out += "# HELP taihu_collective_bytes_sent_total Bytes sent by all ranks in each bucket's allreduce.\n"
         "# TYPE taihu_collective_bytes_sent_total counter\n";
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    out += fmt::format("taihu_collective_bytes_sent_total{{bucket=\"{}\",algorithm=\"{}\"}} {}\n", b,
                       buckets_[b].algorithm, buckets_[b].bytes_per_iteration * iterations_);
  return out;
}

std::string RunStatus::json() const {
  std::lock_guard lock(mutex_);
  std::string members_json, buckets_json, ranks_json;
  for (const auto& m : members_)
    members_json += fmt::format("{}\n    {{\"name\": {}, \"state\": {}, \"ranks\": [{}]}}",
                                members_json.empty() ? "" : ",", json_quote(m.name), json_quote(m.state),
                                fmt::join(m.ranks, ", "));
  for (const auto& b : buckets_)
    buckets_json += fmt::format("{}\n      {{\"elements\": {}, \"algorithm\": {}, \"bytes_per_iteration\": {}}}",
                                buckets_json.empty() ? "" : ",", b.elements, json_quote(b.algorithm),
                                b.bytes_per_iteration);
  return fmt::format(
      "{{\n  \"state\": {},\n  \"net\": {},\n  \"iteration\": {},\n  \"epoch\": {},\n  \"loss\": {},\n"
      "  \"images_per_second\": {},\n  \"members\": [{}\n  ],\n  \"topology\": {{\n    \"ranks\": {},\n    \"nodes\": {},\n"
      "    \"rank_node\": [{}],\n    \"buckets\": [{}\n    ]\n  }}\n}}\n",
      json_quote(state_), json_quote(net_name_), iterations_, epoch_, loss_, images_per_second_, members_json,
      ranks_, nodes_, fmt::join(rank_node_, ", "), buckets_json);
}

}  // namespace taihu
