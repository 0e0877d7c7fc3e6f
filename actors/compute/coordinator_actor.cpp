#include "actors/compute/coordinator.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "actors/compute/compute_slots.hpp"
#include "actors/compute/coordinator_state.hpp"
#include "actors/exception_reason.hpp"
#include "collectives/algorithms.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/atomic_file.hpp"
#include "core/common/check.hpp"
#include "core/kernels/compute_threads.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/dashboard_page.hpp"
#include "core/train/loss_check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

namespace {

// --- ending --------------------------------------------------------------

// Stops whatever the run started: every node hears how the run ended and
// stops its replicas (node_agent.hpp), the control port closes.
void stop_members(Coordinator* self, const msg::RunEnded& end) {
  auto& s = self->state;
  for (const auto& [address, who] : s.members.who) self->demonitor(address);
  if (s.cluster) s.cluster->stop(self, end);
}

// The dashboard with the run's data inside, beside the metrics file: a
// record of the run to open later. A failure to write it costs a warning.
void write_dashboard(const CoordinatorState& s) {
  if (s.options.evaluate_only || s.plan->metrics_path.empty()) return;
  const auto path = s.plan->metrics_path.parent_path() / "dashboard.html";
  try {
    write_file_atomically(path, dashboard_page(s.status->json(), s.series->json()));
  } catch (const std::exception& e) {
    spdlog::warn("dashboard: {}", e.what());
  }
}

}  // namespace

void deliver(Coordinator* self, Outcome outcome) {
  auto& s = self->state;
  if (s.over) return;
  s.over = true;
  write_dashboard(s);
  if (s.iteration) s.iteration->cancel();
  stop_members(self, outcome.error ? msg::RunEnded{false, exception_text(outcome.error)} : msg::RunEnded{});
  s.progress.reset();
  s.outcome->set_value(std::move(outcome));
  self->quit();
}

