#pragma once
// The discrete-event clock of a simulated collective (no CAF: the actor side
// is simulation.hpp).
//
// The engine keeps each rank's simulated clock by following the same steps
// the rank's executor (a shard actor) runs, but it does not invent the
// messages: every send must be offered to it by the executor, and it checks
// that the send is the one the step names (receiver, sequence number, range).
// It times them with the Network and hands each message back for delivery
// when the simulated clock reaches its arrival time.
//
// Per rank, with the semantics of sync::predict() (cost_model.hpp): a step
// that starts at t0 and sends b bytes injects the message at t0 into the
// network; the sender is busy until the message arrives (a blocking send, as
// MPI_Sendrecv); a receive completes at max(own send's arrival, the
// message's arrival) and then adds γ·bytes when it reduces. Without
// contention the simulated times equal predict()'s bit for bit.
//
// Events run in time order (ties: deliveries, then starts, then steps; then
// by rank and message), so runs are deterministic. The clock never runs
// ahead of an executor: a step that must send blocks the engine (run()
// returns that rank) until the executor has offered the send, and an
// executor only sees messages whose arrival time has been reached. So the
// executor can never act on its simulated future (conservative DES).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "simulator/network.hpp"
#include "collectives/schedule.hpp"

namespace taihu::simulator {

// A message an executor sent (the engine only needs its envelope).
struct Sent {
  int from = 0;
  int to = 0;
  std::uint32_t seq = 0;
  std::size_t offset = 0;
  std::size_t length = 0;   // floats
  std::uint64_t handle = 0;  // the executor's name for it, handed back on delivery
};

struct EngineStats {
  std::uint64_t messages = 0;
  std::uint64_t events = 0;
  std::uint64_t blocks = 0;  // times run() returned to wait for an executor
  double bytes = 0;
};

class Engine {
 public:
  struct Callbacks {
    std::function<void(int rank)> start;                        // rank's input is ready at now()
    std::function<void(int to, const Sent& message)> deliver;   // message arrives at now()
  };

  // steps[r]: rank r's steps (a finalized schedule's, the same the executor
  // runs). start_times[r]: when rank r's input is ready (empty: all at 0).
  Engine(Network& network, const std::vector<std::vector<collectives::Step>>& steps, std::vector<double> start_times,
         Callbacks callbacks);

  // No executor: the engine makes each send from its step itself (for
  // cross-checks and for runs too large for actors).
  void make_sends_itself() { self_sending_ = true; }

  // The executor of `message.from` sent this; sends come in its step order.
  void offer(const Sent& message);

  // Runs events in time order until all ranks are done (returns -1) or a
  // step of rank r must send and its executor has not offered it (returns r).
  int run();

  bool done() const { return finished_ == finish_.size(); }
  double now() const { return now_; }
  // The step rank r is at (its steps' count when done).
  std::size_t step_of(int rank) const { return ranks_[static_cast<std::size_t>(rank)].step; }
  std::size_t offered(int rank) const { return ranks_[static_cast<std::size_t>(rank)].offered.size(); }
  const std::vector<double>& finish() const { return finish_; }
  double seconds() const;  // the last rank's finish
  const EngineStats& stats() const { return stats_; }

 private:
  enum Kind : std::uint8_t { deliver = 0, start = 1, step = 2 };
  struct Event {
    double time;
    Kind kind;
    int rank;
    std::uint64_t order;  // message number for deliveries
    std::uint64_t slot;   // in_flight_ index for deliveries
    bool operator>(const Event& o) const {
      if (time != o.time) return time > o.time;
      if (kind != o.kind) return kind > o.kind;
      if (rank != o.rank) return rank > o.rank;
      return order > o.order;
    }
  };
  struct RankState {
    std::size_t step = 0;
    double send_done = 0;      // the current step's send arrival (or its start)
    bool waiting = false;       // the current step waits for a message not yet sent
    std::deque<Sent> offered;
  };

  void run_step(int rank, double t);
  void complete(int rank, double arrival);
  void next_step(int rank, double t);
  std::uint64_t key(int from, int to, std::uint32_t seq) const {
    return (static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(finish_.size()) +
            static_cast<std::uint64_t>(to))
               << 32 |
           seq;
  }

  Network& network_;
  const std::vector<std::vector<collectives::Step>>& steps_;
  Callbacks callbacks_;
  bool self_sending_ = false;
  std::vector<RankState> ranks_;
  std::vector<double> finish_;
  std::size_t finished_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::unordered_map<std::uint64_t, double> arrival_;  // sent, not yet consumed: (from, to, seq) -> time
  std::vector<Sent> in_flight_;                         // by message number, until delivered
  std::vector<std::uint64_t> free_slots_;
  double now_ = 0;
  EngineStats stats_;
};

struct Timing {
  double seconds = 0;
  std::vector<double> finish;
  EngineStats stats;
  double host_seconds = 0;
};

// The engine alone, making the sends itself: the timing the actors get, for
// cross-checks and for runs larger than actors can hold. Resets the network
// first unless `fresh_network` is false: then the run finds the links and
// cores as earlier runs left them (a training iteration's buckets one after
// another, each queuing behind the traffic of those before it).
Timing time_without_actors(const collectives::Schedule& schedule, Network& network, std::vector<double> start_times = {},
                           bool fresh_network = true);

}  // namespace taihu::simulator
