#pragma once
// The cluster protocol between taihu-train's coordinator (nodes=K) and the
// taihu-node processes, over CAF's middleman (actors/compute/cluster.hpp):
// its messages and the typed interfaces of the three actors that speak it.
// Every handle a message carries is typed by what its receiver may send to
// it. Bulk tensors never travel here: chunks of the collectives go over the
// data plane (transport/).
//
//   node -> gate   JoinRequest                      -> int32 node index, or an error (the cluster is full,
//                                                      or the place it asks for is taken)
//   gate -> coord  NodeJoined
//                  (the node proved the secret and its protocol version at the gatekeeper already)
//   coord -> node  ClusterSetup                     -> NodeReady (data plane port)
//   coord -> node  ClusterPeers                     -> NodeStarted (worker and shard handles)
//   node -> coord  NodeFailure                      a local actor or a data-plane peer failed
//   coord -> node  reform_atom                      -> true once the node dropped its replicas (elastic)
//   coord -> node  leave_atom                       this node is dropped (elastic): shut down
//   coord -> node  RunEnded                         training is over (finished or failed): shut down
//   coord -> gate  leave_atom                       a place is free again (elastic)
//
// A change to any of it bumps cluster_protocol_version (actors/compute/cluster.hpp),
// which the gatekeeper checks before the first CAF byte.

#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "messages/atoms.hpp"
#include "messages/shard_init.hpp"
#include "messages/worker_interface.hpp"

namespace taihu::msg {

struct NodeFailure {
  std::int32_t generation = 0;  // of the cluster the failure happened in
  std::int32_t node = 0;        // the node that failed (or was lost)
  std::int32_t rank = -1;       // the rank concerned, if any
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeFailure& x) {
  return f(caf::meta::type_name("taihu::msg::NodeFailure"), x.generation, x.node, x.rank, x.reason);
}

// The coordinator, as a node sees it: it hears of failures.
using failure_listener = caf::typed_actor<caf::reacts_to<NodeFailure>>;

struct ClusterSetup {
  std::int32_t generation = 0;  // counts re-formations (elastic); failures name theirs
  std::int32_t node = 0;
  std::int32_t nodes = 1;
  std::string config;                   // the merged config (paths made absolute)
  std::vector<std::int32_t> rank_node;  // rank -> node
  std::vector<std::string> algorithms;  // per bucket
  failure_listener coordinator;         // where the node reports failures
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ClusterSetup& x) {
  return f(caf::meta::type_name("taihu::msg::ClusterSetup"), x.generation, x.node, x.nodes, x.config, x.rank_node,
           x.algorithms, x.coordinator);
}

struct NodeReady {
  std::int32_t node = 0;
  std::string data_host;
  std::uint16_t data_port = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeReady& x) {
  return f(caf::meta::type_name("taihu::msg::NodeReady"), x.node, x.data_host, x.data_port);
}

struct ClusterPeers {
  std::vector<std::string> hosts;  // by node
  std::vector<std::uint16_t> ports;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ClusterPeers& x) {
  return f(caf::meta::type_name("taihu::msg::ClusterPeers"), x.hosts, x.ports);
}

// One shard actor a node hosts: the coordinator monitors it, so that a
// failed shard is named (rank and bucket) wherever it ran.
struct HostedShard {
  std::int32_t rank = 0;
  std::uint32_t bucket = 0;
  chunk_receiver shard;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, HostedShard& x) {
  return f(caf::meta::type_name("taihu::msg::HostedShard"), x.rank, x.bucket, x.shard);
}

struct NodeStarted {
  std::int32_t node = 0;
  std::vector<std::int32_t> ranks;
  std::vector<worker_actor> workers;  // by position in ranks
  std::vector<HostedShard> shards;    // bucket by bucket, rank by rank; none with one rank
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeStarted& x) {
  return f(caf::meta::type_name("taihu::msg::NodeStarted"), x.node, x.ranks, x.workers, x.shards);
}

// Coordinator -> node: the run is over. A node of a finished run exits 0, one
// of a failed run exits 9 and logs the coordinator's reason, so that a
// cluster script sees the failure on every node, not on the coordinator only.
struct RunEnded {
  bool finished = true;
  std::string reason;  // why it failed (empty when finished)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RunEnded& x) {
  return f(caf::meta::type_name("taihu::msg::RunEnded"), x.finished, x.reason);
}

// A node's agent, as the coordinator sees it.
using node_agent_actor =
    caf::typed_actor<caf::replies_to<ClusterSetup>::with<NodeReady>, caf::replies_to<ClusterPeers>::with<NodeStarted>,
                     caf::replies_to<reform_atom>::with<bool>, caf::reacts_to<RunEnded>, caf::reacts_to<leave_atom>>;

struct JoinRequest {
  std::string name;         // the node's name for logs and reports (host:pid by default)
  node_agent_actor agent;   // the node's agent; the coordinator monitors it
  std::string build;        // the node's taihu version and git revision ("" = not said)
  std::int32_t place = -1;  // the index it asks for (a launcher's rank); -1: the next free one
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, JoinRequest& x) {
  return f(caf::meta::type_name("taihu::msg::JoinRequest"), x.name, x.agent, x.build, x.place);
}

// The gate's word to the coordinator: node `node` (its index: the place it
// asked for, else in order of admission) joined, with its agent.
struct NodeJoined {
  std::int32_t node = 0;
  std::string name;
  node_agent_actor agent;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeJoined& x) {
  return f(caf::meta::type_name("taihu::msg::NodeJoined"), x.node, x.name, x.agent);
}

// The coordinator, as the gate sees it: it hears of each admitted node.
using join_listener = caf::typed_actor<caf::reacts_to<NodeJoined>>;

// The gate: the one actor a coordinator serves on its control port, and the
// first a node speaks to (actors/compute/cluster_members.hpp). It admits nodes
// by place (the gatekeeper in front of it has already checked the secret and
// the protocol version): the node's index, or an error when the cluster is
// full, the place asked for is taken, or the node runs another build.
using gate_actor = caf::typed_actor<caf::replies_to<JoinRequest>::with<std::int32_t>, caf::reacts_to<leave_atom>>;

}  // namespace taihu::msg
