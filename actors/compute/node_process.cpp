// The node processes' side (cluster.hpp): taihu-node reaching its
// coordinator, and the nodes that live beside one. Each hosts its ranks
// through a node agent (node_agent.hpp).

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <thread>

#include "actors/compute/cluster.hpp"
#include "actors/compute/control_plane.hpp"
#include "actors/compute/node_agent.hpp"
#include "actors/compute/run_plan.hpp"
#include "transport/addresses.hpp"

namespace taihu::compute {

int run_node(caf::actor_system& system, const NodeOptions& o) {
  const std::string name = o.name.empty() ? fmt::format("node-{}", ::getpid()) : o.name;
  const std::string where = fmt::format("{}:{}", o.coordinator_host, o.coordinator_port);

  // Reach the coordinator (it may start after us): the gatekeeper first,
  // where both sides prove the secret, then the gate actor behind it.
  msg::gate_actor gate;
  NodeOptions node_options = o;  // its certificates kept only where the cluster uses them
  transport::GateClientOptions gate_options;
  gate_options.host = o.coordinator_host;
  gate_options.port = o.coordinator_port;
  gate_options.secret = o.secret;
  gate_options.version = static_cast<std::uint32_t>(o.protocol_version);
  gate_options.name = name;
  gate_options.certificates = o.certificates;
  gate_options.tls = o.tls;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(o.join_timeout * 1000.0));
  for (;;) {
    try {
      auto joined = join_control_port(system, gate_options, transport::control_plane_thread());
      gate = joined.gate;
      if (!joined.certificates) node_options.certificates = {};
      if (node_options.data_listen.empty()) node_options.data_listen = joined.local_address;
      if (node_options.data_advertise.empty() && transport::is_wildcard_address(node_options.data_listen))
        node_options.data_advertise = joined.local_address;
      break;
    } catch (const transport::GateRefused& e) {
      spdlog::error("node '{}': the coordinator at {} did not admit this node: {}", name, where, e.what());
      return NodeExit::not_admitted;
    } catch (const transport::NetError& e) {
      if (Clock::now() > deadline) {
        spdlog::error("node '{}': cannot reach the coordinator at {} within {} s: {}", name, where, o.join_timeout,
                      e.what());
        return NodeExit::coordinator_unreachable;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  auto exit_code = std::make_shared<std::promise<int>>();
  std::future<int> ended = exit_code->get_future();
  spawn_node_agent(system, node_options, name, gate, exit_code, nullptr);
  const int code = ended.get();
  // Every actor was told to exit and has terminated, but the actor system's
  // destructor also waits until each detached actor is released, and a
  // reference that is never dropped would keep this process alive forever
  // (seen after compressed runs over shaped links). The node's work is done:
  // bound that wait.
  std::thread([code, name] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    spdlog::warn("node '{}': an actor was not released within 10 s of shutdown; exiting anyway", name);
    spdlog::shutdown();
    std::_Exit(code);
  }).detach();
  return code;
}

void spawn_own_node(caf::actor_system& system, const NodeOptions& options, msg::gate_actor gate) {
  // Nobody waits for its exit code: the coordinator of this process reports the run.
  spawn_node_agent(system, options, options.name.empty() ? fmt::format("rank0-{}", ::getpid()) : options.name,
                   std::move(gate), std::make_shared<std::promise<int>>(), nullptr);
}

void spawn_in_process_node(caf::actor_system& system, std::shared_ptr<const RunPlan> plan,
                           std::shared_ptr<WorkerModel> rank0, WorkerFault fault, msg::gate_actor gate) {
  NodeOptions options;  // no control port: beside its coordinator
  options.name = "in-process";
  spawn_node_agent(system, options, options.name, std::move(gate), std::make_shared<std::promise<int>>(),
                   std::make_shared<PlannedReplicas>(PlannedReplicas{std::move(plan), std::move(rank0), fault}));
}

}  // namespace taihu::compute
