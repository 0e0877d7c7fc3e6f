#pragma once
// A request to actors as an operation a task awaits (core/common/pending.hpp):
// how code under a worker's step — the graph runner, the SW26010 executor —
// waits on actors without blocking the worker's thread:
//
//   caf::expected<msg::GraphBatchDone> done =
//       co_await ask<msg::GraphBatchDone>(system, batcher, timeout, msg::RunGraphBatch{...});
//   caf::expected<std::vector<msg::CoreGroupDone>> all =
//       co_await ask_all<msg::CoreGroupDone>(system, groups, timeout, msg::CoreGroupWork{...});
//
// The timeout: a duration, or caf::infinite. The answer, or the error (a
// timeout, the receiver gone, its failure), comes back as caf::expected; the
// task goes on where its Resumer resumes it (the worker's mailbox). A relay
// actor, spawned per ask, makes the request and quits with the answer: the
// awaiting code owns no actor of its own, and a late answer to a task that is
// gone reaches the relay, not the task.

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/expected.hpp>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "core/common/pending.hpp"

namespace taihu {

template <class Result, class Handle, class Timeout, class Message>
async::Pending<caf::expected<Result>> ask(caf::actor_system& system, Handle target, Timeout timeout, Message message) {
  return async::Pending<caf::expected<Result>>(
      [&system, target = std::move(target), timeout,
       message = std::move(message)](async::Completion<caf::expected<Result>> done) {
        system.spawn([=](caf::event_based_actor* relay) {
          relay->request(target, timeout, message)
              .then([done](Result& r) { done(std::move(r)); }, [done](caf::error& e) { done(std::move(e)); });
        });
      });
}

// One request to each target, one answer for all (in target order) once
// every target has answered: the values, or the first failure. Unlike
// fan_in, a failure waits for the others too, since the targets may work on
// the caller's data (the core groups on the net's blobs), which the caller
// may free as soon as it hears of the failure.
template <class Result, class Handle, class Timeout, class Message>
async::Pending<caf::expected<std::vector<Result>>> ask_all(caf::actor_system& system, std::vector<Handle> targets,
                                                           Timeout timeout, Message message) {
  using All = caf::expected<std::vector<Result>>;
  return async::Pending<All>(
      [&system, targets = std::move(targets), timeout, message = std::move(message)](async::Completion<All> done) {
        system.spawn([=](caf::event_based_actor* relay) {
          struct Gathered {
            std::vector<Result> answers;
            caf::error failure;
            std::size_t left;
          };
          auto gathered = std::make_shared<Gathered>(Gathered{std::vector<Result>(targets.size()), {}, targets.size()});
          auto settled = [gathered, done] {
            if (--gathered->left > 0) return;
            if (gathered->failure)
              done(std::move(gathered->failure));
            else
              done(std::move(gathered->answers));
          };
          if (targets.empty()) {
            done(std::vector<Result>{});
            return;
          }
          for (std::size_t i = 0; i < targets.size(); ++i)
            relay->request(targets[i], timeout, message)
                .then(
                    [gathered, settled, i](Result& r) {
                      gathered->answers[i] = std::move(r);
                      settled();
                    },
                    [gathered, settled](caf::error& e) {
                      if (!gathered->failure) gathered->failure = std::move(e);
                      settled();
                    });
        });
      });
}

}  // namespace taihu
