// The control port's gatekeeper (the first bytes a stranger sends to a
// coordinator): any bytes are refused or time out, never a crash, a large
// allocation or an admission.
#include <spdlog/spdlog.h>

#include <chrono>

#include "fuzz_socket.hpp"
#include "fuzz_support.hpp"
#include "transport/gatekeeper.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  static transport::Gatekeeper* gate = [] {
    spdlog::set_level(spdlog::level::off);
    transport::GatekeeperOptions o;
    o.secret = "fuzzing secret, never guessed by the fuzzer";
    o.version = 4;
    o.handshake_timeout = std::chrono::milliseconds(500);
    return new transport::Gatekeeper(o, [](transport::Admitted a) {
      // Admission needs the HMAC of a secret the input cannot know.
      std::abort();
    });
  }();
  if (!taihu::fuzz::exchange(gate->port(), {}, taihu::fuzz::text_of(data, size))) std::abort();
  return 0;
}
