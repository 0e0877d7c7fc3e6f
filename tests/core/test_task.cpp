// Tasks and pending operations (core/common/task.hpp, pending.hpp,
// sync_wait.hpp): nested tasks pass values and exceptions up, an operation
// completed at once does not suspend, one completed on another thread
// resumes its task on the owner's thread through the Resumer, and a dropped
// task is never resumed.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/common/pending.hpp"
#include "core/common/sync_wait.hpp"
#include "core/common/task.hpp"

using namespace taihu;

namespace {

// An owner that resumes only when told to, counting what it was handed.
struct ManualResumer final : async::Resumer {
  std::vector<std::coroutine_handle<>> posted;
  void resume_later(std::coroutine_handle<> h) override { posted.push_back(h); }
};

// Completed by whoever holds it, later.
struct Later {
  std::shared_ptr<std::optional<async::Completion<int>>> held =
      std::make_shared<std::optional<async::Completion<int>>>();
  async::Pending<int> operator()() {
    return async::Pending<int>([held = held](async::Completion<int> done) { held->emplace(std::move(done)); });
  }
};

async::Pending<int> at_once(int v) {
  return async::Pending<int>([v](async::Completion<int> done) { done(v); });
}

async::Task<int> twice(async::Pending<int> p) { co_return 2 * co_await std::move(p); }

async::Task<int> sum_of_two(Later& later) {
  const int a = co_await twice(later());
  const int b = co_await twice(at_once(5));
  co_return a + b;
}

async::Task<> throws_after(async::Pending<int> p) {
  (void)co_await std::move(p);
  throw std::runtime_error("after the answer");
}

async::Task<int> catches(async::Pending<int> p) {
  try {
    co_await throws_after(std::move(p));
  } catch (const std::runtime_error& e) {
    co_return 7;
  }
  co_return 0;
}

}  // namespace

TEST_SUITE("tasks") {
  TEST_CASE("an operation completed at once goes on without the resumer") {
    auto resumer = std::make_shared<ManualResumer>();
    auto task = twice(at_once(21));
    task.start(resumer);
    REQUIRE(task.done());
    CHECK(task.result() == 42);
    CHECK(resumer->posted.empty());
  }

  TEST_CASE("a suspended task goes on only where its resumer resumes it, nested tasks included") {
    auto resumer = std::make_shared<ManualResumer>();
    Later later;
    auto task = sum_of_two(later);
    task.start(resumer);
    CHECK_FALSE(task.done());
    REQUIRE(later.held->has_value());
    CHECK((**later.held)(4));  // completes; the task is handed to the resumer, not run here
    CHECK_FALSE(task.done());
    REQUIRE(resumer->posted.size() == 1);
    resumer->posted[0].resume();
    REQUIRE(task.done());
    CHECK(task.result() == 2 * 4 + 2 * 5);
  }

  TEST_CASE("exceptions reach the awaiter, also across a suspension") {
    Later later;
    auto resumer = std::make_shared<ManualResumer>();
    auto task = catches(later());
    task.start(resumer);
    (**later.held)(1);
    resumer->posted.at(0).resume();
    REQUIRE(task.done());
    CHECK(task.result() == 7);
    auto failing = throws_after(at_once(1));
    failing.start(resumer);
    REQUIRE(failing.done());
    CHECK_THROWS_WITH_AS(failing.result(), "after the answer", std::runtime_error);
  }

  TEST_CASE("a failed operation throws in the awaiting task") {
    auto failed = async::Pending<int>(
        [](async::Completion<int> done) { done.fail(std::make_exception_ptr(std::invalid_argument("no answer"))); });
    CHECK_THROWS_WITH_AS(async::sync_wait(twice(std::move(failed))), "no answer", std::invalid_argument);
  }

  TEST_CASE("sync_wait: answers from other threads resume the task on the waiting thread") {
    const auto waiting_thread = std::this_thread::get_id();
    std::vector<std::thread> others;
    std::atomic<int> wrong_thread{0};
    auto from_another_thread = [&](int v) {
      return async::Pending<int>([&, v](async::Completion<int> done) {
        others.emplace_back([done, v] {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          done(v);
        });
      });
    };
    auto sum = [&]() -> async::Task<int> {
      int total = 0;
      for (int i = 1; i <= 20; ++i) {
        total += co_await from_another_thread(i);
        if (std::this_thread::get_id() != waiting_thread) ++wrong_thread;
      }
      co_return total;
    };
    CHECK(async::sync_wait(sum()) == 210);
    CHECK(wrong_thread.load() == 0);
    for (auto& t : others) t.join();
  }

  TEST_CASE("a task dropped while it waits is never resumed; its late answer goes nowhere") {
    auto resumer = std::make_shared<ManualResumer>();
    Later later;
    {
      auto task = twice(later());
      task.start(resumer);
      CHECK_FALSE(task.done());
    }  // dropped
    CHECK_FALSE((**later.held)(3));  // nobody took it
    CHECK(resumer->posted.empty());
  }
}
