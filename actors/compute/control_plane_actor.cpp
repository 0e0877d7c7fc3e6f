#include "actors/compute/control_plane.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <set>

#include "actors/exception_reason.hpp"
#include "core/common/check.hpp"

namespace taihu::compute {
namespace {

// CAF's BASP broker: it takes a connected socket as a scribe, as its own
// acceptor and connector hand it one (caf/io/basp_broker.hpp).
caf::actor basp_broker(caf::actor_system& system) {
  return system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
}

}  // namespace

std::unique_ptr<transport::Gatekeeper> serve_control_port(caf::actor_system& system, const msg::gate_actor& gate,
                                                    transport::GatekeeperOptions options) {
  auto& mm = system.middleman();
  const caf::actor basp = basp_broker(system);
  // BASP publishes an untyped pointer (its publish message, as caf::io::publish, takes one).
  const auto whom = caf::actor_cast<caf::strong_actor_ptr>(gate);
  auto port = std::make_shared<std::uint16_t>(0);
  auto gatekeeper = std::make_unique<transport::Gatekeeper>(std::move(options), [&mm, basp, whom, port](transport::Admitted a) {
    // In the middleman's own thread: the scribe joins its event loop, and
    // BASP greets the node as it greets any accepted connection (the server
    // handshake naming `gate` as the actor published at this port).
    mm.run_later([&mm, basp, whom, port, fd = a.fd] {
      auto scribe = mm.backend().new_scribe(fd);
      caf::anon_send(basp, caf::publish_atom_v, std::move(scribe), *port, whom, std::set<std::string>{});
    });
    spdlog::debug("control port: admitted '{}' from {}{}", a.name, a.peer, a.tls ? " (TLS)" : "");
  });
  *port = gatekeeper->port();
  return gatekeeper;
}

JoinedControlPort join_control_port(caf::actor_system& system, const transport::GateClientOptions& options,
                                    transport::IoThread& relay) {
  const auto [fd, tls, certificates, local_address] = transport::admit_through_gate(options, relay);
  auto& mm = system.middleman();
  caf::io::scribe_ptr scribe;
  try {
    scribe = mm.backend().new_scribe(fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  caf::scoped_actor self{system};
  msg::gate_actor gate;
  std::string error;
  self->request(basp_broker(system), std::chrono::seconds(30), caf::connect_atom_v, std::move(scribe), options.port)
      .receive(
          [&](caf::node_id&, caf::strong_actor_ptr& addr, std::set<std::string>&) {
            // BASP names the actor published at the port by its untyped
            // address; the coordinator publishes its gate there, nothing else.
            gate = caf::actor_cast<msg::gate_actor>(addr);
          },
          [&](caf::error& e) { error = reason_text(system, e); });
  require<transport::NetError>(gate != nullptr, "the coordinator at {}:{} admitted this node but served no actor{}",
                         options.host, options.port, error.empty() ? "" : ": " + error);
  spdlog::info("node '{}': control plane to {}:{} {}", options.name, options.host, options.port,
               !tls           ? "runs without TLS (both on one host, or the coordinator's [cluster] tls = off)"
               : certificates ? "runs TLS 1.3 (certificates verified both ways)"
                              : "runs TLS 1.3 (keyed by the cluster secret)");
  if (options.certificates.given() && !certificates)
    spdlog::info("node '{}': the cluster authenticates by its secret, not certificates: this node's are not used",
                 options.name);
  return {gate, certificates, local_address};
}

}  // namespace taihu::compute
