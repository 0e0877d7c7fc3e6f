#pragma once
// The gate: the one actor a coordinator serves on its control port
// (control_plane.hpp), and the first a node speaks to. It admits nodes by
// place (the gatekeeper in front of it has already checked the secret and the
// protocol version) and tells the coordinator who joined.
//
//   node  -> gate   JoinRequest   -> the node's index, or an error: the cluster is
//                                    full, the place asked for is taken, or the
//                                    node runs another build
//   coord -> gate   leave_atom    an elastic cluster dropped a node: a place is free
//   gate -> coord   NodeJoined    per admitted node (join_listener)

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>

#include "messages/cluster.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

using gate_actor =
    caf::typed_actor<caf::replies_to<msg::JoinRequest>::with<std::int32_t>, caf::reacts_to<msg::leave_atom>>;

// Who hears of each node the gate admits: the coordinator.
using join_listener = caf::typed_actor<caf::reacts_to<msg::NodeJoined>>;

}  // namespace taihu::compute
