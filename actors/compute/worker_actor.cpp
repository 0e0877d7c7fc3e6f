#include "actors/compute/worker_actor.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "actors/sync/buckets.hpp"
#include "core/common/check.hpp"
#include "core/data/batch_source.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"
#include "actors/exception_reason.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

WorkerModel::WorkerModel() = default;
WorkerModel::~WorkerModel() = default;

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
  caf::actor coordinator;
  bool in_step = false;
  std::uint64_t iteration = 0;
  std::size_t pending = 0;  // buckets not yet reduced
  float loss = 0.0f;
  msg::StepStats stats;
  Clock::time_point backward_end;
};

using Self = caf::stateful_actor<WorkerState>;

// Releases a compute slot when the scope ends (also on exceptions).
struct SlotGuard {
  ComputeSlots* slots;
  explicit SlotGuard(ComputeSlots* s) : slots(s) {
    if (slots) slots->acquire();
  }
  ~SlotGuard() {
    if (slots) slots->release();
  }
  SlotGuard(const SlotGuard&) = delete;
  SlotGuard& operator=(const SlotGuard&) = delete;
};

void send_bucket(Self* self, std::uint32_t b) {
  auto& s = self->state;
  auto& m = *s.model;
  const std::size_t n = (*m.buckets)[b].elements;
  msg::TensorPayload& buffer = s.buffers[b];
  if (buffer.size() != n) buffer = msg::TensorPayload::allocate(n);
  m.buckets->pack(b, buffer.mutable_data());  // copies first if a view still shares it
  if (m.fault.kind == WorkerFault::Kind::wrong_gradient_size && m.fault.rank == m.rank &&
      m.fault.iteration == s.iteration) {
    buffer = msg::TensorPayload::allocate(n + 1);
  }
  s.sent_at[b] = Clock::now();
  self->send(m.shards[b], msg::GradientReady{b, s.iteration, std::move(buffer)});
  s.buffers[b] = {};
}

void run_step(Self* self, std::uint64_t iteration) {
  auto& s = self->state;
  auto& m = *s.model;
  require(!s.in_step, "worker {}: step {} arrived while step {} runs", m.rank, iteration, s.iteration);
  s.in_step = true;
  s.iteration = iteration;
  s.pending = m.buckets->size();
  s.stats = {};
  if (m.fault.rank == m.rank && m.fault.iteration == iteration) {
    if (m.fault.kind == WorkerFault::Kind::throw_in_step)
      raise("worker {}: injected failure in step {}", m.rank, iteration);
    if (m.fault.kind == WorkerFault::Kind::stall)
      std::this_thread::sleep_for(std::chrono::duration<double>(m.fault.stall_seconds));
  }
  Net& net = *m.net;
  SlotGuard slot(m.compute_slots.get());
  const auto start = Clock::now();
  Tensor& data = net.blob(m.settings.data_blob).data();
  Tensor& labels = net.blob(m.settings.label_blob).data();
  if (!m.train->next(data, labels)) {
    // End of an epoch: the source answers false once, then starts the next.
    require(m.train->next(data, labels), "worker {}: no training batch for step {}", m.rank, iteration);
  }
  s.stats.samples = static_cast<std::uint64_t>(data.shape()[0]);
  // Random layers (dropout) draw from streams that are a pure function of
  // (seed, rank, iteration, layer), so resuming any replica needs no saved
  // generator state and every rank draws differently.
  const uint64_t step_seed = derive_seed(m.settings.seed, fmt::format("rank {} step {}", m.rank, iteration));
  for (std::size_t i = 0; i < net.num_layers(); ++i) net.layer(i).seed(step_seed);
  net.zero_param_diffs();
  float loss = 0.0f;
  for (std::size_t i = 0; i < net.num_layers(); ++i) loss += net.forward_layer(i);
  s.loss = loss;
  const auto forward_end = Clock::now();
  net.begin_backward();
  for (std::size_t i = net.num_layers(); i-- > 0;) {
    net.backward_layer(i);
    for (std::uint32_t b : m.buckets->ready_after(i)) send_bucket(self, b);
  }
  s.backward_end = Clock::now();
  s.stats.forward_seconds = seconds_between(start, forward_end);
  s.stats.backward_seconds = seconds_between(forward_end, s.backward_end);
}

void finish_step(Self* self) {
  auto& s = self->state;
  auto& m = *s.model;
  const auto reduced = Clock::now();
  s.stats.exposed_comm_seconds = seconds_between(s.backward_end, reduced);
  m.solver->step();
  s.stats.update_seconds = seconds_between(reduced, Clock::now());
  s.in_step = false;
  self->send(s.coordinator, msg::StepDone{s.iteration, m.rank, s.loss, s.stats});
}

