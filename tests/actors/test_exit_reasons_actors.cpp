// What a monitor learns of an actor's end (actors/exception_reason.hpp): the
// text of the exception that escaped a handler, and a plain name for a
// normal exit, whose caf::error is empty (its context must not be read).

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "actors/exception_reason.hpp"
#include "support/actor_fixture.hpp"

using namespace taihu;

namespace {

caf::behavior throws_on_request(caf::event_based_actor* self) {
  self->set_exception_handler(exception_reason);
  return {[](int) -> int { throw std::runtime_error("the kernel saw a NaN in layer 'ip1'"); }};
}

caf::behavior quits_on_request(caf::event_based_actor* self) {
  return {[self](int) { self->quit(); }};
}

caf::error exit_reason_of(caf::actor_system& system, caf::behavior (*body)(caf::event_based_actor*)) {
  caf::scoped_actor self{system};
  auto actor = system.spawn(body);
  self->monitor(actor);
  self->send(actor, 1);
  caf::error reason;
  self->receive([&](const caf::down_msg& dm) { reason = dm.reason; });
  return reason;
}

}  // namespace

TEST_SUITE("exit reasons") {
  TEST_CASE_FIXTURE(testing::ActorFixture, "a monitor reads the exception's text, or 'normal exit', from a down message") {
    const caf::error thrown = exit_reason_of(system, throws_on_request);
    CHECK(thrown);
    CHECK(reason_text(system, thrown) == "the kernel saw a NaN in layer 'ip1'");
    const caf::error normal = exit_reason_of(system, quits_on_request);
    CHECK_FALSE(normal);
    CHECK(reason_text(system, normal) == "normal exit");
    // An error without the exception's text is rendered by CAF.
    CHECK(reason_text(system, caf::make_error(caf::sec::request_timeout)).find("request_timeout") != std::string::npos);
  }
}
