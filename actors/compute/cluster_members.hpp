#pragma once
// The coordinator's side of its nodes: the gate (behind a control port for
// node processes, cluster.hpp), the nodes that joined, and the forming of a
// generation of replicas over the live ones. Every run hosts its ranks on
// nodes: an in-process run on one node of its own, in this process, which
// joins at the gate directly (open_in_process). Event-based: every step
// answers through a continuation, run by the coordinator actor that owns
// this object.
//
// Forming (a generation): ranks are placed on the live nodes in contiguous
// blocks (rank r on live node r * nodes / ranks); every node gets the config
// and the placement (ClusterSetup -> NodeReady with its data-plane port), then
// every node's peers (ClusterPeers -> NodeStarted with its workers' and
// shards' handles, which the coordinator monitors).
// Both rounds wait for every node (fan_in.hpp); a node that fails either
// fails the forming, naming it.

#include <caf/typed_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "actors/compute/members.hpp"
#include "messages/cluster.hpp"
#include "messages/type_ids.hpp"
#include "transport/gatekeeper.hpp"

namespace taihu::compute {

struct RunPlan;

// The coordinator's interface (coordinator.hpp): what the gate and the nodes
// send it, and its two timers (the join deadline; while the nodes gather, a
// look at the stop request).
using coordinator_actor =
    caf::typed_actor<caf::reacts_to<msg::NodeJoined>, caf::reacts_to<msg::NodeFailure>,
                     caf::reacts_to<msg::join_deadline_atom>, caf::reacts_to<msg::tick_atom>>;

class ClusterMembers {
 public:
  using Self = coordinator_actor::base;

  struct Node {
    std::string name;
    msg::node_agent_actor agent;  // null once the node is lost
  };

  explicit ClusterMembers(ClusterSettings settings) : settings_(std::move(settings)) {}

  // Opens the control port (the gatekeeper in front of the gate actor, which
  // tells `self` of every node that joins: msg::NodeJoined). Throws
  // ClusterError when the port cannot be opened.
  void open(Self* self);
  // An in-process run: no control port; the run's own node joins at the
  // gate and hosts every rank with models built from `plan` (its rank 0
  // model taken over).
  void open_in_process(Self* self, const std::shared_ptr<RunPlan>& plan, WorkerFault fault);
  std::uint16_t port() const { return port_; }
  // The nodes the first generation waits for.
  int expected() const { return settings_.nodes; }
  // How to start a node that joins it: `taihu-node --coordinator=HOST:PORT
  // --secret-file=PATH`, HOST one that other hosts reach (this host's name
  // where the port listens on every interface, as under a launcher).
  std::string join_hint() const;

  // A node joined (the gate's message); the coordinator monitors its agent.
  void joined(Self* self, const msg::NodeJoined& j);
  // Nodes that joined and take part in no generation yet.
  int waiting() const;
  // Names of the nodes that joined, for the join_timeout message.
  std::string joined_names() const;
  std::vector<int> live() const;
  const std::vector<Node>& nodes() const { return nodes_; }
  // The generation formed or forming last; 0 before the first. (The
  // coordinator's Members are reset while it re-forms: they cannot tell.)
  int generation() const { return generation_; }
  std::string node_name(int node) const;
  // Where a node's actors are, for failure messages: " on node 1 'name'"
  // (empty for an in-process run's node: there is only this process).
  std::string where(int node) const;

  // Forms the next generation over the live nodes for `plan` (its ranks,
  // buckets and algorithms); `done` gets its members, `failed` the reason.
  void form(Self* self, const RunPlan& plan, std::function<void(Members)> done,
            std::function<void(std::string)> failed);
  // Forgets a lost node, tells it so (one that still runs stops with exit 8)
  // and frees its place at the gate.
  void lose(Self* self, int node);
  // Elastic: every live node drops its replicas (reform_atom); a node that
  // does not answer within `timeout` is lost too. Then `done`.
  void drop_replicas(Self* self, std::chrono::milliseconds timeout, std::function<void()> done);
  // Training is over: every node hears how it ended and shuts down; the port closes.
  void stop(Self* self, const msg::RunEnded& end);

 private:
  // Node `node` started its ranks: their workers, and who each of its
  // workers, shards and agent is.
  void add_started(Members& members, int node, const msg::NodeStarted& started) const;

  ClusterSettings settings_;
  std::vector<Node> nodes_;  // by node index (the order of admission)
  std::vector<bool> placed_;  // took part in the last generation
  bool in_process_ = false;   // one node, the run's own (open_in_process)
  int generation_ = 0;
  msg::gate_actor gate_;
  std::shared_ptr<transport::Gatekeeper> gatekeeper_;
  std::uint16_t port_ = 0;
};

}  // namespace taihu::compute
