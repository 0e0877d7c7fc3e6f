#pragma once
// The control plane's transport: CAF's BASP, spoken only on sockets that the
// gatekeeper (transport/gatekeeper.hpp) has authenticated both ways, and
// through TLS where the coordinator's [cluster] tls asks for it (a relay
// carries CAF's bytes: transport/tls_relay.hpp). The coordinator's port is
// the gatekeeper's; CAF never listens itself.

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "messages/cluster.hpp"
#include "transport/gatekeeper.hpp"

namespace taihu::compute {

// Coordinator: listens on options' address and port; every connection the
// gatekeeper admits becomes a BASP connection that is served `gate` (what
// the node's join_control_port returns). Throws net::NetError.
std::unique_ptr<transport::Gatekeeper> serve_control_port(caf::actor_system& system, const msg::gate_actor& gate,
                                                    transport::GatekeeperOptions options);

// Node: connects through the gatekeeper at options' host and port and returns
// the actor it serves, and whether the cluster uses certificates. A TLS relay
// runs on `relay`, which must outlive the actor system's use of the
// connection (control_plane_thread() does). Throws net::GateRefused (refused:
// wrong secret, version or certificate; retrying will not help) or
// net::NetError (not reachable yet, or it does not prove the secret).
struct JoinedControlPort {
  msg::gate_actor gate;
  bool certificates = false;  // the cluster uses certificates (on the data plane too)
  std::string local_address;  // this node's address on the connection (transport::GateConnection)
};
JoinedControlPort join_control_port(caf::actor_system& system, const transport::GateClientOptions& options,
                                    transport::IoThread& relay);

}  // namespace taihu::compute
