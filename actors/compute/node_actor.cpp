#include "actors/compute/cluster.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "actors/compute/control_plane.hpp"
#include "actors/compute/replica_services.hpp"
#include "actors/compute/run_plan.hpp"
#include "actors/compute/worker_actor.hpp"
#include "actors/exception_reason.hpp"
#include "actors/chunk_link/arena_allocator.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "transport/shared_arena.hpp"
#include "transport/data_plane.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/buckets.hpp"
#include "actors/sync/bucket_shards.hpp"
#include "actors/sync/shard_actor.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

}  // namespace

// --- the node ----------------------------------------------------------------

int run_node(const NodeOptions& o) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::taihu>();
  cfg.set("scheduler.max-threads", 2);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  configure_control_plane(cfg, o.heartbeat, o.dead_after);
  caf::actor_system system{cfg};
  const std::string name = o.name.empty() ? fmt::format("node-{}", ::getpid()) : o.name;
  const std::string where = fmt::format("{}:{}", o.coordinator_host, o.coordinator_port);

  // Reach the coordinator (it may start after us): the gatekeeper first,
  // where both sides prove the secret, then the gate actor behind it.
  caf::actor gate;
  transport::GateClientOptions gate_options;
  gate_options.host = o.coordinator_host;
  gate_options.port = o.coordinator_port;
  gate_options.secret = o.secret;
  gate_options.version = static_cast<std::uint32_t>(o.protocol_version);
  gate_options.name = name;
  const auto deadline = Clock::now() + millis(o.join_timeout);
  for (;;) {
    try {
      gate = join_control_port(system, gate_options);
      break;
    } catch (const transport::GateRefused& e) {
      spdlog::error("node '{}': the coordinator at {} did not admit this node: {}", name, where, e.what());
      return 5;
    } catch (const transport::NetError& e) {
      if (Clock::now() > deadline) {
        spdlog::error("node '{}': cannot reach the coordinator at {} within {} s: {}", name, where, o.join_timeout,
                      e.what());
        return 4;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  caf::scoped_actor self{system};
  int index = -1;
  std::string error;
  self->request(gate, std::chrono::seconds(10), msg::JoinRequest{name, caf::actor_cast<caf::actor>(self)})
      .receive([&](std::int32_t i) { index = i; }, [&](caf::error& e) { error = reason_text(system, e); });
  if (index < 0) {
    spdlog::error("node '{}': the coordinator at {} did not admit this node: {}", name, where, error);
    return 5;
  }
  spdlog::info("node '{}': joined the coordinator at {} as node {}", name, where, index);
  self->monitor(gate);

  // State built by the setup messages.
  caf::actor coordinator;
  std::optional<config::Document> doc;
  TrainSettings settings;
  std::vector<int> rank_node;
  std::vector<std::string> algorithms;
  std::vector<int> local_ranks;
  std::vector<std::shared_ptr<WorkerModel>> models;
  std::shared_ptr<transport::ChunkLink> link;
  std::vector<caf::actor> workers, shards;
  std::map<caf::actor_addr, std::string> who;
  int exit_code = 0;
  bool running = true;
  std::int32_t generation = 0;

  auto report = [&](int node, int rank, std::string reason) {
    spdlog::error("node {} '{}': {}", index, name, reason);
    if (coordinator) self->send(coordinator, msg::NodeFailure{generation, node, rank, std::move(reason)});
  };
  // Drops this node's replicas, shard actors and data plane (at the end, and
  // before an elastic cluster re-forms).
  // Waits a bounded time: a node that must answer the coordinator cannot
  // hang on an actor that does not stop (it is named in the log instead).
  auto teardown = [&] {
    if (link) link->detach_all();
    std::set<caf::actor_addr> running_actors;
    for (auto* group : {&workers, &shards})
      for (auto& a : *group) {
        running_actors.insert(a.address());
        self->send_exit(a, caf::exit_reason::user_shutdown);  // still monitored: its down_msg says it stopped
      }
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (auto now = Clock::now(); !running_actors.empty() && now < deadline; now = Clock::now())
      self->receive(
          [&](const caf::down_msg& dm) {
            if (running_actors.erase(dm.source) == 1) return;
            if (running && (dm.source == gate.address() || (coordinator && dm.source == coordinator.address()))) {
              spdlog::error("node {} '{}': lost the coordinator while dropping its replicas; stopping", index, name);
              exit_code = 7;
              running = false;
            }
          },
          caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)) >> [] {});
    for (const auto& a : running_actors) {
      auto it = who.find(a);
      spdlog::warn("node {} '{}': {} did not stop within 10 s; going on without it", index, name,
                   it != who.end() ? it->second : std::string("an actor"));
    }
    link.reset();
    workers.clear();
    shards.clear();
    who.clear();
    models.clear();
    local_ranks.clear();
  };

  self->receive_while([&] { return running; })(
      [&](msg::ClusterSetup& setup) -> caf::result<msg::NodeReady> {
        if (!coordinator) {
          coordinator = caf::actor_cast<caf::actor>(self->current_sender());
          self->monitor(coordinator);
        }
        try {
          teardown();  // a re-formed cluster: nothing of the last one stays
          generation = setup.generation;
          doc.emplace(config::Document::parse(setup.config, "config from the coordinator"));
          settings = read_replica_settings(*doc);
          rank_node.assign(setup.rank_node.begin(), setup.rank_node.end());
          algorithms = setup.algorithms;
          const int ranks = static_cast<int>(rank_node.size());
          for (int r = 0; r < ranks; ++r)
            if (rank_node[static_cast<std::size_t>(r)] == index) local_ranks.push_back(r);
          const double bucket_mb = doc->section("sync").get_or<double>("bucket_mb", 25.0);
          const auto bucket_bytes = static_cast<std::size_t>(bucket_mb * 1024.0 * 1024.0);
          const int blas_threads = doc->section("blas").get_or<int>("threads", 0);
          blas::set_threads(blas_threads > 0 ? blas_threads
                                             : std::max(1, blas::available_cores() /
                                                               std::max(1, static_cast<int>(local_ranks.size()))));
          // The coordinator checked [cluster] (ClusterSettings::read); its defaults hold here too.
          const config::Section& cluster_section = doc->section("cluster");
          const ClusterSettings defaults;
          const bool same_host_copy = cluster_section.get_or<bool>("same_host_copy", defaults.same_host_copy);
          // The buckets and the shards' copies live in the shared arena, so that peers on this host read them in place.
          std::shared_ptr<const msg::PayloadAllocator> allocator;
          if (same_host_copy) {
            try {
              allocator = std::make_shared<transport::ArenaAllocator>(transport::SharedArena::install());
            } catch (const std::exception& e) {
              spdlog::warn("node {}: no shared arena ({}); peers on this host read through the kernel", index, e.what());
            }
          }
          const ReplicaData data = ReplicaData::read(*doc, settings);
          for (int r : local_ranks) {
            models.push_back(build_worker_model(*doc, settings, data, r, ranks, bucket_bytes,
                                                replica_services(system, static_cast<int>(local_ranks.size()))));
            models.back()->allocator = allocator;
          }
          transport::DataPlaneOptions options;
          options.node = index;
          options.secret = o.secret;
          options.listen_address = o.data_listen;
          if (!same_host_copy) options.remote_read_min_bytes = 0;
          options.poll_budget = std::chrono::microseconds(cluster_section.get_or<int>("poll_us", defaults.poll_us));
          link = std::make_shared<transport::ChunkLink>(
              options, rank_node, [coordinator, generation, index](int node, const std::string& why) {
                // On the I/O thread: tell the coordinator (by message; it names the node).
                caf::anon_send(coordinator, msg::NodeFailure{generation, node, -1, fmt::format(
                    "node {} lost its data-plane connection to node {}: {}", index, node, why)});
              },
              allocator);
          spdlog::info("node {} '{}': ranks {}..{} built; data plane on {}:{}", index, name, local_ranks.front(),
                       local_ranks.back(), o.data_listen, link->port());
          return msg::NodeReady{index, o.data_listen, link->port()};
        } catch (const std::exception& e) {
          report(index, -1, fmt::format("setup failed: {}", e.what()));
          exit_code = 6;
          running = false;
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        }
      },
      [&](msg::ClusterPeers& peers) -> caf::result<msg::NodeStarted> {
        try {
          for (std::size_t j = 0; j < peers.hosts.size(); ++j)  // nodes without ranks have no port
            if (static_cast<int>(j) != index && peers.ports[j] != 0)
              link->plane().connect(static_cast<int>(j), peers.hosts[j], peers.ports[j]);
          const int ranks = static_cast<int>(rank_node.size());
          const auto topology = training_topology(*doc, ranks);
          const collectives::Buckets& buckets = *models.front()->buckets;
          // One rank exchanges nothing: no buckets are planned, no shards spawned.
          require(ranks == 1 || algorithms.size() == buckets.size(),
                  "the coordinator sent {} algorithms for {} buckets", algorithms.size(), buckets.size());
          std::vector<std::vector<sync::shard_actor>> bucket_shards(buckets.size(),
                                                                    std::vector<sync::shard_actor>(ranks));
          const auto compression = collectives::plan_compression(*doc, buckets, ranks);
          for (std::size_t b = 0; ranks > 1 && b < buckets.size(); ++b) {
            bucket_shards[b] = sync::spawn_bucket_shards(
                system, topology,
                {static_cast<std::uint32_t>(b), buckets[b].elements, collectives::parse_algorithm(algorithms[b]),
                 compression[b]},
                link, [&](int r) { return rank_node[static_cast<std::size_t>(r)] == index; });
            for (int r = 0; r < ranks; ++r) {
              if (rank_node[static_cast<std::size_t>(r)] != index) continue;
              const sync::shard_actor& shard = bucket_shards[b][static_cast<std::size_t>(r)];
              link->attach(static_cast<std::uint32_t>(b), r, shard);
              who[shard.address()] = fmt::format("rank {}'s shard of bucket {}", r, b);
              shards.push_back(caf::actor_cast<caf::actor>(shard));
            }
          }
          const int cores = blas::available_cores();
          auto slots = std::make_shared<ComputeSlots>(std::max(1, cores / std::max(1, blas::threads())));
          msg::NodeStarted started{index, {}, {}};
          for (auto& m : models) {
            const int r = m->rank;
            if (ranks > 1)
              for (auto& s : bucket_shards) m->shards.push_back(s[static_cast<std::size_t>(r)]);
            m->compute_slots = slots;
            auto w = caf::actor_cast<caf::actor>(spawn_worker(system, std::move(m)));
            who[w.address()] = fmt::format("worker {}", r);
            workers.push_back(w);
            started.ranks.push_back(r);
            started.workers.push_back(w);
          }
          models.clear();
          for (std::size_t b = 0; ranks > 1 && b < bucket_shards.size(); ++b)
            for (std::size_t k = 0; k < started.ranks.size(); ++k) {
              const auto r = static_cast<std::size_t>(started.ranks[k]);
              self->send(bucket_shards[b][r], msg::ShardInit{static_cast<std::uint32_t>(b), sync::as_peers(bucket_shards[b]),
                                                             started.workers[k]});
            }
          for (auto& a : workers) self->monitor(a);
          for (auto& a : shards) self->monitor(a);
          return started;
        } catch (const std::exception& e) {
          report(index, -1, fmt::format("start failed: {}", e.what()));
          exit_code = 6;
          running = false;
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        }
      },
      [&](msg::reform_atom) {
        spdlog::info("node {} '{}': the cluster re-forms; dropping ranks of generation {}", index, name, generation);
        teardown();
        return true;
      },
      [&](msg::stop_atom) { running = false; },
      [&](msg::leave_atom) {
        spdlog::error("node {} '{}': the coordinator dropped this node from the cluster; stopping", index, name);
        exit_code = 8;
        running = false;
      },
      [&](const caf::down_msg& dm) {
        if (dm.source == gate.address() || (coordinator && dm.source == coordinator.address())) {
          spdlog::error("node {} '{}': lost the coordinator ({}); stopping", index, name, reason_text(system, dm.reason));
          exit_code = 7;
          running = false;
          return;
        }
        // It has ended: a teardown must not wait for it.
        for (auto* group : {&workers, &shards})
          std::erase_if(*group, [&](const caf::actor& a) { return a.address() == dm.source; });
        if (dm.reason == caf::exit_reason::user_shutdown) return;  // the coordinator's shutdown
        auto it = who.find(dm.source);
        const std::string what = it != who.end() ? it->second : "an actor";
        int rank = -1;
        if (it != who.end() && what.rfind("worker ", 0) == 0) rank = std::stoi(what.substr(7));
        report(index, rank, fmt::format("{} on node {} failed: {}", what, index, reason_text(system, dm.reason)));
      });

  teardown();
  if (exit_code == 0) spdlog::info("node {} '{}': training over, shutting down", index, name);
  // Every actor was told to exit and has terminated, but the actor system's
  // destructor also waits until each detached actor is released, and a
  // reference that is never dropped would keep this process alive forever
  // (seen after compressed runs over shaped links). The node's work is done:
  // bound that wait.
  std::thread([exit_code, index, name] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    spdlog::warn("node {} '{}': an actor was not released within 10 s of shutdown; exiting anyway", index, name);
    spdlog::shutdown();
    std::_Exit(exit_code);
  }).detach();
  return exit_code;
}

}  // namespace taihu::compute
