#include "apps/actor_system.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "core/blas/kernel_selection.hpp"
#include "messages/type_ids.hpp"

namespace taihu::app {
namespace {

caf::timespan span(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

}  // namespace

ActorSystemSettings actor_system_settings(const config::Document& doc) {
  const config::Section& sync = doc.section("sync");
  ActorSystemSettings s;
  s.scheduler_threads = sync.get_or<int>("scheduler_threads", 0);
  s.work_stealing = sync.get_or<std::string>("scheduler", "sharing") == "stealing";
  const compute::ClusterSettings cluster = compute::ClusterSettings::read(doc);
  if (cluster.nodes > 0) s.control_plane = ActorSystemSettings::ControlPlane{cluster.heartbeat, cluster.dead_after};
  return s;
}

void configure_actor_system(caf::actor_system_config& cfg, const ActorSystemSettings& settings) {
  cfg.add_message_types<caf::id_block::taihu>();
  cfg.set("scheduler.max-threads",
          settings.scheduler_threads > 0 ? settings.scheduler_threads : std::clamp(blas::available_cores(), 1, 2));
  cfg.set("scheduler.policy", settings.work_stealing ? caf::atom("stealing") : caf::atom("sharing"));
  cfg.set("work-stealing.aggressive-poll-attempts", 10);
  if (const auto& plane = settings.control_plane) {
    cfg.load<caf::io::middleman>();
    cfg.set("middleman.heartbeat-interval", span(plane->heartbeat));
    cfg.set("middleman.connection-timeout", span(plane->dead_after));
    cfg.set("middleman.app-identifiers", std::vector<std::string>{"taihu"});
  }
}

int run_node_process(const compute::NodeOptions& options) {
  ActorSystemSettings settings;
  settings.control_plane = ActorSystemSettings::ControlPlane{options.heartbeat, options.dead_after};
  caf::actor_system_config cfg;
  configure_actor_system(cfg, settings);
  caf::actor_system system{cfg};
  return compute::run_node(system, options);
}

}  // namespace taihu::app
