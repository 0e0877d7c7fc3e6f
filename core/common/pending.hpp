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
// A Completion is called once; it may outlive the task (a late answer to a
// task that was dropped is kept and ignored). One that is never called
// leaves its task suspended: the producer answers every operation, with a
// failure if need be (a request's timeout, a feed that stopped).
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
  enum Phase : int { starting, suspended, completed };
  std::atomic<int> phase{starting};
  std::optional<T> value;
  std::exception_ptr error;
  std::coroutine_handle<> awaiter;
  std::shared_ptr<Resumer> resumer;  // kept alive by a late completion

  void complete() {
    // Completed while start() still runs: await_suspend sees it and does not suspend.
    if (phase.exchange(completed, std::memory_order_acq_rel) == suspended) resumer->resume_later(awaiter);
  }
};

}  // namespace detail

template <class T>
class Completion {
 public:
  explicit Completion(std::shared_ptr<detail::PendingState<T>> state) : state_(std::move(state)) {}

  void operator()(T value) const {
    state_->value.emplace(std::move(value));
    state_->complete();
  }
  void fail(std::exception_ptr error) const {
    state_->error = std::move(error);
    state_->complete();
  }

 private:
  std::shared_ptr<detail::PendingState<T>> state_;
};

template <class T>
class [[nodiscard]] Pending {
 public:
  using Start = std::function<void(Completion<T>)>;
  explicit Pending(Start start) : start_(std::move(start)) {}

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiter) {
    state_->awaiter = awaiter;
    state_->resumer = awaiter.promise().resumer;
    start_(Completion<T>(state_));
    // false: completed during start, go on at once.
    return state_->phase.exchange(State::suspended, std::memory_order_acq_rel) != State::completed;
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
