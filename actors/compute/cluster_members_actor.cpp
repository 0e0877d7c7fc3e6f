#include "actors/compute/cluster_members.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "actors/compute/control_plane.hpp"
#include "actors/compute/fan_in.hpp"
#include "actors/compute/run_plan.hpp"
#include "actors/exception_reason.hpp"
#include "transport/addresses.hpp"
#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {
namespace {

// The actor the control port serves. Every connection reaching it has proven
// the secret at the gatekeeper (control_plane.hpp), so it only counts places:
// at most `capacity` live nodes.
struct GateState {
  static inline const char* name = "taihu.gate";
  int capacity = 0;
  std::string build;                  // the coordinator's; nodes of another are refused
  msg::join_listener coordinator;     // gets NodeJoined per admitted node
  std::vector<std::string> admitted;  // by node index, ever ("": never given)
  int live = 0;                       // admitted and not reported gone
};

msg::gate_actor::behavior_type gate(msg::gate_actor::stateful_pointer<GateState> self, int capacity,
                                    std::string build, msg::join_listener coordinator) {
  self->state.capacity = capacity;
  self->state.build = std::move(build);
  self->state.coordinator = std::move(coordinator);
  return {
      [=](msg::JoinRequest& r) -> caf::result<std::int32_t> {
        auto& s = self->state;
        if (!s.build.empty() && !r.build.empty() && r.build != s.build) {
          spdlog::warn("coordinator: refused node '{}': it runs taihu {}, this coordinator {}", r.name, r.build,
                       s.build);
          return caf::make_error(caf::sec::runtime_error,
                                 fmt::format("refused: this node runs taihu {}, the coordinator {}: run one build "
                                             "on every node",
                                             r.build, s.build));
        }
        if (s.live >= s.capacity) {
          spdlog::warn("coordinator: refused node '{}': all {} nodes have joined", r.name, s.capacity);
          return caf::make_error(caf::sec::runtime_error, fmt::format("refused: the cluster is full ({} nodes)", s.capacity));
        }
        std::int32_t index = r.place;
        if (index < 0) {  // the first place never given
          index = 0;
          while (static_cast<std::size_t>(index) < s.admitted.size() && !s.admitted[index].empty()) ++index;
        } else if (index >= s.capacity || (static_cast<std::size_t>(index) < s.admitted.size() &&
                                           !s.admitted[index].empty())) {
          spdlog::warn("coordinator: refused node '{}': it asks for place {}, which is {}", r.name, index,
                       index >= s.capacity ? fmt::format("beyond the {} nodes", s.capacity) : "taken");
          return caf::make_error(caf::sec::runtime_error,
                                 fmt::format("refused: place {} is {} (one launch, one rank each)", index,
                                             index >= s.capacity ? "beyond the cluster's nodes" : "taken"));
        }
        if (s.admitted.size() <= static_cast<std::size_t>(index)) s.admitted.resize(index + 1);
        s.admitted[index] = r.name;
        ++s.live;
        self->send(s.coordinator, msg::NodeJoined{index, r.name, r.agent});
        return index;
      },
      // An elastic cluster lost a node: a restarted one may take its place.
      [=](msg::leave_atom) { --self->state.live; },
  };
}

}  // namespace

void ClusterMembers::open(Self* self) {
  gate_ = self->spawn(gate, settings_.nodes, settings_.build, msg::join_listener{self});
  try {
    transport::GatekeeperOptions options;
    options.what = "coordinator control port";
    options.secret = settings_.secret;
    options.listen_address = settings_.listen;
    options.port = settings_.port;
    options.version = cluster_protocol_version;
    options.tls = settings_.tls;
    options.certificates = settings_.certificates;
    gatekeeper_ = serve_control_port(self->system(), gate_, std::move(options));
  } catch (const transport::NetError& e) {
    self->send_exit(gate_, caf::exit_reason::user_shutdown);
    gate_ = msg::gate_actor{};
    raise<ClusterError>("coordinator: {}", e.what());
  }
  port_ = gatekeeper_->port();
  if (settings_.own_node) spawn_own_node(self->system(), *settings_.own_node, gate_);
  spdlog::info("coordinator: listening on {}:{}, waiting for {} nodes (join_timeout {} s): {}", settings_.listen,
               port_, settings_.nodes, settings_.join_timeout, join_hint());
  if (!settings_.port_file.empty()) {
    std::ofstream out(settings_.port_file + ".tmp");
    out << port_ << "\n";
    out.close();
    std::filesystem::rename(settings_.port_file + ".tmp", settings_.port_file);
  }
}