caf::behavior worker(Self* self, std::shared_ptr<WorkerModel> model) {
  self->state.model = std::move(model);
  self->state.buffers.resize(self->state.model->buckets->size());
  self->state.sent_at.resize(self->state.model->buckets->size());
  self->set_exception_handler(exception_reason);
  return {
      [=](caf::get_atom) {
        auto& m = *self->state.model;
        std::size_t n = 0;
        for (const Param* p : m.net->params()) n += static_cast<std::size_t>(p->blob->count());
        auto values = msg::TensorPayload::allocate(n);
        float* out = values.mutable_data();
        for (const Param* p : m.net->params()) {
          const auto c = static_cast<std::size_t>(p->blob->count());
          std::copy_n(p->blob->data().ptr(), c, out);
          out += c;
        }
        return msg::Parameters{static_cast<std::uint64_t>(m.solver->iteration()), m.rank, std::move(values)};
      },
      [=](msg::Parameters& p) {
        auto& m = *self->state.model;
        std::size_t offset = 0;
        auto params = m.net->params();
        std::size_t n = 0;
        for (const Param* q : params) n += static_cast<std::size_t>(q->blob->count());
        require(p.values.size() == n, "worker {}: parameters from rank {} hold {} floats, the net has {}", m.rank,
                p.source, p.values.size(), n);
        for (Param* q : params) {
          const auto c = static_cast<std::size_t>(q->blob->count());
          std::copy_n(p.values.data() + offset, c, q->blob->data().ptr());
          offset += c;
        }
      },
      [=](msg::Step step) {
        self->state.coordinator = caf::actor_cast<caf::actor>(self->current_sender());
        run_step(self, step.iteration);
        if (self->state.pending == 0) finish_step(self);
      },
      [=](msg::Reduced& r) {
        auto& s = self->state;
        auto& m = *s.model;
        require(s.in_step && r.iteration == s.iteration, "worker {}: reduced bucket {} of iteration {} out of step",
                m.rank, r.bucket, r.iteration);
        require(r.bucket < m.buckets->size() && r.buffer.size() == (*m.buckets)[r.bucket].elements,
                "worker {}: bucket {} came back with {} floats", m.rank, r.bucket, r.buffer.size());
        // Communication of this bucket: sent -> reduced; hidden while backward ran.
        const Clock::time_point finished{std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(r.finished_ns))};
        const Clock::time_point sent = s.sent_at[r.bucket];
        if (finished > sent) {
          s.stats.comm_seconds += seconds_between(sent, finished);
          s.stats.hidden_comm_seconds += seconds_between(sent, std::min(finished, s.backward_end));
        }
        s.stats.bytes_sent += r.bytes_sent;
        m.buckets->unpack(r.bucket, r.buffer.data(), 1.0f / static_cast<float>(m.ranks));
        s.buffers[r.bucket] = std::move(r.buffer);
        if (--s.pending == 0) finish_step(self);
      },
      // A probe: a worker that is busy computing cannot answer it.
      [=](msg::stats_atom) {
        const auto& s = self->state;
        return caf::make_message(s.iteration, s.in_step, static_cast<std::uint64_t>(s.pending));
      },
      [=](msg::save_atom, const std::string& path, bool keep_all, std::int64_t epoch, std::int64_t batch,
          double elapsed, double epoch_loss_sum) {
        auto& m = *self->state.model;
        save_checkpoint_files(
            capture_checkpoint(*m.net, *m.solver, m.settings.seed, TrainPosition{epoch, batch, elapsed, epoch_loss_sum}),
            path, keep_all);
        return true;
      },
      [=](msg::eval_atom) {
        auto& m = *self->state.model;
        require(m.test != nullptr, "worker {} has no test data", m.rank);
        const Evaluation e = evaluate(*m.net, *m.test, m.settings, m.settings.batch_size);
        return caf::make_message(e.loss, e.accuracy);
      },
  };
}

}  // namespace

caf::actor spawn_worker(caf::actor_system& system, std::shared_ptr<WorkerModel> model) {
  require(model && model->net && model->solver && model->train && model->buckets &&
              model->shards.size() == model->buckets->size(),
          "spawn_worker: incomplete worker model");
  return system.spawn<caf::detached>(worker, std::move(model));
}

}  // namespace taihu::compute
