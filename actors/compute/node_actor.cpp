#include "actors/compute/node_agent.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "actors/chunk_link/chunk_link.hpp"
#include "actors/compute/chunk_transport.hpp"
#include "actors/compute/hosted_ranks.hpp"
#include "actors/compute/replica_services.hpp"
#include "actors/compute/run_plan.hpp"
#include "actors/compute/worker_actor.hpp"
#include "actors/exception_reason.hpp"
#include "actors/sync/shard_actor.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/buckets.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/layers/convolution.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// A teardown waits this long for the node's actors to stop; a node that must
// answer the coordinator cannot hang on one that does not (it is named in the
// log instead).
constexpr auto teardown_limit = std::chrono::seconds(10);

// The node's agent: the coordinator's counterpart in this process. It hosts
// the ranks the coordinator places here for one cluster generation at a time
// and ends the process's run with an exit code that says why.
struct NodeState {
  static inline const char* name = "taihu.node";

  // Given at spawn.
  NodeOptions options;
  std::string label;  // "node 1 'name'" for logs
  int index = -1;
  msg::gate_actor gate;
  std::shared_ptr<std::promise<int>> exit_code;
  std::shared_ptr<PlannedReplicas> planned;  // an in-process run's node; else null

  // The current cluster generation (ClusterSetup, then ClusterPeers).
  msg::failure_listener coordinator;
  std::int32_t generation = 0;
  std::optional<config::Document> sent_config;  // a node process's: the config the coordinator sent
  const config::Document* doc = nullptr;        // the run's config: sent_config, or the plan's
  std::vector<int> rank_node;
  std::vector<std::string> algorithms;
  std::vector<int> local_ranks;
  std::vector<std::shared_ptr<WorkerModel>> models;
  std::shared_ptr<transport::ChunkLink> link;
  std::vector<worker_actor> workers;
  std::vector<sync::shard_actor> shards;
  std::shared_ptr<ComputeSlots> slots;  // the workers'; closed by a teardown
  std::map<caf::actor_addr, std::string> who;

  // A teardown in progress: the actors told to exit that have not ended yet,
  // and what runs once they have (or teardown_limit passed).
  std::set<caf::actor_addr> stopping;
  std::vector<std::function<void()>> after_teardown;
  std::uint64_t teardowns = 0;

  // This process's own liveness: the agent ticks every heartbeat, and a tick
  // late by more than dead_after means the process itself was stopped
  // (SIGSTOP) or starved. A coordinator lost right after such a stall has
  // dropped this node for its silence, which is this node's failure.
  Clock::time_point last_tick = Clock::now();
  Clock::time_point stall_seen{};
  double stall_seconds = 0.0;
  bool ending = false;
};
// The agent's own interface: the coordinator's (messages/cluster.hpp) and its two timers.
using node_agent_impl = msg::node_agent_actor::extend<caf::reacts_to<msg::tick_atom>,
                                                      caf::reacts_to<msg::teardown_atom, std::uint64_t>>;
using NodeAgent = node_agent_impl::stateful_base<NodeState>;

// A node in its coordinator's process (spawn_own_node) joins through no control port.
bool beside_coordinator(const NodeState& s) { return s.options.coordinator_port == 0; }

// A node logs joining, building and ending, except an in-process run's: its
// log is the run's alone, as it was before runs had nodes.
bool tells_its_life(const NodeState& s) { return s.planned == nullptr; }

void report(NodeAgent* self, int rank, const std::string& reason) {
  auto& s = self->state;
  if (!beside_coordinator(s)) spdlog::error("{}: {}", s.label, reason);  // else the coordinator logs it
  if (s.coordinator) self->send(s.coordinator, msg::NodeFailure{s.generation, s.index, rank, reason});
}

void finish_teardown(NodeAgent* self) {
  auto& s = self->state;
  s.stopping.clear();
  s.link.reset();
  s.workers.clear();
  s.shards.clear();
  s.slots.reset();
  s.who.clear();
  s.models.clear();
  s.local_ranks.clear();
  s.doc = nullptr;
  s.sent_config.reset();
  auto then = std::move(s.after_teardown);
  s.after_teardown.clear();
  for (auto& f : then) f();
}

