#pragma once
// The coordinator's requests to its workers (coordinator_state.hpp): every
// wait is bounded by [sync] step_timeout, a worker that fails to answer stops
// the run naming it, and answers from an earlier generation (an elastic
// cluster re-formed meanwhile) are dropped. Internal to actors/compute.

#include <fmt/format.h>

#include "actors/exception_reason.hpp"

namespace taihu::compute {

namespace detail {

inline bool current(Coordinator* self, int generation) {
  return !self->state.over && self->state.members.generation == generation;
}

inline std::chrono::milliseconds step_timeout(Coordinator* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(self->state.plan->step_timeout));
}

inline void no_answer(Coordinator* self, int rank, const char* what, caf::error& e) {
  const auto& members = self->state.members;
  const Participant* p = members.find(members.workers[static_cast<std::size_t>(rank)].address());
  const std::string who = fmt::format("worker {}{}", rank, p ? p->where : "");
  fail(self, rank,
       e == caf::sec::request_timeout
           ? fmt::format("{} did not answer {} within step_timeout = {} s", who, what, self->state.plan->step_timeout)
           : fmt::format("{} failed at iteration {}{}: {}", who, self->state.cursor.iteration(),
                         std::string_view(what) == "the iteration" ? std::string() : fmt::format(" ({})", what),
                         reason_text(self->system(), e)),
       p ? p->node : -1);
}

}  // namespace detail

template <class Result, class Message>
void ask_workers(Coordinator* self, const Message& message, std::function<void(std::vector<Result>&)> on_all,
                 const char* what) {
  const std::vector<worker_actor>& workers = self->state.members.workers;
  const int generation = self->state.members.generation;
  fan_in<Result>(
      self, workers, detail::step_timeout(self), message,
      [self, generation, on_all = std::move(on_all)](std::vector<Result>& all) {
        if (detail::current(self, generation)) on_all(all);
      },
      [self, generation, what](std::size_t i, caf::error& e) {
        if (detail::current(self, generation)) detail::no_answer(self, static_cast<int>(i), what, e);
      });
}

// Each worker its own message: message_for(rank).
template <class Result, class MessageFor>
void ask_workers_each(Coordinator* self, MessageFor message_for, std::function<void(std::vector<Result>&)> on_all,
                      const char* what) {
  const int generation = self->state.members.generation;
  fan_in_each<Result>(
      self, self->state.members.workers, detail::step_timeout(self), std::move(message_for),
      [self, generation, on_all = std::move(on_all)](std::vector<Result>& all) {
        if (detail::current(self, generation)) on_all(all);
      },
      [self, generation, what](std::size_t i, caf::error& e) {
        if (detail::current(self, generation)) detail::no_answer(self, static_cast<int>(i), what, e);
      });
}

template <class Result, class Message>
void ask_worker(Coordinator* self, int rank, const Message& message, std::function<void(Result&)> on_answer,
                const char* what) {
  const int generation = self->state.members.generation;
  self->request(self->state.members.workers[static_cast<std::size_t>(rank)], detail::step_timeout(self), message)
      .then(
          [self, generation, on_answer = std::move(on_answer)](Result& r) {
            if (detail::current(self, generation)) on_answer(r);
          },
          [self, generation, rank, what](caf::error& e) {
            if (detail::current(self, generation)) detail::no_answer(self, rank, what, e);
          });
}

}  // namespace taihu::compute
