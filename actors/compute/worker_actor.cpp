#include "actors/compute/worker_actor.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "actors/compute/fan_in.hpp"
#include "actors/compute/mailbox_resumer.hpp"
#include "actors/exception_reason.hpp"
#include "collectives/buckets.hpp"
#include "core/common/check.hpp"
#include "core/common/thread_cpu_time.hpp"
#include "core/layers/convolution_choices.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "core/train/loss_check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

WorkerModel::WorkerModel() = default;
WorkerModel::~WorkerModel() = default;

std::shared_ptr<WorkerModel> build_worker_model(const config::Document& doc, const TrainSettings& settings,
                                                const ReplicaData& data, int rank, int ranks,
                                                std::size_t bucket_bytes, const ReplicaServices& services,
                                                WorkerFault fault) {
  auto m = std::make_shared<WorkerModel>();
  m->rank = rank;
  m->ranks = ranks;
  m->fault = fault;
  m->replica = build_replica(doc, settings, data, rank, ranks, services);
  m->buckets = std::make_unique<collectives::Buckets>(m->replica->gradient_stages(), bucket_bytes);
  return m;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct WorkerState {
  static inline const char* name = "taihu.worker";

  std::shared_ptr<WorkerModel> model;
  std::vector<msg::TensorPayload> buffers;  // per bucket, reused between iterations
  std::vector<Clock::time_point> sent_at;   // per bucket, this iteration
  caf::typed_response_promise<msg::IterationDone> done;  // the coordinator's Iterate
  // The step's forward and backward, suspended while it awaits an actor
  // (a batch, a device's layer pass, the graph runtime); it goes on in the
  // resume_atom handler, and the worker takes reduced buckets meanwhile.
  std::optional<async::Task<ReplicaStep>> compute;
  std::shared_ptr<MailboxResumer> resumer;
  bool holds_slot = false;
  bool in_step = false;
  std::uint64_t iteration = 0;
  std::size_t pending = 0;  // buckets not yet reduced
  float loss = 0.0f;
  msg::IterationStats stats;
  Clock::time_point backward_end;
  Clock::time_point suspended_at;  // the step's last suspension
};

using Self = worker_actor::stateful_pointer<WorkerState>;

void send_bucket(Self self, std::uint32_t b, double ready_seconds) {
  auto& s = self->state;
  auto& m = *s.model;
  const std::size_t n = (*m.buckets)[b].elements;
  msg::TensorPayload& buffer = s.buffers[b];
  if (buffer.size() != n) buffer = msg::TensorPayload::allocate(n, m.allocator.get());
  m.buckets->pack(b, buffer.mutable_data());  // copies first if a view still shares it
  if (m.fault.kind == WorkerFault::Kind::wrong_gradient_size && m.fault.rank == m.rank &&
      m.fault.iteration == s.iteration) {
    buffer = msg::TensorPayload::allocate(n + 1);
  }
  s.sent_at[b] = Clock::now();
  s.stats.buckets[b].ready = ready_seconds;
  // The shard answers the owner named in its ShardInit (this worker), not the sender.
  caf::anon_send(m.shards[b], msg::GradientReady{b, s.iteration, std::move(buffer)});
  s.buffers[b] = {};
}

// The compute slot, held from before forward until backward ends (or fails).
void release_slot(Self self) {
  auto& s = self->state;
  if (!s.holds_slot) return;
  s.holds_slot = false;
  s.model->compute_slots->release();
}

// Forward and backward are done: their figures, and the slot back.
void computed(Self self, const ReplicaStep& step) {
  auto& s = self->state;
  release_slot(self);
  s.compute.reset();
  s.backward_end = Clock::now();
  s.loss = step.loss;
  s.stats.samples = step.samples;
  s.stats.vertices = step.vertices;
  s.stats.forward_seconds = step.forward_seconds;
  s.stats.backward_seconds = step.backward_seconds;
  s.stats.data_wait_seconds = step.data_wait_seconds;
}

// Runs the step's task until it is done or awaits an actor; true: done.
// A failure ends the worker, its reason also the answer to the Iterate.
bool go_on(Self self, std::coroutine_handle<> h) {
  auto& s = self->state;
  try {
    if (h) {
      s.stats.await_seconds += seconds_between(s.suspended_at, Clock::now());
      h.resume();
    }
    if (!s.compute->done()) {
      s.suspended_at = Clock::now();
      return false;
    }
    computed(self, s.compute->result());
    return true;
  } catch (...) {
    release_slot(self);
    s.compute.reset();
    auto failure = std::current_exception();
    if (s.done.pending()) s.done.deliver(exception_reason(failure));
    throw;
  }
}

// The step's task: a compute slot (awaited), then forward and backward,
// sending each bucket as soon as its gradients are final.
async::Task<ReplicaStep> compute_step(Self self, std::uint64_t iteration) {
  auto& s = self->state;
  auto& m = *s.model;
  if (m.compute_slots) {
    if (m.fault.kind == WorkerFault::Kind::lose_slot && m.fault.rank == m.rank && m.fault.iteration == iteration)
      (void)co_await m.compute_slots->acquire();  // and never released
    // Slots closed while waiting (the run stopped): the step is given up by
    // an exception, which ends the worker, and no slot is held.
    if (!co_await m.compute_slots->acquire())
      raise("worker {}: the run stopped while step {} waited for a compute slot", m.rank, iteration);
    s.holds_slot = true;
  }
  Replica::StageDone stage_done = [self](std::size_t stage, double seconds) {
    auto& m = *self->state.model;
    if (m.shards.empty()) return;  // one replica: its gradient is the gradient
    for (std::uint32_t b : m.buckets->ready_after(stage)) send_bucket(self, b, seconds);
  };
  ReplicaStep step = co_await m.replica->compute(iteration, std::move(stage_done));
  co_return step;
}

void run_step(Self self, std::uint64_t iteration) {
  auto& s = self->state;
  auto& m = *s.model;
  require(!s.in_step, "worker {}: step {} arrived while step {} runs", m.rank, iteration, s.iteration);
  s.in_step = true;
  s.iteration = iteration;
  s.pending = m.shards.empty() ? 0 : m.buckets->size();
  s.stats = {};
  if (m.fault.rank == m.rank && m.fault.iteration == iteration) {
    if (m.fault.kind == WorkerFault::Kind::throw_in_step)
      raise("worker {}: injected failure in step {}", m.rank, iteration);
    if (m.fault.kind == WorkerFault::Kind::stall)
      std::this_thread::sleep_for(std::chrono::duration<double>(m.fault.stall_seconds));
    if (m.fault.kind == WorkerFault::Kind::shard_fails && !m.shards.empty())
      self->send_exit(m.shards.front(), caf::make_error(caf::sec::runtime_error, "injected shard failure"));
  }
  s.stats.buckets.assign(m.shards.empty() ? 0 : m.buckets->size(), msg::BucketTiming{});
  s.compute.emplace(compute_step(self, iteration));
  s.compute->start(s.resumer);
  go_on(self, {});
}

msg::IterationDone finish_step(Self self) {
  auto& s = self->state;
  auto& m = *s.model;
  const auto reduced = Clock::now();
  s.stats.exposed_comm_seconds = seconds_between(s.backward_end, reduced);
  s.stats.learning_rate = m.replica->learning_rate();
  m.replica->update();
  s.stats.update_seconds = seconds_between(reduced, Clock::now());
  s.in_step = false;
  return msg::IterationDone{s.iteration, m.rank, s.loss, s.stats};
}

// Every parameter's values, net order. Rank 0's go to every replica, and
// with them its kernel choices, made now if they are to be timed.
msg::Parameters parameters_of(Self self) {
  auto& m = *self->state.model;
  m.replica->decide_kernels();
  std::vector<msg::KernelChoice> choices;
  for (auto& [key, dnnl] : ConvolutionChoices::process().choices()) choices.push_back({std::move(key), dnnl});
  const auto params = m.replica->params();
  std::size_t n = 0;
  for (const Param* p : params) n += static_cast<std::size_t>(p->blob->count());
  auto values = msg::TensorPayload::allocate(n);
  float* out = values.mutable_data();
  for (const Param* p : params) {
    const auto c = static_cast<std::size_t>(p->blob->count());
    std::copy_n(p->blob->data().ptr(), c, out);
    out += c;
  }
  return msg::Parameters{static_cast<std::uint64_t>(m.replica->iteration()), m.rank, std::move(values),
                         std::move(choices)};
}

// Overwrites every parameter (the broadcast from rank 0) and adopts its kernel choices.
void take_parameters(Self self, msg::Parameters& p) {
  auto& m = *self->state.model;
  std::vector<std::pair<std::string, bool>> choices;
  for (auto& c : p.kernel_choices) choices.emplace_back(std::move(c.key), c.dnnl);
  ConvolutionChoices::process().adopt(choices);
  const auto params = m.replica->params();
  std::size_t n = 0;
  for (const Param* q : params) n += static_cast<std::size_t>(q->blob->count());
  require(p.values.size() == n, "worker {}: parameters from rank {} hold {} floats, the model has {}", m.rank,
          p.source, p.values.size(), n);
  std::size_t offset = 0;
  for (Param* q : params) {
    const auto c = static_cast<std::size_t>(q->blob->count());
    std::copy_n(p.values.data() + offset, c, q->blob->data().ptr());
    offset += c;
  }
}

// A shard's sum of one bucket: unpacked (scaled by 1/N) into the gradients;
// the last one finishes the step.
void take_reduced(Self self, msg::Reduced& r) {
  auto& s = self->state;
  auto& m = *s.model;
  require(s.in_step && r.iteration == s.iteration, "worker {}: reduced bucket {} of iteration {} out of step",
          m.rank, r.bucket, r.iteration);
  require(r.bucket < m.buckets->size() && r.buffer.size() == (*m.buckets)[r.bucket].elements,
          "worker {}: bucket {} came back with {} floats", m.rank, r.bucket, r.buffer.size());
  // Communication of this bucket: sent -> reduced; hidden while backward ran.
  const Clock::time_point finished{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(r.finished_ns))};
  const Clock::time_point sent = s.sent_at[r.bucket];
  // (all of it when the step still computes: backward has not ended)
  const Clock::time_point backward_end = s.compute ? finished : s.backward_end;
  msg::BucketTiming& timing = s.stats.buckets[r.bucket];
  if (finished > sent) {
    s.stats.comm_seconds += seconds_between(sent, finished);
    s.stats.hidden_comm_seconds += seconds_between(sent, std::min(finished, backward_end));
  }
  timing.done = timing.ready + std::max(0.0, seconds_between(sent, finished));
  s.stats.bytes_sent += r.bytes_sent;
  if (s.compute) ++s.stats.reduced_during_step;
  const std::int64_t cpu_before_unpack = thread_cpu_ns();
  m.buckets->unpack(r.bucket, r.buffer.data(), 1.0f / static_cast<float>(m.ranks));
  timing.unpack_cpu = 1e-9 * static_cast<double>(thread_cpu_ns() - cpu_before_unpack);
  timing.compress_cpu = 1e-9 * static_cast<double>(r.compress_cpu_ns);
  timing.decompress_cpu = 1e-9 * static_cast<double>(r.decompress_cpu_ns);
  s.buffers[r.bucket] = std::move(r.buffer);
  // (a step still computing takes the buckets its backward finished earlier; it ends with the task)
  if (--s.pending == 0 && !s.compute) s.done.deliver(finish_step(self));
}

