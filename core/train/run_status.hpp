#pragma once
// What the status endpoint shows of a training run ([status] port,
// transport/status_server.hpp): the coordinator writes it as the run goes,
// the endpoint's thread renders it on request, as Prometheus text (/metrics)
// or JSON (/status). Thread-safe.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace taihu {

class RunStatus {
 public:
  struct Member {
    std::string name;   // "worker 0 (in-process)", "node 1 'b'"
    std::string state;  // "training", "lost"
    std::vector<int> ranks;
  };
  struct Bucket {
    std::size_t elements = 0;
    std::string algorithm;
    std::uint64_t bytes_per_iteration = 0;  // all ranks' sends, from the schedule
  };

  void set_run(std::string net_name, int ranks, int nodes, std::vector<Bucket> buckets);
  void set_state(std::string state);
  void set_members(std::vector<Member> members, std::vector<int> rank_node, int ranks);
  void set_progress(std::uint64_t iterations, std::int64_t epoch, double loss, double images_per_second);

  std::string prometheus() const;
  std::string json() const;

 private:
  mutable std::mutex mutex_;
  std::string state_ = "starting";
  std::string net_name_;
  int ranks_ = 0;
  int nodes_ = 0;
  std::uint64_t iterations_ = 0;  // completed
  std::int64_t epoch_ = 0;
  double loss_ = 0.0;
  double images_per_second_ = 0.0;
  std::vector<Member> members_;
  std::vector<int> rank_node_;
  std::vector<Bucket> buckets_;
};

}  // namespace taihu