// Drops this node's replicas, shard actors and data plane (at the end, and
// before an elastic cluster re-forms), then runs `then`.
void teardown(NodeAgent* self, std::function<void()> then) {
  auto& s = self->state;
  s.after_teardown.push_back(std::move(then));
  if (!s.stopping.empty()) return;  // one in progress: `then` runs after it
  if (s.link) s.link->detach_all();
  if (s.slots) s.slots->close();  // a worker waiting for a slot could not stop
  auto stop = [self, &s](const auto& a) {
    s.stopping.insert(a.address());
    self->send_exit(a, caf::exit_reason::user_shutdown);  // still monitored: its down_msg says it stopped
  };
  std::ranges::for_each(s.workers, stop);
  std::ranges::for_each(s.shards, stop);
  if (s.stopping.empty()) return finish_teardown(self);
  self->delayed_send(self, teardown_limit, msg::teardown_atom_v, ++s.teardowns);
}

// Ends the node with `code` once its actors have stopped.
void end_node(NodeAgent* self, int code) {
  auto& s = self->state;
  if (s.ending) return;
  s.ending = true;
  if (code == NodeExit::finished && tells_its_life(s)) spdlog::info("{}: training over, shutting down", s.label);
  teardown(self, [self, code] {
    self->state.exit_code->set_value(code);
    self->quit();
  });
}

// The seconds this process was stalled, if it was within the last few
// heartbeats (or is only now noticing it: the tick has not run yet).
double recent_stall(const NodeState& s) {
  const auto now = Clock::now();
  const double silent = std::chrono::duration<double>(now - s.last_tick).count();
  if (silent > s.options.dead_after) return silent;
  if (s.stall_seconds > 0.0 && now - s.stall_seen < millis(4 * s.options.heartbeat + s.options.dead_after))
    return s.stall_seconds;
  return 0.0;
}

void lost_coordinator(NodeAgent* self, const caf::error& reason) {
  auto& s = self->state;
  if (const double stall = recent_stall(s); stall > 0.0) {
    spdlog::error("{}: this process was stopped or starved for {:.1f} s, longer than dead_after ({} s); the "
                  "coordinator dropped it as silent ({}); stopping",
                  s.label, stall, s.options.dead_after, reason_text(self->system(), reason));
    return end_node(self, NodeExit::dropped);
  }
  spdlog::error("{}: lost the coordinator ({}); stopping", s.label, reason_text(self->system(), reason));
  end_node(self, NodeExit::coordinator_lost);
}

void on_down(NodeAgent* self, const caf::down_msg& dm) {
  auto& s = self->state;
  if (dm.source == s.gate.address() || (s.coordinator && dm.source == s.coordinator.address())) {
    if (!s.ending) lost_coordinator(self, dm.reason);  // after RunEnded, the coordinator goes as it should
    return;
  }
  // It has ended: a teardown must not wait for it.
  const auto gone = [&dm](const auto& a) { return a.address() == dm.source; };
  std::erase_if(s.workers, gone);
  std::erase_if(s.shards, gone);
  if (s.stopping.erase(dm.source) == 1) {
    if (s.stopping.empty()) finish_teardown(self);
    return;
  }
  if (dm.reason == caf::exit_reason::user_shutdown) return;  // the coordinator's shutdown
  // The coordinator of this process monitors every worker and shard itself
  // (NodeStarted names them): it names the failure, once.
  if (beside_coordinator(s)) return;
  auto it = s.who.find(dm.source);
  const std::string what = it != s.who.end() ? it->second : "an actor";
  int rank = -1;
  if (it != s.who.end() && what.rfind("worker ", 0) == 0) rank = std::stoi(what.substr(7));
  report(self, rank, fmt::format("{} on node {} failed: {}", what, s.index, reason_text(self->system(), dm.reason)));
}

