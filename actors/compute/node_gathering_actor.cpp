// The coordinator's nodes (coordinator_state.hpp): it waits for them to
// join, up to join_timeout or a stop request, forms the first generation
// once all are in, and turns a node's report of a failure into the run's.
// An in-process run has one node, its own, which joins at once.

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "actors/compute/coordinator_state.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

// How often the stop request is looked at while no iteration runs to look at it.
constexpr auto stop_poll = std::chrono::milliseconds(100);

// A stop request (SIGTERM from Slurm's scancel, Ctrl-C) before the first
// generation trains: nothing was trained, so nothing is saved; the nodes that
// joined hear that the run is over, and the run ends as stopped at once
// rather than at join_timeout (next() looks at the request from the first
// iteration on).
void watch_stop_while_gathering(Coordinator* self) {
  auto& s = self->state;
  if (s.over || s.members.generation > 0) return;
  if (!s.options.stop->load(std::memory_order_relaxed)) {
    self->delayed_send(self, stop_poll, msg::tick_atom_v);
    return;
  }
  s.record.stopped = true;
  s.record.stopped_at = s.cursor.iteration();
  s.status->set_state("stopped");
  spdlog::warn("stopped while waiting for the nodes ({} of {} joined); nothing was trained", s.cluster->live().size(),
               s.plan->cluster.nodes);
  Outcome o;
  o.record = s.record;
  deliver(self, std::move(o));
}

// Nodes: wait for all of them (up to join_timeout), then form generation 1.
void gather_nodes(Coordinator* self) {
  auto& s = self->state;
  s.cluster.emplace(s.plan->cluster);
  s.cluster->open(self);
  self->delayed_send(self, std::chrono::milliseconds(static_cast<int64_t>(1000 * s.plan->cluster.join_timeout)),
                     msg::join_deadline_atom_v);
  if (s.options.stop) watch_stop_while_gathering(self);
}

void host_in_process(Coordinator* self) {
  auto& s = self->state;
  s.cluster.emplace(ClusterSettings{});
  s.cluster->open_in_process(self, s.plan, s.options.fault);
}

namespace {

void form_cluster(Coordinator* self) {
  auto& s = self->state;
  s.cluster->form(
      self, *s.plan, [self](Members m) { begin_generation(self, std::move(m)); },
      [self](const std::string& why) { abort_with(self, std::make_exception_ptr(ClusterError(why))); });
}

}  // namespace

void node_joined(Coordinator* self, const msg::NodeJoined& j) {
  auto& s = self->state;
  s.cluster->joined(self, j);
  // The first formation waits for all K nodes; later ones happen at epoch
  // boundaries (end_epoch) or after a loss (regroup), also when a node joins
  // while one is under way.
  if (s.cluster->generation() == 0 && static_cast<int>(s.cluster->live().size()) == s.cluster->expected())
    form_cluster(self);
}

void join_deadline_passed(Coordinator* self) {
  auto& s = self->state;
  if (s.cluster->generation() > 0 || s.over) return;
  const auto joined = s.cluster->live().size();
  const std::string names = s.cluster->joined_names();
  abort_with(self, std::make_exception_ptr(ClusterError(
                       fmt::format("only {} of {} nodes joined within join_timeout = {} s{}; start the others with `{}`",
                                   joined, s.plan->cluster.nodes, s.plan->cluster.join_timeout,
                                   joined ? " (joined: " + names + ")" : "", s.cluster->join_hint()))));
}

void on_node_failure(Coordinator* self, const msg::NodeFailure& f) {
  auto& s = self->state;
  if (s.over || f.generation != s.members.generation) return;  // an earlier generation's
  fail(self, f.rank, fmt::format("{} failed at iteration {}: {}", s.cluster->node_name(f.node), s.cursor.iteration(),
                                 f.reason),
       f.node);
}

}  // namespace taihu::compute