void ClusterMembers::open_in_process(Self* self, const std::shared_ptr<RunPlan>& plan, WorkerFault fault) {
  in_process_ = true;
  settings_.nodes = 1;
  gate_ = self->spawn(gate, settings_.nodes, std::string(), msg::join_listener{self});
  spawn_in_process_node(self->system(), plan, std::exchange(plan->rank0, nullptr), fault, gate_);
}

std::string ClusterMembers::join_hint() const {
  return fmt::format("taihu-node --coordinator={}:{} --secret-file=PATH", transport::reachable_address(settings_.listen),
                     port_);
}

void ClusterMembers::joined(Self* self, const msg::NodeJoined& j) {
  const auto i = static_cast<std::size_t>(j.node);
  if (nodes_.size() <= i) {
    nodes_.resize(i + 1);
    placed_.resize(i + 1, false);
  }
  nodes_[i] = {j.name, j.agent};
  self->monitor(j.agent);
  if (in_process_) return;
  if (generation_ == 0)
    spdlog::info("coordinator: node {} '{}' joined ({}/{})", j.node, j.name, live().size(), settings_.nodes);
  else
    spdlog::info("coordinator: node {} '{}' joined; it takes part from the next epoch", j.node, j.name);
}

int ClusterMembers::waiting() const {
  int n = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) n += nodes_[i].agent && !placed_[i] ? 1 : 0;
  return n;
}

std::string ClusterMembers::joined_names() const {
  std::string names;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].agent) names += fmt::format("{}'{}'", names.empty() ? "" : ", ", nodes_[i].name);
  return names;
}

std::vector<int> ClusterMembers::live() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].agent) out.push_back(static_cast<int>(i));
  return out;
}

std::string ClusterMembers::node_name(int node) const {
  return node >= 0 && static_cast<std::size_t>(node) < nodes_.size()
             ? fmt::format("node {} '{}'", node, nodes_[static_cast<std::size_t>(node)].name)
             : fmt::format("node {}", node);
}

std::string ClusterMembers::where(int node) const { return in_process_ ? "" : " on " + node_name(node); }

void ClusterMembers::form(Self* self, const RunPlan& plan, std::function<void(Members)> done,
                          std::function<void(std::string)> failed) {
  const std::vector<int> live_nodes = live();
  const int ranks = plan.ranks;
  if (live_nodes.empty() || ranks % static_cast<int>(live_nodes.size()) != 0) {
    failed(fmt::format("{} ranks cannot be placed on {} nodes", ranks, live_nodes.size()));
    return;
  }
  ++generation_;
  auto members = std::make_shared<Members>();
  members->generation = generation_;
  // Placement: contiguous blocks of ranks per live node.
  for (int r = 0; r < ranks; ++r)
    members->rank_node.push_back(live_nodes[static_cast<std::size_t>(r * static_cast<int>(live_nodes.size()) / ranks)]);
  placed_.assign(nodes_.size(), false);
  std::vector<msg::node_agent_actor> agents;
  for (int i : live_nodes) {
    agents.push_back(nodes_[static_cast<std::size_t>(i)].agent);
    placed_[static_cast<std::size_t>(i)] = true;
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(1000 * std::max(60.0, settings_.join_timeout)));
  std::vector<std::string> algorithms;
  for (auto a : plan.bucket_algorithms) algorithms.emplace_back(collectives::name(a));
  const std::string config = plan.config_for_nodes();
  auto fail_node = [this, self, live_nodes, failed](const char* what) {
    return [this, self, live_nodes, failed, what](std::size_t k, caf::error& e) {
      failed(fmt::format("{} failed to {}: {}", node_name(live_nodes[k]), what, reason_text(self->system(), e)));
    };
  };
  // Every node gets the config and the placement (each setup names its node),
  // then, once all are ready, every node's peers.
  std::vector<msg::ClusterSetup> setups;
  for (int i : live_nodes)
    setups.push_back(msg::ClusterSetup{generation_, i, static_cast<std::int32_t>(nodes_.size()), config,
                                       std::vector<std::int32_t>(members->rank_node.begin(), members->rank_node.end()),
                                       algorithms, msg::failure_listener{self}});
  fan_in_each<msg::NodeReady>(
      self, agents, timeout, [setups](std::size_t k) { return setups[k]; },
      [this, self, agents, live_nodes, members, timeout, done, fail_node, ranks](std::vector<msg::NodeReady>& all) {
        msg::ClusterPeers peers;
        peers.hosts.resize(nodes_.size());
        peers.ports.resize(nodes_.size());
        for (std::size_t k = 0; k < all.size(); ++k) {
          const auto n = static_cast<std::size_t>(live_nodes[k]);
          peers.hosts[n] = all[k].data_host;
          peers.ports[n] = all[k].data_port;
        }
        fan_in<msg::NodeStarted>(
            self, agents, timeout, peers,
            [this, members, done, live_nodes, ranks](std::vector<msg::NodeStarted>& started) {
              members->workers.assign(static_cast<std::size_t>(ranks), worker_actor{});
              for (std::size_t k = 0; k < started.size(); ++k) add_started(*members, live_nodes[k], started[k]);
              if (!in_process_)
                spdlog::info("coordinator: {} nodes, {} ranks placed; training starts{}", live_nodes.size(), ranks,
                             generation_ > 1 ? fmt::format(" (cluster generation {})", generation_) : "");
              done(std::move(*members));
            },
            fail_node("start its workers"));
      },
      fail_node("set up its replicas"));
}