// A node process's replicas, from the config the coordinator sent: its
// kernels configured for the ranks that share this host's cores.
std::vector<std::shared_ptr<WorkerModel>> models_from_config(NodeAgent* self, const msg::ClusterSetup& setup) {
  auto& s = self->state;
  s.sent_config.emplace(config::Document::parse(setup.config, "config from the coordinator"));
  s.doc = &*s.sent_config;
  const config::Document& doc = *s.doc;
  const TrainSettings settings = read_replica_settings(doc);
  const double bucket_mb = doc.section("sync").get_or<double>("bucket_mb", 25.0);
  const auto bucket_bytes = static_cast<std::size_t>(bucket_mb * 1024.0 * 1024.0);
  const int blas_threads = doc.section("blas").get_or<int>("threads", 0);
  const int hosted = static_cast<int>(s.local_ranks.size());
  const int sharing = std::max(1, s.options.processes_on_host) * std::max(1, hosted);
  set_compute_threads(blas_threads > 0 ? blas_threads : std::max(1, blas::available_cores() / sharing));
  ConvolutionLayer::configure(doc.section("conv"));
  const ReplicaData data = ReplicaData::read(doc, settings);
  const int ranks = static_cast<int>(s.rank_node.size());
  const ReplicaServices services = replica_services(self->system(), hosted);  // shared, as in one process
  std::vector<std::shared_ptr<WorkerModel>> models;
  for (int r : s.local_ranks)
    models.push_back(build_worker_model(doc, settings, data, r, ranks, bucket_bytes, services));
  return models;
}

// An in-process run's replicas, from its plan (the app configured the kernels).
std::vector<std::shared_ptr<WorkerModel>> planned_models(NodeState& s) {
  PlannedReplicas& p = *s.planned;
  s.doc = &p.plan->doc;
  std::vector<std::shared_ptr<WorkerModel>> models;
  for (int r : s.local_ranks) {
    models.push_back(r == 0 && p.rank0 ? std::exchange(p.rank0, nullptr) : p.plan->build_model(r, p.fault));
    models.back()->fault = p.fault;
  }
  return models;
}

// Builds this node's replicas for a generation and opens its chunk link.
msg::NodeReady set_up(NodeAgent* self, const msg::ClusterSetup& setup) {
  auto& s = self->state;
  s.generation = setup.generation;
  s.rank_node.assign(setup.rank_node.begin(), setup.rank_node.end());
  s.algorithms = setup.algorithms;
  for (int r = 0; r < static_cast<int>(s.rank_node.size()); ++r)
    if (s.rank_node[static_cast<std::size_t>(r)] == s.index) s.local_ranks.push_back(r);
  s.models = s.planned ? planned_models(s) : models_from_config(self, setup);
  // A lost peer: the coordinator hears it by message (it names the node); runs on the transport's thread.
  auto on_lost = [coordinator = s.coordinator, generation = s.generation, index = s.index](int node,
                                                                                       const std::string& why) {
    caf::anon_send(coordinator, msg::NodeFailure{generation, node, -1, fmt::format(
        "node {} lost its data-plane connection to node {}: {}", index, node, why)});
  };
  OpenedChunkLink opened = open_chunk_link(s.doc->section("cluster"), s.options, s.index, setup.nodes, s.rank_node,
                                           std::move(on_lost), s.label);
  s.link = opened.link;
  for (auto& m : s.models) m->allocator = opened.allocator;
  if (tells_its_life(s))
    spdlog::info("{}: ranks {}..{} built; {}", s.label, s.local_ranks.front(), s.local_ranks.back(),
                 opened.description);
  return msg::NodeReady{s.index, opened.host, opened.port};
}

