#pragma once
// An operation a task awaits (task.hpp) whose answer comes from elsewhere —
// an actor's reply, a batch a loader finished, a compute slot set free:
//
//   Pending<ReadyBatch> take() {
//     return Pending<ReadyBatch>([this](Completion<ReadyBatch> done) {
//       ... keep `done`; later, on any thread: done(batch) or done.fail(error)
//     });
//   }
//   ReadyBatch batch = co_await take();
//
// The start function runs when the task awaits, on the task's thread. It may
// complete at once (a batch that was already there): then the task goes on
// without suspending and without a trip through its Resumer. Otherwise the
// task suspends, and the completion hands it to the Resumer of the task that
// awaited, so it goes on on its owner's thread.
//
// A Completion is called once. It may outlive the task: an answer to a task
// that was dropped while it waited goes nowhere, and the call says so
// (false). One that is never called leaves its task suspended: the producer answers
// every operation, with a failure if need be (a request's timeout, a feed
// that stopped).
//
// Plain C++ (no actors).

#include <atomic>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "core/common/task.hpp"

namespace taihu::async {

namespace detail {

template <class T>
struct PendingState {
  // starting -> completed (answered during start: no suspension), or
  // starting -> suspended -> completed, or -> dropped (the task went first).
  enum Phase : int { starting, suspended, completed, dropped };
  std::atomic<int> phase{starting};
  std::optional<T> value;
  std::exception_ptr error;
  std::coroutine_handle<> awaiter;
  std::shared_ptr<Resumer> resumer;  // kept alive by a late completion

  // false: the task was dropped, and the answer goes nowhere.
  bool complete() {
    int seen = phase.load(std::memory_order_acquire);
    while (seen != dropped) {
      if (phase.compare_exchange_weak(seen, completed, std::memory_order_acq_rel)) {
        // (completed while start() still runs: await_suspend sees it and does not suspend)
        if (seen == suspended) resumer->resume_later(awaiter);
        return true;
      }
    }
    return false;
  }
};

}  // namespace detail

template <class T>
class Completion {
 public:
  explicit Completion(std::shared_ptr<detail::PendingState<T>> state) : state_(std::move(state)) {}

  // false: the task that awaited is gone (a stopped run drops a suspended
  // step), and nobody took the answer. A producer that hands out something
  // to be given back (a compute slot) gives it to the next waiter instead.
  bool operator()(T value) const {
    state_->value.emplace(std::move(value));
    return state_->complete();
  }
  bool fail(std::exception_ptr error) const {
    state_->error = std::move(error);
    return state_->complete();
  }

 private:
  std::shared_ptr<detail::PendingState<T>> state_;
};

template <class T>
class [[nodiscard]] Pending {
 public:
  using Start = std::function<void(Completion<T>)>;
  explicit Pending(Start start) : start_(std::move(start)) {}
  Pending(Pending&&) noexcept = default;
  Pending& operator=(Pending&&) = delete;
  // Destroyed while suspended: its task was dropped, and an answer now goes nowhere.
  ~Pending() {
    int suspended = State::suspended;
    if (state_) state_->phase.compare_exchange_strong(suspended, State::dropped, std::memory_order_acq_rel);
  }

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiter) {
    state_->awaiter = awaiter;
    state_->resumer = awaiter.promise().resumer;
    start_(Completion<T>(state_));
    // false: completed during start, go on at once.
    int starting = State::starting;
    return state_->phase.compare_exchange_strong(starting, State::suspended, std::memory_order_acq_rel);
  }
  T await_resume() {
    if (state_->error) std::rethrow_exception(state_->error);
    return std::move(*state_->value);
  }

 private:
  using State = detail::PendingState<T>;
  Start start_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace taihu::async
