// The compute slots (actors/compute/compute_slots.hpp): at most N workers
// compute at once, a freed slot always reaches a waiter, and close() ends
// every wait, so that a stopped run's workers can end. Threads here take
// their slots with async::sync_wait, as tasks on threads of their own.

#include <doctest/doctest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <coroutine>
#include <memory>
#include <thread>
#include <vector>

#include "actors/compute/compute_slots.hpp"
#include "core/common/sync_wait.hpp"
#include "support/eventually.hpp"

using taihu::compute::ComputeSlots;
using taihu::testing::eventually;

namespace {

taihu::async::Task<bool> slot_of(ComputeSlots& slots) { co_return co_await slots.acquire(); }
bool acquire(ComputeSlots& slots) { return taihu::async::sync_wait(slot_of(slots)); }

// An owner that resumes only when the test says so, keeping what it was handed.
struct Posts final : taihu::async::Resumer {
  std::vector<std::coroutine_handle<>> posted;
  void resume_later(std::coroutine_handle<> h) override { posted.push_back(h); }
};

struct LockStep {
  int most = 0;   // workers that held a slot at the same time, at most
  int stuck = 0;  // acquires that close() had to end
};

// `threads` workers in lock step for `steps` steps, as in a data-parallel run
// (a step ends when every worker has computed), `slots` computing at once.
LockStep lock_step(int threads, int slots, int steps) {
  ComputeSlots compute(slots);
  std::barrier step_over(threads);
  std::atomic<int> holding{0}, most{0}, stuck{0}, finished{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int s = 0; s < steps; ++s) {
        if (acquire(compute)) {
          const int now = ++holding;
          for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
          }
          std::this_thread::yield();
          --holding;
          compute.release();
        } else {
          ++stuck;
        }
        step_over.arrive_and_wait();
      }
      ++finished;
    });
  // A worker asleep while a slot is free never finishes its step: close()
  // wakes it (and counts it), instead of the test hanging.
  if (!eventually([&] { return finished.load() == threads; }, std::chrono::seconds(60))) compute.close();
  for (auto& w : workers) w.join();
  return {most.load(), stuck.load()};
}

}  // namespace

TEST_SUITE("compute slots") {
  TEST_CASE("workers in lock step never compute more than the slots, and never wait while a slot is free") {
    for (const auto& sizes : {std::pair{3, 2}, std::pair{4, 1}, std::pair{8, 3}}) {
      const int threads = sizes.first, slots = sizes.second;  // not a structured binding: CAPTURE is a lambda
      CAPTURE(threads);
      CAPTURE(slots);
      const LockStep run = lock_step(threads, slots, 2000);
      CHECK(run.stuck == 0);
      CHECK(run.most >= 1);
      CHECK(run.most <= slots);
    }
  }

  TEST_CASE("a freed slot goes to a waiter") {
    ComputeSlots slots(1);
    REQUIRE(acquire(slots));
    std::atomic<bool> got{false};
    std::thread waiter([&] { got = acquire(slots); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_FALSE(got.load());
    slots.release();
    CHECK(eventually([&] { return got.load(); }));
    slots.close();  // ends the wait should the slot not have reached it
    waiter.join();
  }

  TEST_CASE("close() ends every wait: acquire fails at once, and the slots held can still be released") {
    ComputeSlots slots(1);
    REQUIRE(acquire(slots));  // a worker computing when the run stops
    std::atomic<int> failed{0}, returned{0};
    std::vector<std::thread> waiters;
    for (int w = 0; w < 3; ++w)
      waiters.emplace_back([&] {
        if (!acquire(slots)) ++failed;
        ++returned;
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(returned.load() == 0);
    slots.close();
    CHECK(eventually([&] { return returned.load() == 3; }));
    CHECK(failed.load() == 3);
    slots.release();
    CHECK_FALSE(acquire(slots));
    for (int w = returned.load(); w < 3; ++w) slots.release();  // waiters close() left asleep: let the joins end
    for (auto& w : waiters) w.join();
  }

  TEST_CASE("a waiting step holds no thread: freed slots go to the waiters in turn, through their resumers") {
    ComputeSlots slots(1);
    REQUIRE(acquire(slots));
    auto first = std::make_shared<Posts>(), second = std::make_shared<Posts>();
    auto a = slot_of(slots), b = slot_of(slots);
    a.start(first);
    b.start(second);
    CHECK_FALSE(a.done());  // both suspended, on this one thread
    CHECK_FALSE(b.done());
    slots.release();  // to the longest waiter
    REQUIRE(first->posted.size() == 1);
    CHECK(second->posted.empty());
    first->posted[0].resume();
    REQUIRE(a.done());
    CHECK(a.result());
    slots.release();  // `a` is done: to `b`, the slot having gone from waiter to waiter, never free
    REQUIRE(second->posted.size() == 1);
    second->posted[0].resume();
    CHECK(b.result());
    auto c = slot_of(slots);
    c.start(first);
    CHECK_FALSE(c.done());  // `b` holds the one slot
    slots.release();
    REQUIRE(first->posted.size() == 2);
    first->posted[1].resume();
    CHECK(c.result());
  }

  TEST_CASE("a slot never goes to a step that was dropped while it waited") {
    ComputeSlots slots(1);
    REQUIRE(acquire(slots));
    auto owner = std::make_shared<Posts>();
    auto kept = slot_of(slots);
    {
      auto dropped = slot_of(slots);  // the longest waiter, whose worker stops
      dropped.start(owner);
      kept.start(owner);
    }
    slots.release();  // past the dropped step, to the kept one
    REQUIRE(owner->posted.size() == 1);
    owner->posted[0].resume();
    REQUIRE(kept.done());
    CHECK(kept.result());
    slots.release();
    CHECK(acquire(slots));  // and the slot is free again, not lost with the dropped step
  }
}
