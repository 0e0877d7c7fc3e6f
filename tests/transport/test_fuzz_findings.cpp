// Inputs the fuzzers (tests/fuzz/) found, each kept as a regression test of
// the contract they check: bad input is a taihu::Error with a message.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "support/loopback.hpp"
#include "transport/status_server.hpp"

using namespace taihu;

TEST_SUITE("fuzz findings") {
  TEST_CASE("a value that starts with '#' dumps to text that reads back the same (fuzz_config)") {
    // "key =#x" is a value: '#' starts a comment only at a line's start or after a blank.
    const auto doc = config::Document::parse("listen =# not a comment\n[s]\nk =;x\n", "a.ini");
    CHECK(doc.root().get<std::string>("listen") == "# not a comment");
    const std::string dumped = doc.dump();
    const auto again = config::Document::parse(dumped, "dumped.ini");
    CHECK(again.root().get<std::string>("listen") == "# not a comment");
    CHECK(again.section("s").get<std::string>("k") == ";x");
    CHECK(again.dump() == dumped);
  }

  TEST_CASE("an input dimension of 0 is a ConfigError at its line (fuzz_net: was a division by zero in conv)") {
    auto doc = std::make_shared<config::Document>(config::Document::parse(
        "[net]\n[input data]\nshape = 0 8 8\n[layer conv1]\ntype = Convolution\nbottom = data\ntop = conv1\n"
        "num_output = 4\nkernel_size = 3\n",
        "zero.ini"));
    CHECK_THROWS_WITH_AS(Net(doc, 2, 1), doctest::Contains("zero.ini:3"), ConfigError);
    CHECK_THROWS_WITH_AS(Net(doc, 2, 1), doctest::Contains("every dimension must be at least 1, not 0"), ConfigError);
  }

  TEST_CASE("a status client that closes without a request frees its slot at once (fuzz_status_request)") {
    // Was: held until the 5 s request timeout, so 32 such clients locked the port for 5 s.
    transport::StatusServer server("127.0.0.1", 0, {{"/metrics", {"text/plain", [] { return std::string("x\n"); }}}});
    const auto start = std::chrono::steady_clock::now();
    const int fd = testing::connect_loopback(server.port());
    REQUIRE(fd >= 0);
    ::shutdown(fd, SHUT_WR);
    CHECK(testing::read_until_closed(fd, std::chrono::seconds(4)));
    ::close(fd);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }
}
