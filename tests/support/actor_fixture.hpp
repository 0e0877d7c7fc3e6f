#pragma once
// A real actor system for doctest cases (CAF's own test DSL must not be
// mixed with doctest): two scheduler threads, taihu's message types.

#include <caf/all.hpp>

#include "messages/type_ids.hpp"

namespace taihu::testing {

struct ActorTestConfig : caf::actor_system_config {
  explicit ActorTestConfig(int threads = 2) {
    add_message_types<caf::id_block::taihu>();
    set("scheduler.max-threads", threads);
    // Tests run on a shared 2-core machine: no aggressive polling when idle.
    set("work-stealing.aggressive-poll-attempts", 10);
  }
};

struct ActorFixture {
  ActorTestConfig config;
  caf::actor_system system{config};
};

}  // namespace taihu::testing
