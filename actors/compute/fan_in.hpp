#pragma once
// One request to many actors, one continuation for all their answers: the
// coordinator's way to wait for every rank (an iteration, a checkpoint, a
// parameter broadcast, a node's setup) without counting replies by hand.
//
//   fan_in<msg::IterationDone>(self, workers, timeout, msg::Iterate{it},
//       [](std::vector<msg::IterationDone>& all) { ... },   // in target order
//       [](std::size_t i, caf::error& e) { ... });           // the first failure
//
// Exactly one of the two continuations runs, once; answers after a failure
// are dropped. A fan-in can also be abandoned (cancel()): an elastic cluster
// that re-forms leaves the old generation's requests unanswered, and their
// late answers must not run anything.

#include <caf/event_based_actor.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

namespace taihu::compute {

template <class Result>
class FanIn {
 public:
  using OnAll = std::function<void(std::vector<Result>&)>;
  using OnError = std::function<void(std::size_t target, caf::error&)>;

  FanIn(std::size_t targets, OnAll on_all, OnError on_error)
      : answers_(targets), remaining_(targets), on_all_(std::move(on_all)), on_error_(std::move(on_error)) {}

  void answer(std::size_t i, Result r) {
    if (closed_ || answers_[i]) return;
    answers_[i] = std::move(r);
    if (--remaining_ > 0) return;
    closed_ = true;
    std::vector<Result> all;
    all.reserve(answers_.size());
    for (auto& a : answers_) all.push_back(std::move(*a));
    on_all_(all);
  }

  void fail(std::size_t i, caf::error& e) {
    if (closed_) return;
    closed_ = true;
    on_error_(i, e);
  }

  // No targets: everyone (no one) has answered.
  void complete_if_empty() {
    if (closed_ || remaining_ > 0) return;
    closed_ = true;
    std::vector<Result> none;
    on_all_(none);
  }

  // Which targets have answered (e.g. to find the one that is late).
  bool answered(std::size_t i) const { return answers_[i].has_value(); }
  bool open() const { return !closed_; }
  void cancel() { closed_ = true; }

 private:
  std::vector<std::optional<Result>> answers_;
  std::size_t remaining_;
  bool closed_ = false;
  OnAll on_all_;
  OnError on_error_;
};

namespace detail {

// A request of one message, or of a tuple's elements (an atom and its argument).
template <class Self, class Handle, class Message>
auto request_of(Self* self, const Handle& target, std::chrono::milliseconds timeout, const Message& message) {
  return self->request(target, timeout, message);
}
template <class Self, class Handle, class... Ts>
auto request_of(Self* self, const Handle& target, std::chrono::milliseconds timeout, const std::tuple<Ts...>& message) {
  return std::apply([&](const auto&... xs) { return self->request(target, timeout, xs...); }, message);
}

}  // namespace detail

// fan_in with a message of its own for each target: message_for(i), one
// message or a tuple of an atom and its arguments.
template <class Result, class Self, class Handle, class MessageFor>
std::shared_ptr<FanIn<Result>> fan_in_each(Self* self, const std::vector<Handle>& targets,
                                           std::chrono::milliseconds timeout, MessageFor message_for,
                                           typename FanIn<Result>::OnAll on_all,
                                           typename FanIn<Result>::OnError on_error) {
  auto fan = std::make_shared<FanIn<Result>>(targets.size(), std::move(on_all), std::move(on_error));
  if (targets.empty()) {
    fan->complete_if_empty();
    return fan;
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    detail::request_of(self, targets[i], timeout, message_for(i))
        .then([fan, i](Result& r) { fan->answer(i, std::move(r)); },
              [fan, i](caf::error& e) { fan->fail(i, e); });
  return fan;
}

// Sends `message` to every target as a request; see the top. With no
// targets, on_all runs at once with an empty vector.
template <class Result, class Self, class Handle, class Message>
std::shared_ptr<FanIn<Result>> fan_in(Self* self, const std::vector<Handle>& targets,
                                      std::chrono::milliseconds timeout, const Message& message,
                                      typename FanIn<Result>::OnAll on_all,
                                      typename FanIn<Result>::OnError on_error) {
  return fan_in_each<Result>(
      self, targets, timeout, [&message](std::size_t) -> const Message& { return message; }, std::move(on_all),
      std::move(on_error));
}

// Like fan_in, but every target is heard out: on_failure(i, error) runs for
// each that fails, on_answer(i, result) (if given) for each that answers,
// then on_settled() once all have answered or failed (e.g. nodes told to drop
// their replicas: one that fails is lost, the others go on).
template <class Result, class Self, class Handle, class Message>
void settle(Self* self, const std::vector<Handle>& targets, std::chrono::milliseconds timeout, const Message& message,
            std::function<void(std::size_t, caf::error&)> on_failure, std::function<void()> on_settled,
            std::function<void(std::size_t, Result&)> on_answer = {}) {
  struct Pending {
    std::size_t left;
    std::function<void(std::size_t, caf::error&)> on_failure;
    std::function<void()> on_settled;
    std::function<void(std::size_t, Result&)> on_answer;
    void settled() {
      if (--left == 0) on_settled();
    }
  };
  auto pending = std::make_shared<Pending>(
      Pending{targets.size(), std::move(on_failure), std::move(on_settled), std::move(on_answer)});
  if (targets.empty()) {
    pending->on_settled();
    return;
  }
  for (std::size_t i = 0; i < targets.size(); ++i)
    self->request(targets[i], timeout, message)
        .then(
            [pending, i](Result& r) {
              if (pending->on_answer) pending->on_answer(i, r);
              pending->settled();
            },
            [pending, i](caf::error& e) {
              pending->on_failure(i, e);
              pending->settled();
            });
}

}  // namespace taihu::compute