namespace {

// --- the iterations -----------------------------------------------------

void start_epoch(Coordinator* self) {
  auto& s = self->state;
  const RunPlan& plan = *s.plan;
  s.epoch = EpochRecord{};
  s.epoch.epoch = s.cursor.epoch() + 1;
  s.progress.emplace(fmt::format("epoch {}/{}", s.cursor.epoch() + 1, plan.settings.epochs), plan.per_epoch,
                     plan.global_batch(), s.options.progress, plan.settings.display, plan.sample_unit);
  s.epoch_start = Clock::now();
}

double epoch_seconds(const CoordinatorState& s) {
  return std::chrono::duration<double>(Clock::now() - s.epoch_start).count();
}

TrainPosition position(const CoordinatorState& s, double extra_seconds = 0.0) {
  return TrainPosition{s.cursor.epoch(), s.cursor.batch(), s.elapsed + extra_seconds, s.loss_sum};
}

void end_epoch(Coordinator* self);
void finish(Coordinator* self);

void iteration_done(Coordinator* self, std::vector<msg::IterationDone>& done) {
  auto& s = self->state;
  const RunPlan& plan = *s.plan;
  const std::uint64_t iteration = s.cursor.iteration();
  double loss = 0.0;
  double compute = 0.0, update = 0.0, exposed = 0.0, sent = 0.0;
  std::vector<msg::BucketTiming> buckets;  // the slowest worker's, figure by figure
  for (const auto& d : done) {
    compute = std::max(compute, d.stats.forward_seconds + d.stats.backward_seconds);
    update = std::max(update, d.stats.update_seconds);
    const auto& own = d.stats.buckets;
    if (buckets.size() < own.size()) buckets.resize(own.size());
    for (std::size_t b = 0; b < own.size(); ++b) buckets[b] = slowest(buckets[b], own[b]);
    loss += d.loss;
    s.epoch.samples += d.stats.samples;
    s.epoch.vertices += d.stats.vertices;
    s.record.exposed_comm_seconds += d.stats.exposed_comm_seconds / plan.ranks;
    s.record.data_wait_seconds += d.stats.data_wait_seconds / plan.ranks;
    s.record.await_seconds += d.stats.await_seconds / plan.ranks;
    s.record.reduced_during_step += static_cast<double>(d.stats.reduced_during_step) / plan.ranks;
    s.record.comm_seconds += d.stats.comm_seconds;
    s.record.hidden_comm_seconds += d.stats.hidden_comm_seconds;
    s.record.bytes_sent += static_cast<double>(d.stats.bytes_sent);
    exposed += d.stats.exposed_comm_seconds / plan.ranks;
    sent += static_cast<double>(d.stats.bytes_sent);
  }
  loss /= plan.ranks;
  const double wall = std::chrono::duration<double>(Clock::now() - s.iteration_start).count();
  s.record.iteration_walls.push_back(wall);
  s.record.computes.push_back(compute);
  s.record.updates.push_back(update);
  if (s.record.buckets.size() < buckets.size()) s.record.buckets.resize(buckets.size());
  for (std::size_t b = 0; b < buckets.size(); ++b) s.record.buckets[b].push_back(buckets[b]);
  ++s.record.iterations;
  if (const std::string why =
          loss_failure(loss, iteration, s.cursor.epoch(), s.cursor.batch(), s.checkpoints,
                       s.loss_watch.open_interval_sane(), plan.checkpoint_path);
      !why.empty()) {
    if (s.progress) s.progress->finish("stopped");
    abort_with(self, std::make_exception_ptr(NumericError(why)));
    return;
  }
  s.loss_sum += loss;
  s.loss_watch.add(loss);
  s.cursor.advance();
  const int64_t batch = s.cursor.batch();
  s.progress->update(batch - s.cursor.first_batch(),
                     fmt::format("loss {:.4f}", s.loss_sum / static_cast<double>(batch)));
  s.status->set_progress(iteration + 1, s.cursor.epoch() + 1, loss, s.progress->items_per_second());
  const bool display_due =
      plan.settings.display > 0 && (iteration + 1) % static_cast<std::uint64_t>(plan.settings.display) == 0;
  // Data-parallel runs: how much of the iteration waited for the allreduce,
  // and the bytes sent against a dense ring's (RedSync's density, 1 dense).
  MetricRecord sync;
  if (plan.ranks > 1) sync.emplace_back("allreduce_share", wall > 0 ? std::min(1.0, exposed / wall) : 0.0);
  if (plan.ranks > 1 && plan.dense_bytes > 0) sync.emplace_back("density", sent / static_cast<double>(plan.dense_bytes));
  s.log->iteration(s.cursor.epoch() + 1, static_cast<int64_t>(iteration + 1), loss, done.front().stats.learning_rate,
                   s.progress->items_per_second(), display_due, sync);
  if (!s.cursor.batch_left()) return end_epoch(self);
  if (s.cursor.checkpoint_due()) return save_checkpoint(self, position(s, epoch_seconds(s)), [self] { next(self); });
  next(self);
}

// The iteration in flight took longer than step_timeout: find the worker.
// Unfinished workers whose steps await (a compute slot, an actor) or that
// wait for reductions answer a probe at once, saying which; the one still
// computing (or hung) does not.
void iteration_late(Coordinator* self, std::shared_ptr<FanIn<msg::IterationDone>> iteration, std::uint64_t it) {
  auto& s = self->state;
  const double timeout = s.plan->step_timeout;
  std::vector<int> unfinished;
  std::vector<worker_actor> probed;
  for (int r = 0; r < s.plan->ranks; ++r)
    if (!iteration->answered(static_cast<std::size_t>(r))) {
      unfinished.push_back(r);
      probed.push_back(s.members.workers[static_cast<std::size_t>(r)]);
    }
  auto late = std::make_shared<int>(-1);
  // the first whose step awaits, and what
  auto awaiting = std::make_shared<std::pair<int, std::string>>(-1, "");
  const int generation = s.members.generation;
  settle<msg::WorkerProbe>(
      self, probed, std::chrono::milliseconds(500), msg::stats_atom_v,
      [late, unfinished](std::size_t k, caf::error&) {
        if (*late < 0) *late = unfinished[k];
      },
      [self, unfinished, late, awaiting, it, timeout, generation] {
        if (!detail::current(self, generation)) return;
        if (*late >= 0)
          return fail(self, *late,
                      fmt::format("worker {} stalled: iteration {} not done within step_timeout = {} s", *late, it,
                                  timeout));
        if (awaiting->first >= 0)
          return fail(self, awaiting->first,
                      fmt::format("worker {} stalled: iteration {} not done within step_timeout = {} s: its step "
                                  "waits for {}",
                                  awaiting->first, it, timeout, awaiting->second));
        fail(self, unfinished.front(),
             fmt::format("iteration {} not done within step_timeout = {} s: worker {} (and maybe others) still waits "
                         "for its reductions",
                         it, timeout, unfinished.front()));
      },
      [unfinished, awaiting](std::size_t k, msg::WorkerProbe& probe) {
        if (awaiting->first >= 0 || !(probe.awaits_slot || probe.awaits_actor)) return;
        *awaiting = {unfinished[k], probe.awaits_slot ? "a compute slot"
                                                      : "an actor (its batch, a device's core groups, the graph "
                                                        "runtime)"};
      });
}

void iterate(Coordinator* self) {
  auto& s = self->state;
  const std::uint64_t it = s.cursor.iteration();
  const int generation = s.members.generation;
  // The failure continuation needs the fan-in it belongs to; a weak handle,
  // since the fan-in owns that continuation (a strong one leaked every
  // iteration's fan-in, found by LeakSanitizer).
  auto fan = std::make_shared<std::weak_ptr<FanIn<msg::IterationDone>>>();
  s.iteration_start = Clock::now();
  s.iteration = fan_in<msg::IterationDone>(
      self, s.members.workers, detail::step_timeout(self), msg::Iterate{it},
      [self, generation](std::vector<msg::IterationDone>& done) {
        if (detail::current(self, generation)) iteration_done(self, done);
      },
      [self, generation, fan, it](std::size_t rank, caf::error& e) {
        if (!detail::current(self, generation)) return;
        if (e == caf::sec::request_timeout) return iteration_late(self, fan->lock(), it);
        detail::no_answer(self, static_cast<int>(rank), "the iteration", e);
      });
  *fan = s.iteration;
}

void end_epoch(Coordinator* self) {
  auto& s = self->state;
  const double seconds = epoch_seconds(s);
  s.epoch.seconds = seconds;
  s.epoch.train_loss = s.loss_sum / static_cast<double>(std::max<int64_t>(s.cursor.batch(), 1));
  s.record.seconds += seconds;
  s.record.samples += s.epoch.samples;
  s.record.vertices += s.epoch.vertices;
  s.elapsed += seconds;
  s.progress->finish(fmt::format("train loss {:.4f}", s.epoch.train_loss));
  s.progress.reset();
  ask_worker<ReplicaEvaluation>(
      self, 0, msg::eval_atom_v,
      [self](ReplicaEvaluation& e) {
        auto& s = self->state;
        s.epoch.evaluation = e;
        s.log->epoch(s.epoch, static_cast<int64_t>(s.cursor.iteration()));
        s.record.epochs.push_back(s.epoch);
        if (!s.cursor.epoch_complete()) {  // stopped by `iterations`: the checkpoint resumes mid-epoch
          s.loss_sum = s.epoch.train_loss * static_cast<double>(s.cursor.batch());
          save_checkpoint(self, TrainPosition{s.cursor.epoch(), s.cursor.batch(), s.elapsed, s.loss_sum},
                          [self] { finish(self); });
          return;
        }
        s.cursor.next_epoch();
        s.loss_sum = 0.0;
        save_checkpoint(self, position(s), [self] {
          auto& s = self->state;
          // Elastic: nodes that joined take part from this epoch boundary.
          if (s.cluster && s.plan->cluster.elastic && !s.cursor.finished() && s.cluster->waiting() > 0)
            return regroup(self, "nodes joined", -1);
          next(self);
        });
      },
      "the evaluation request");
}

// Every rank's parameters and figures, then the outcome.
void finish(Coordinator* self) {
  auto& s = self->state;
  if (!s.record.stopped) s.status->set_state("finished");
  ask_workers<msg::Parameters>(
      self, caf::get_atom_v,
      [self](std::vector<msg::Parameters>& parameters) {
        auto values = std::make_shared<std::vector<std::vector<float>>>();
        for (auto& p : parameters) values->push_back(p.values.to_vector());
        ask_workers<ReplicaFigures>(
            self, msg::figures_atom_v,
            [self, values](std::vector<ReplicaFigures>& figures) {
              Outcome o;
              o.record = self->state.record;
              o.final_parameters = std::move(*values);
              o.figures = std::move(figures);
              deliver(self, std::move(o));
            },
            "the figures request");
      },
      "the parameter request");
}

// Stopped (TrainingOptions::stop) between iterations: the figures of what
// was trained, the partial epoch's too, and a checkpoint where the run stands
// unless the last one is there already, or nothing was trained (a previous
// run's checkpoint is not replaced by untrained weights).
void stop_here(Coordinator* self) {
  auto& s = self->state;
  s.record.stopped = true;
  s.status->set_state("stopped");
  double partial_seconds = 0.0;
  if (s.progress) {
    partial_seconds = epoch_seconds(s);
    s.record.seconds += partial_seconds;
    s.record.samples += s.epoch.samples;
    s.record.vertices += s.epoch.vertices;
    s.progress->finish("stopped");
    s.progress.reset();
  }
  const std::uint64_t at = s.cursor.iteration();
  s.record.stopped_at = at;
  const bool saved = s.plan->checkpoint_path.empty() || s.record.iterations == 0 ||
                     (s.checkpoints.latest.path == s.plan->checkpoint_path && s.checkpoints.latest.iteration == at);
  spdlog::warn("stopped at iteration {} (epoch {}, batch {}){}", at, s.cursor.epoch() + 1, s.cursor.batch(),
               s.plan->checkpoint_path.empty()
                   ? ": no checkpoint is configured ([output] checkpoint)"
                   : fmt::format("; resume from '{}' to continue", s.plan->checkpoint_path.string()));
  if (saved) return finish(self);
  save_checkpoint(self, position(s, partial_seconds), [self] { finish(self); });
}

// TrainingOptions::evaluate_only: rank 0's evaluation of the restored weights.
void evaluate_only(Coordinator* self) {
  self->state.status->set_state("evaluating");
  ask_worker<ReplicaEvaluation>(
      self, 0, msg::eval_atom_v,
      [self](ReplicaEvaluation& e) {
        self->state.record.evaluation = e;
        finish(self);
      },
      "the evaluation request");
}

// --- failures --------------------------------------------------------------

void on_down(Coordinator* self, caf::down_msg& dm) {
  auto& s = self->state;
  if (s.over) return;
  const Participant* p = s.members.find(dm.source);
  if (p == nullptr) {
    // A node that joined but takes part in no generation yet.
    if (s.cluster)
      for (int i : s.cluster->live())
        if (s.cluster->nodes()[static_cast<std::size_t>(i)].agent.address() == dm.source) {
          spdlog::warn("coordinator: {} left before taking part: {}", s.cluster->node_name(i),
                       reason_text(self->system(), dm.reason));
          s.cluster->lose(self, i);
        }
    return;
  }
  if (p->role == "node") {
    fail(self, -1,
         fmt::format("{} was lost at iteration {}: its connection closed or it was silent for more than dead_after = "
                     "{} s (killed, hung or unreachable)",
                     p->where, s.cursor.iteration(), s.plan->cluster.dead_after),
         p->node);
    return;
  }
  fail(self, p->rank,
       fmt::format("worker {}{} failed at iteration {}{}: {}", p->rank, p->where, s.cursor.iteration(),
                   p->role == "worker" ? "" : " (its " + p->role + ")", reason_text(self->system(), dm.reason)),
       p->node);
}

// --- starting --------------------------------------------------------------

void open_status(Coordinator* self) {
  auto& s = self->state;
  const RunPlan& plan = *s.plan;
  std::vector<RunStatus::Bucket> buckets;
  for (std::size_t b = 0; b < plan.bucket_elements.size(); ++b) {
    const auto schedule = collectives::make_allreduce(plan.bucket_algorithms[b], *plan.topology, plan.bucket_elements[b]);
    std::uint64_t elements = 0;
    for (int r = 0; r < plan.ranks; ++r) elements += schedule.elements_sent(r);
    buckets.push_back({plan.bucket_elements[b], std::string(collectives::name(plan.bucket_algorithms[b])),
                       elements * sizeof(float)});
  }
  s.status->set_run(plan.model_name, plan.ranks, plan.cluster.nodes, std::move(buckets));
  s.status->set_state(plan.clustered() ? "waiting for nodes" : "training");
  if (!plan.status.enabled) return;
  auto status = s.status;
  auto series = s.series;
  const transport::StatusPage dashboard{"text/html; charset=utf-8", [] { return dashboard_page(); }};
  s.status_server = std::make_unique<transport::StatusServer>(
      plan.status.listen, plan.status.port,
      std::map<std::string, transport::StatusPage>{
          {"/metrics", {"text/plain; version=0.0.4", [status] { return status->prometheus(); }}},
          {"/status", {"application/json", [status] { return status->json(); }}},
          {"/series", {"application/json", [series] { return series->json(); }}},
          {"/", dashboard},
          {"/dashboard", dashboard}});
  spdlog::info("status endpoint: http://{}:{}/ (dashboard), /metrics and /status", plan.status.listen,
               s.status_server->port());
  if (!plan.status.port_file.empty()) {
    std::ofstream(plan.status.port_file + ".tmp") << s.status_server->port() << "\n";
    std::filesystem::rename(plan.status.port_file + ".tmp", plan.status.port_file);
  }
}

}  // namespace