// This rank's compressor state (every shard's residuals and momentum), next
// to the model checkpoint at `c.path`, taken between iterations.
caf::result<bool> save_compressor_state(Self self, const msg::SaveCompressorState& c) {
  const std::string path = c.path;
  const bool previous_sane = c.previous_sane;
  auto promise = self->make_response_promise<bool>();
  auto& m = *self->state.model;
  auto file = std::make_shared<CompressorCheckpoint>();
  file->iteration = c.iteration;
  file->rank = m.rank;
  file->ranks = m.ranks;
  file->buckets.resize(m.shards.size());
  fan_in<std::string>(
      self, m.shards, std::chrono::seconds(60), msg::compressor_atom_v,
      [=](std::vector<std::string>& states) mutable {
        file->buckets = std::move(states);
        const auto target = compressor_checkpoint_path(path, file->rank);
        if (previous_sane) keep_sane_compressor_state(target, sane_checkpoint_path(path), file->rank);
        save_compressor_checkpoint(*file, target);
        promise.deliver(true);
      },
      [=](std::size_t, caf::error& e) mutable { promise.deliver(e); });
  return promise;
}

// Loads what save_compressor_state wrote for the ranks `r.sources` (this rank
// when resuming; the old ranks of this node after an elastic regroup), merged
// with r.weight, into the shards. false: the compressors start from zero,
// with a warning saying why.
caf::result<bool> restore_compressor_state(Self self, const msg::CompressorRestore& r) {
  auto promise = self->make_response_promise<bool>();
  auto& m = *self->state.model;
  auto start_from_zero = [&](const std::string& why) {
    spdlog::warn("worker {}: compressor residuals and momentum start from zero: {}", m.rank, why);
    promise.deliver(false);
  };
  if (r.sources.empty()) {
    spdlog::info("worker {}: no earlier rank ran on this node; compressor residuals start from zero", m.rank);
    promise.deliver(true);
    return promise;
  }
  std::vector<std::string> buckets;
  try {
    buckets = load_rank_compressor_states(r.path, r.sources, r.ranks, r.iteration, m.shards.size(), r.weight);
  } catch (const Error& e) {
    start_from_zero(e.what());
    return promise;
  }
  if (r.sources.size() > 1 || r.weight != 1.0f)
    spdlog::info("worker {}: compressor residuals and momentum of rank(s) {} of {} carried over (x {:.4g})",
                 m.rank, fmt::join(r.sources, ", "), r.ranks, r.weight);
  // Each bucket's shard takes its states (a bucket the plan does not
  // compress has none to take); false: a shard kept its own, saying why.
  std::vector<sync::shard_actor> takers;
  std::vector<std::string> states;
  for (std::size_t b = 0; b < m.shards.size(); ++b)
    if (!buckets[b].empty()) {
      takers.push_back(m.shards[b]);
      states.push_back(std::move(buckets[b]));
    }
  fan_in_each<bool>(
      self, takers, std::chrono::seconds(60),
      [states](std::size_t k) { return std::make_tuple(msg::compressor_atom_v, states[k]); },
      [=](std::vector<bool>& ok) mutable {
        promise.deliver(std::all_of(ok.begin(), ok.end(), [](bool b) { return b; }));
      },
      [=](std::size_t, caf::error& e) mutable { promise.deliver(e); });
  return promise;
}

