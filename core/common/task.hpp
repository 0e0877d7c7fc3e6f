#pragma once
// A computation that can wait without holding its thread: a C++20 coroutine
// that awaits other tasks and Pending operations (pending.hpp), and goes on
// on its owner's thread when what it waits for is there.
//
// Why: a data-parallel worker's step waits on actors — the graph runtime's
// batch, the SW26010 core groups' phase of a layer, the next mini-batch, a
// compute slot. Written as a task, the step suspends there instead of
// blocking, and the worker's thread takes other messages meanwhile (a
// reduced gradient bucket, a probe). The code still reads top to bottom:
//
//   Task<ReplicaStep> NetReplica::compute(...) {
//     co_await feed.next_async(data, labels);
//     for (i ...) loss += co_await net.forward_layer(i);
//     ...
//   }
//
// Who resumes: a Resumer, given to the outermost task when it is started
// (start()), and passed down to every task it awaits. A Pending operation
// that completes on another thread hands the suspended coroutine to that
// Resumer, which resumes it on its owner's thread: the worker's mailbox
// (actors/compute/worker_actor.cpp), or a plain thread blocked in
// sync_wait (sync_wait.hpp: the one place a thread waits for a task).
//
// Tasks are lazy (nothing runs before they are awaited or started), awaited
// once, and pass their exceptions to the awaiter. A task that never suspends
// costs one frame allocation. Hand-written because C++20 has coroutines but
// no task type (std::execution's come with C++26), and Asio's awaitable runs
// on an Asio executor, which an actor's mailbox is not.
//
// Plain C++ (no actors).

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace taihu::async {

// Where a suspended coroutine continues: its owner's thread.
class Resumer {
 public:
  virtual ~Resumer() = default;
  // From any thread: resume `h` on the owner's thread, after this call returns.
  virtual void resume_later(std::coroutine_handle<> h) = 0;
};

namespace detail {

struct PromiseBase {
  std::shared_ptr<Resumer> resumer;
  std::coroutine_handle<> continuation = std::noop_coroutine();
  std::exception_ptr error;

  std::suspend_always initial_suspend() noexcept { return {}; }
  // Straight on to the awaiter (symmetric transfer: no stack growth).
  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      return h.promise().continuation;
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
struct Promise : PromiseBase {
  std::optional<T> value;
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};

template <>
struct Promise<void> : PromiseBase {
  void return_void() noexcept {}
};

}  // namespace detail

template <class T = void>
class [[nodiscard]] Task {
 public:
  struct promise_type : detail::Promise<T> {
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  // Destroys the frame, and with it whatever it awaits (a suspended task
  // that is dropped never resumes).
  ~Task() { destroy(); }

  // co_await task: runs it with the awaiter's Resumer, resumes the awaiter
  // when it is done, and gives its value or rethrows its exception.
  struct Awaiter {
    Handle task;
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiter) noexcept {
      task.promise().resumer = awaiter.promise().resumer;
      task.promise().continuation = awaiter;
      return task;
    }
    T await_resume() { return take(task); }
  };
  Awaiter operator co_await() && noexcept { return Awaiter{handle_}; }

  // The outermost task: runs it on the calling thread until it finishes or
  // first suspends; later parts run where `resumer` resumes them.
  void start(std::shared_ptr<Resumer> resumer) {
    handle_.promise().resumer = std::move(resumer);
    handle_.resume();
  }
  bool done() const { return handle_ && handle_.done(); }
  // After done(): the value, or the exception rethrown.
  T result() { return take(handle_); }

 private:
  explicit Task(Handle h) : handle_(h) {}
  static T take(Handle h) {
    auto& p = h.promise();
    if (p.error) std::rethrow_exception(p.error);
    if constexpr (!std::is_void_v<T>) return std::move(*p.value);
  }
  void destroy() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }

  Handle handle_;
};

}  // namespace taihu::async