// The behaviour (coordinator_state.hpp).
coordinator_actor::behavior_type coordinator(Coordinator* self, std::shared_ptr<RunPlan> plan,
                                             TrainingOptions options, std::shared_ptr<std::promise<Outcome>> outcome,
                                             TrainPosition start,
                                             std::optional<CoordinatorState::PendingRestore> restore) {
  auto& s = self->state;
  s.plan = std::move(plan);
  s.options = std::move(options);
  s.outcome = std::move(outcome);
  s.restore = std::move(restore);
  s.status = std::make_shared<RunStatus>();
  s.series = std::make_shared<RunSeries>();
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exception_handler([self](std::exception_ptr& e) -> caf::error {
    abort_with(self, e);
    return caf::exit_reason::user_shutdown;
  });
  const RunPlan& p = *s.plan;
  s.log.emplace(s.options.evaluate_only ? std::filesystem::path() : p.metrics_path, p.settings.epochs,
                RunLog::Model{p.graphs.has_value(), p.graphs && p.graphs->language_model, p.graphs && p.graphs->has_dev,
                              p.sample_unit},
                [series = s.series, observer = s.options.observer](const MetricRecord& record) {
                  series->add(record);
                  if (observer) observer(record);
                });
  s.cursor = EpochCursor(p.settings.epochs, p.per_epoch, p.max_iterations, p.checkpoint_every, start);
  s.elapsed = start.elapsed_seconds;
  s.loss_sum = start.epoch_loss_sum;
  s.checkpoint_global_batch = p.global_batch();
  s.checkpoint_per_epoch = p.per_epoch;
  // Resumed from the file this run saves to: the loss after it will prove it sane (or not).
  std::error_code ec;
  if (!s.options.resume.empty() && !p.checkpoint_path.empty() &&
      std::filesystem::equivalent(s.options.resume, p.checkpoint_path, ec))
    s.checkpoints.latest = {p.checkpoint_path, static_cast<std::uint64_t>(start.epoch * p.per_epoch + start.batch), 0.0};
  if (p.ranks > 1 && !p.clustered())
    spdlog::info("{} workers (detached threads), {} computing at once x {} BLAS threads", p.ranks,
                 std::min(compute_slot_count(p.compute_slots), p.ranks), compute_threads());
  open_status(self);
  if (p.clustered())
    gather_nodes(self);
  else
    host_in_process(self);
  return {
      [self](msg::NodeJoined& j) { node_joined(self, j); },
      [self](msg::join_deadline_atom) { join_deadline_passed(self); },
      [self](msg::tick_atom) { watch_stop_while_gathering(self); },
      [self](msg::NodeFailure& f) { on_node_failure(self, f); },
  };
}