worker_actor::behavior_type worker(Self self, std::shared_ptr<WorkerModel> model) {
  self->state.model = std::move(model);
  self->state.buffers.resize(self->state.model->buckets->size());
  self->state.sent_at.resize(self->state.model->buckets->size());
  self->state.resumer = std::make_shared<MailboxResumer>(self->ctrl());
  self->set_exception_handler(exception_reason);
  return {
      [=](caf::get_atom) { return parameters_of(self); },
      [=](msg::Parameters& p) { take_parameters(self, p); },
      [=](msg::Iterate it) -> caf::result<msg::IterationDone> {
        run_step(self, it.iteration);
        if (!self->state.compute && self->state.pending == 0) return finish_step(self);
        self->state.done = self->make_response_promise<msg::IterationDone>();
        return self->state.done;
      },
      [=](msg::resume_atom) {
        auto& s = self->state;
        const auto h = s.resumer->next();
        if (!h || !s.compute) return;  // the step it was for failed, and the worker is going
        if (go_on(self, h) && s.pending == 0) s.done.deliver(finish_step(self));
      },
      [=](msg::Reduced& r) { take_reduced(self, r); },
      // A probe: a worker that is busy computing cannot answer it; one whose step awaits can.
      [=](msg::stats_atom) {
        const auto& s = self->state;
        const bool awaits = s.compute.has_value();  // a step computing does not answer
        return msg::WorkerProbe{s.iteration, s.in_step, static_cast<std::uint64_t>(s.pending),
                                awaits && !s.holds_slot && s.model->compute_slots, awaits && s.holds_slot};
      },
      [=](const msg::SaveCheckpoint& c) {
        auto& m = *self->state.model;
        save_checkpoint_files(
            m.replica->checkpoint(TrainPosition{c.epoch, c.batch, c.elapsed_seconds, c.epoch_loss_sum}), c.path,
            c.keep_all, c.previous_sane);
        return true;
      },
      [=](msg::eval_atom) { return self->state.model->replica->evaluate(); },
      [=](msg::figures_atom) { return self->state.model->replica->figures(); },
      [=](const msg::SaveCompressorState& c) { return save_compressor_state(self, c); },
      [=](const msg::CompressorRestore& r) { return restore_compressor_state(self, r); },
      [=](const msg::RestoreCheckpoint& r) {
        auto& m = *self->state.model;
        const Checkpoint c = r.bytes.empty() ? load_checkpoint(r.path) : decode_checkpoint(r.bytes, r.source);
        TrainPosition at = m.replica->restore(c, m.rank == 0);
        if (r.reposition) at = TrainPosition{r.epoch, r.batch, at.elapsed_seconds, at.epoch_loss_sum};
        m.replica->seek(at.epoch, at.batch);
        return true;
      },
  };
}

}  // namespace

worker_actor spawn_worker(caf::actor_system& system, std::shared_ptr<WorkerModel> model) {
  require(model && model->replica && model->buckets &&
              (model->shards.empty() ? model->ranks == 1 : model->shards.size() == model->buckets->size()),
          "spawn_worker: incomplete worker model");
  return system.spawn<caf::detached>(worker, std::move(model));
}

}  // namespace taihu::compute