// Each bucket's shard configuration: what the coordinator planned, which a
// node process derives again from the config and the bucket's collective.
std::vector<sync::BucketShardConfig> shard_configs(const NodeState& s, const collectives::Buckets& buckets,
                                                   int ranks) {
  std::vector<sync::BucketShardConfig> configs;
  if (ranks == 1) return configs;  // one rank exchanges nothing: no buckets are planned, no shards spawned
  require(s.algorithms.size() == buckets.size(), "the coordinator sent {} algorithms for {} buckets",
          s.algorithms.size(), buckets.size());
  const auto compression = s.planned ? s.planned->plan->bucket_compression
                                     : collectives::plan_compression(*s.doc, buckets, ranks);
  for (std::size_t b = 0; b < buckets.size(); ++b)
    configs.push_back({static_cast<std::uint32_t>(b), buckets[b].elements,
                       collectives::parse_algorithm(s.algorithms[b]), compression[b]});
  return configs;
}

// Connects to the other nodes, spawns the shard actors and the workers of
// this node's ranks, and wires the shards up.
msg::NodeStarted start(NodeAgent* self, const msg::ClusterPeers& peers) {
  auto& s = self->state;
  if (s.link) s.link->connect(peers.hosts, peers.ports);
  const int ranks = static_cast<int>(s.rank_node.size());
  const auto configs = shard_configs(s, *s.models.front()->buckets, ranks);
  s.slots = std::make_shared<ComputeSlots>(compute_slot_count(s.doc->section("sync").get_or<int>("compute_slots", 0)));
  const collectives::Topology topology = s.planned ? *s.planned->plan->topology : training_topology(*s.doc, ranks);
  HostedRanks hosted = host_ranks(self->system(), topology, configs, std::move(s.models), ranks, s.slots, s.link);
  s.models.clear();
  msg::NodeStarted started{s.index, {hosted.ranks.begin(), hosted.ranks.end()}, hosted.workers, {}};
  for (const auto& shard : hosted.shards) {
    s.who[shard.actor.address()] = fmt::format("rank {}'s shard of bucket {}", shard.rank, shard.bucket);
    s.shards.push_back(shard.actor);
    started.shards.push_back({shard.rank, shard.bucket, shard.actor});
  }
  for (std::size_t k = 0; k < hosted.ranks.size(); ++k)
    s.who[hosted.workers[k].address()] = fmt::format("worker {}", hosted.ranks[k]);
  s.workers = std::move(hosted.workers);
  for (auto& a : s.workers) self->monitor(a);
  for (auto& a : s.shards) self->monitor(a);
  return started;
}

// A setup or start that threw: the coordinator hears why, and the node ends.
caf::error failed(NodeAgent* self, std::string_view what, const std::exception& e) {
  report(self, -1, fmt::format("{} failed: {}", what, e.what()));
  end_node(self, NodeExit::setup_failed);
  return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
}

// Asks the gate for this node's index (the gate learns the agent from the
// request). Awaited: no message of the coordinator's is handled before the
// index is known.
void join(NodeAgent* self, const std::string& name) {
  auto& s = self->state;
  self->request(s.gate, std::chrono::seconds(10),
                msg::JoinRequest{name, msg::node_agent_actor{self}, s.options.build, s.options.place})
      .await(
          [self, name](std::int32_t index) {
            auto& s = self->state;
            s.index = index;
            s.label = fmt::format("node {} '{}'", index, name);
            if (tells_its_life(s))
              spdlog::info("{}: joined the coordinator {}", s.label,
                           beside_coordinator(s) ? std::string("of this process")
                                                 : fmt::format("at {}:{}", s.options.coordinator_host,
                                                               s.options.coordinator_port));
            self->send(self, msg::tick_atom_v);
          },
          [self](caf::error& e) {
            auto& s = self->state;
            if (s.ending) return;
            spdlog::error("{}: the coordinator at {}:{} did not admit this node: {}", s.label,
                          s.options.coordinator_host, s.options.coordinator_port, reason_text(self->system(), e));
            end_node(self, NodeExit::not_admitted);
          });
}