// --- the loop's steps (coordinator_state.hpp) --------------------------------

void next(Coordinator* self) {
  auto& s = self->state;
  if (s.over) return;
  if (s.options.evaluate_only) return evaluate_only(self);
  if (s.options.stop && s.options.stop->load(std::memory_order_relaxed)) return stop_here(self);
  if (s.cursor.finished()) return finish(self);
  if (!s.progress) start_epoch(self);
  iterate(self);
}

void begin_generation(Coordinator* self, Members members) {
  auto& s = self->state;
  s.members = std::move(members);
  // `who` keys its actors by address, a weak reference; CAF monitors through
  // a strong one, so each is upgraded (an actor gone already is skipped).
  for (const auto& [address, who] : s.members.who)
    if (auto handle = caf::actor_cast<caf::actor>(address)) self->monitor(handle);
  s.status->set_members(s.members.status, s.members.rank_node, s.plan->ranks);
  s.status->set_state("training");
  if (s.members.generation == 1) s.checkpoint_rank_node = s.members.rank_node;
  // Every replica starts from rank 0's weights (restored first when resumed).
  restore_generation(self, [self] {
    ask_worker<msg::Parameters>(
        self, 0, caf::get_atom_v,
        [self](msg::Parameters& p0) {
          auto& s = self->state;
          for (std::size_t r = 1; r < s.members.workers.size(); ++r) self->send(s.members.workers[r], p0);
          next(self);
        },
        "the parameter request");
  });
}

void abort_with(Coordinator* self, std::exception_ptr error) {
  auto& s = self->state;
  if (s.over) return;
  s.status->set_state("failed");
  Outcome o;
  o.error = std::move(error);
  deliver(self, std::move(o));
}

void fail(Coordinator* self, int rank, const std::string& why, int lost_node) {
  auto& s = self->state;
  if (s.over) return;
  if (s.progress) s.progress->finish("stopped");
  s.progress.reset();
  if (s.cluster && s.plan->cluster.elastic) {
    spdlog::warn("elastic: {}", why);
    return regroup(self, lost_node >= 0 ? "lost " + s.cluster->node_name(lost_node) : why, lost_node);
  }
  std::string message = why;
  if (!s.plan->checkpoint_path.empty() && std::filesystem::exists(s.plan->checkpoint_path))
    message += fmt::format(". The last checkpoint '{}' is intact.", s.plan->checkpoint_path.string());
  // Not logged here: the WorkerFailure carries it to the front end, which
  // logs it (taihu-train's run_app) or raises it (Python), once.
  s.status->set_state("failed: " + message);
  abort_with(self, std::make_exception_ptr(WorkerFailure(rank, message)));
}

}  // namespace taihu::compute
