#include "simulator/engine.hpp"

#include <algorithm>
#include <chrono>

#include "collectives/cost_model.hpp"
#include "core/common/check.hpp"

namespace taihu::simulator {

Engine::Engine(Network& network, const std::vector<std::vector<collectives::Step>>& steps, std::vector<double> start_times,
               Callbacks callbacks)
    : network_(network), steps_(steps), callbacks_(std::move(callbacks)) {
  const std::size_t p = steps.size();
  require(static_cast<int>(p) == network.ranks(), "simulation: {} ranks of steps on a network of {}", p,
          network.ranks());
  if (start_times.empty()) start_times.assign(p, 0.0);
  require(start_times.size() == p, "simulation: {} start times for {} ranks", start_times.size(), p);
  ranks_.resize(p);
  finish_.assign(p, 0.0);
  for (std::size_t r = 0; r < p; ++r) events_.push(Event{start_times[r], start, static_cast<int>(r), 0, 0});
}

double Engine::seconds() const { return finish_.empty() ? 0.0 : *std::max_element(finish_.begin(), finish_.end()); }

void Engine::offer(const Sent& message) {
  require(message.from >= 0 && message.from < static_cast<int>(ranks_.size()), "simulation: a send from rank {}",
          message.from);
  ranks_[static_cast<std::size_t>(message.from)].offered.push_back(message);
}

int Engine::run() {
  while (!events_.empty()) {
    const Event e = events_.top();
    auto& rank = ranks_[static_cast<std::size_t>(e.rank)];
    if (e.kind == step && !self_sending_ && rank.offered.empty() &&
        steps_[static_cast<std::size_t>(e.rank)][rank.step].sends()) {
      ++stats_.blocks;
      return e.rank;  // the executor has not sent this step's message yet
    }
    events_.pop();
    ++stats_.events;
    now_ = e.time;
    switch (e.kind) {
      case deliver: {
        Sent message = in_flight_[e.slot];
        free_slots_.push_back(e.slot);
        if (callbacks_.deliver) callbacks_.deliver(e.rank, message);
        break;
      }
      case start:
        if (callbacks_.start) callbacks_.start(e.rank);
        if (steps_[static_cast<std::size_t>(e.rank)].empty()) {
          finish_[static_cast<std::size_t>(e.rank)] = e.time;
          ++finished_;
        } else {
          events_.push(Event{e.time, step, e.rank, 0, 0});
        }
        break;
      case step:
        run_step(e.rank, e.time);
        break;
    }
  }
  require(done(), "simulation: {} of {} ranks never finished (a receive that never comes)",
          finish_.size() - finished_, finish_.size());
  return -1;
}

void Engine::run_step(int r, double t) {
  auto& rank = ranks_[static_cast<std::size_t>(r)];
  const collectives::Step& s = steps_[static_cast<std::size_t>(r)][rank.step];
  rank.send_done = t;
  if (s.sends()) {
    Sent m;
    if (self_sending_) {
      m = Sent{r, s.send_to, s.send_seq, s.send.offset, s.send.length, 0};
    } else {
      m = rank.offered.front();
      rank.offered.pop_front();
      require(m.to == s.send_to && m.seq == s.send_seq && m.offset == s.send.offset && m.length == s.send.length,
              "simulation: rank {} step {} sent [{}, +{}) to rank {} (seq {}), the step says [{}, +{}) to rank {} "
              "(seq {})",
              r, rank.step, m.offset, m.length, m.to, m.seq, s.send.offset, s.send.length, s.send_to, s.send_seq);
    }
    const double bytes = static_cast<double>(m.length) * collectives::bytes_per_element;
    const double arrival = network_.transmit(r, m.to, bytes, t);
    ++stats_.messages;
    stats_.bytes += bytes;
    std::uint64_t slot;
    if (free_slots_.empty()) {
      slot = in_flight_.size();
      in_flight_.push_back(m);
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
      in_flight_[slot] = m;
    }
    events_.push(Event{arrival, deliver, m.to, stats_.messages, slot});
    rank.send_done = arrival;
    auto& receiver = ranks_[static_cast<std::size_t>(m.to)];
    const collectives::Step* waiting_step =
        receiver.waiting ? &steps_[static_cast<std::size_t>(m.to)][receiver.step] : nullptr;
    if (waiting_step != nullptr && waiting_step->recv_from == r && waiting_step->recv_seq == m.seq) {
      receiver.waiting = false;
      complete(m.to, arrival);
    } else {
      arrival_.emplace(key(r, m.to, m.seq), arrival);
    }
  }
  if (s.receives()) {
    auto it = arrival_.find(key(s.recv_from, r, s.recv_seq));
    if (it == arrival_.end()) {
      rank.waiting = true;  // completed when the peer sends
      return;
    }
    const double arrival = it->second;
    arrival_.erase(it);
    complete(r, arrival);
  } else {
    next_step(r, rank.send_done);
  }
}

void Engine::complete(int r, double arrival) {
  auto& rank = ranks_[static_cast<std::size_t>(r)];
  const collectives::Step& s = steps_[static_cast<std::size_t>(r)][rank.step];
  double done = std::max(rank.send_done, arrival);
  if (s.combine == collectives::Combine::reduce) {
    done = network_.reduce(r, static_cast<double>(s.recv.length) * collectives::bytes_per_element, done);
  }
  next_step(r, done);
}

void Engine::next_step(int r, double t) {
  auto& rank = ranks_[static_cast<std::size_t>(r)];
  if (++rank.step == steps_[static_cast<std::size_t>(r)].size()) {
    finish_[static_cast<std::size_t>(r)] = t;
    ++finished_;
  } else {
    events_.push(Event{t, step, r, 0, 0});
  }
}

Timing time_without_actors(const collectives::Schedule& schedule, Network& network, std::vector<double> start_times,
                           bool fresh_network) {
  const auto begin = std::chrono::steady_clock::now();
  if (fresh_network) network.reset();
  Engine engine(network, schedule.steps, std::move(start_times), {});
  engine.make_sends_itself();
  engine.run();
  return Timing{engine.seconds(), engine.finish(), engine.stats(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count()};
}

}  // namespace taihu::simulator