// A generation's setup: the last generation's replicas go first (an elastic
// cluster re-formed), then this one's are built.
caf::result<msg::NodeReady> on_setup(NodeAgent* self, msg::ClusterSetup& setup) {
  auto& s = self->state;
  if (!s.coordinator) {
    s.coordinator = setup.coordinator;
    self->monitor(s.coordinator);
  }
  auto promise = self->make_response_promise<msg::NodeReady>();
  teardown(self, [self, promise, setup = std::move(setup)]() mutable {
    try {
      promise.deliver(set_up(self, setup));
    } catch (const std::exception& e) {
      promise.deliver(failed(self, "setup", e));
    }
  });
  return promise;
}

// The heartbeat of this process's own liveness (NodeState::last_tick).
void tick(NodeAgent* self) {
  auto& s = self->state;
  const auto now = Clock::now();
  const double gap = std::chrono::duration<double>(now - s.last_tick).count();
  if (gap > s.options.dead_after) {
    s.stall_seen = now;
    s.stall_seconds = gap;
    spdlog::warn("{}: this process did not run for {:.1f} s (stopped or starved)", s.label, gap);
  }
  s.last_tick = now;
  self->delayed_send(self, millis(s.options.heartbeat), msg::tick_atom_v);
}

// Teardown number `teardown` ran out of time: the actors that did not stop are named, and left behind.
void teardown_overdue(NodeAgent* self, std::uint64_t teardown) {
  auto& s = self->state;
  if (teardown != s.teardowns || s.stopping.empty()) return;  // that one completed
  for (const auto& a : s.stopping) {
    auto it = s.who.find(a);
    spdlog::warn("{}: {} did not stop within {} s; going on without it", s.label,
                 it != s.who.end() ? it->second : std::string("an actor"), teardown_limit.count());
  }
  finish_teardown(self);
}

// Joins, then serves the coordinator.
node_agent_impl::behavior_type node_agent(NodeAgent* self, NodeOptions options, std::string name,
                                          msg::gate_actor gate, std::shared_ptr<std::promise<int>> exit_code,
                                          std::shared_ptr<PlannedReplicas> planned) {
  auto& s = self->state;
  s.options = std::move(options);
  s.planned = std::move(planned);
  s.label = fmt::format("node '{}'", name);
  s.gate = std::move(gate);
  s.exit_code = std::move(exit_code);
  self->monitor(s.gate);
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  join(self, name);
  return {
      [self](msg::ClusterSetup& setup) { return on_setup(self, setup); },
      [self](msg::ClusterPeers& peers) -> caf::result<msg::NodeStarted> {
        try {
          return start(self, peers);
        } catch (const std::exception& e) {
          return failed(self, "start", e);
        }
      },
      [self](msg::reform_atom) -> caf::result<bool> {
        spdlog::info("{}: the cluster re-forms; dropping ranks of generation {}", self->state.label,
                     self->state.generation);
        auto promise = self->make_response_promise<bool>();
        teardown(self, [promise]() mutable { promise.deliver(true); });
        return promise;
      },
      [self](msg::RunEnded& end) {
        if (end.finished) return end_node(self, NodeExit::finished);
        // Beside its coordinator (a launcher's rank 0) the process logs the reason once, as the run's.
        if (!beside_coordinator(self->state)) spdlog::error("{}: the run failed: {}", self->state.label, end.reason);
        end_node(self, NodeExit::run_failed);
      },
      [self](msg::leave_atom) {
        spdlog::error("{}: the coordinator dropped this node from the cluster; stopping", self->state.label);
        end_node(self, NodeExit::dropped);
      },
      [self](msg::tick_atom) { tick(self); },
      [self](msg::teardown_atom, std::uint64_t teardown) { teardown_overdue(self, teardown); },
  };
}

}  // namespace

void spawn_node_agent(caf::actor_system& system, NodeOptions options, std::string name, msg::gate_actor gate,
                      std::shared_ptr<std::promise<int>> exit_code, std::shared_ptr<PlannedReplicas> planned) {
  system.spawn(node_agent, std::move(options), std::move(name), std::move(gate), std::move(exit_code),
               std::move(planned));
}

}  // namespace taihu::compute