void ClusterMembers::add_started(Members& members, int node, const msg::NodeStarted& started) const {
  RunStatus::Member status{node_name(node), "training", {}};
  for (std::size_t j = 0; j < started.ranks.size(); ++j) {
    const int r = started.ranks[j];
    members.workers[static_cast<std::size_t>(r)] = started.workers[j];
    members.who[started.workers[j].address()] = {r, "worker", where(node), node};
    if (in_process_)  // every rank in this process: the status lists workers
      members.status.push_back({fmt::format("worker {} (in-process)", r), "training", {r}});
    status.ranks.push_back(r);
  }
  for (const auto& shard : started.shards)
    members.who[shard.shard.address()] = {shard.rank, fmt::format("shard of bucket {}", shard.bucket), where(node),
                                          node};
  members.who[nodes_[static_cast<std::size_t>(node)].agent.address()] = {-1, "node", node_name(node), node};
  if (!in_process_) members.status.push_back(std::move(status));
}

void ClusterMembers::lose(Self* self, int node) {
  auto& n = nodes_[static_cast<std::size_t>(node)];
  if (!n.agent) return;
  self->demonitor(n.agent.address());
  self->send(n.agent, msg::leave_atom_v);  // one that still runs stops (a dead one never hears of it)
  n.agent = msg::node_agent_actor{};
  placed_[static_cast<std::size_t>(node)] = false;
  if (gate_) self->send(gate_, msg::leave_atom_v);
}

void ClusterMembers::drop_replicas(Self* self, std::chrono::milliseconds timeout, std::function<void()> done) {
  // Each node answers on its own; one that cannot drop its replicas within
  // the time is as good as lost (a hung one fails the request after
  // dead_after already). The rest go on when all have answered or failed.
  const std::vector<int> live_nodes = live();
  std::vector<msg::node_agent_actor> agents;
  for (int i : live_nodes) agents.push_back(nodes_[static_cast<std::size_t>(i)].agent);
  settle<bool>(
      self, agents, timeout, msg::reform_atom_v,
      [this, self, live_nodes](std::size_t k, caf::error& e) {
        spdlog::warn("elastic: {} is gone too ({})", node_name(live_nodes[k]), reason_text(self->system(), e));
        lose(self, live_nodes[k]);
      },
      std::move(done));
}

void ClusterMembers::stop(Self* self, const msg::RunEnded& end) {
  for (auto& n : nodes_) {
    if (!n.agent) continue;
    self->demonitor(n.agent.address());
    self->send(n.agent, end);
  }
  gatekeeper_.reset();  // no new connections
  if (gate_) self->send_exit(gate_, caf::exit_reason::user_shutdown);
  gate_ = msg::gate_actor{};
}

}  // namespace taihu::compute
