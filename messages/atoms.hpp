#pragma once
// The runtime's atoms: tags of payload-free messages (at most 10 characters).
// They sit below every message header, so that a typed interface declared
// beside its messages (messages/cluster.hpp, messages/worker_interface.hpp)
// can name them. An atom is its value: it takes no type ID, and moving one
// here from the type-ID block moved no other type's ID.

#include <caf/atom.hpp>
#include <caf/type_id.hpp>

CAF_ADD_ATOM(taihu, taihu::msg, stats_atom, "stats")            // ask an actor for its counters
CAF_ADD_ATOM(taihu, taihu::msg, stop_atom, "stop")              // finish the current step, then quit
CAF_ADD_ATOM(taihu, taihu::msg, ready_atom, "ready")            // a worker or shard is wired up
CAF_ADD_ATOM(taihu, taihu::msg, eval_atom, "evaluate")          // evaluate on held-out data: ReplicaEvaluation
CAF_ADD_ATOM(taihu, taihu::msg, figures_atom, "figures")        // a replica's own figures at the end
CAF_ADD_ATOM(taihu, taihu::msg, compressor_atom, "compressor")  // a shard's compressor state (get / set)
CAF_ADD_ATOM(taihu, taihu::msg, poll_atom, "poll")              // a waiting shard looks at its transport (to itself)
CAF_ADD_ATOM(taihu, taihu::msg, resume_atom, "resume")          // a worker's step may go on (to itself)

// Clusters (messages/cluster.hpp).
CAF_ADD_ATOM(taihu, taihu::msg, reform_atom, "reform")  // a node drops its replicas for a new cluster
CAF_ADD_ATOM(taihu, taihu::msg, leave_atom, "leave")    // to the gate: a place is free; to a node: it is dropped
CAF_ADD_ATOM(taihu, taihu::msg, join_deadline_atom, "joindeadln")  // the coordinator's join_timeout passed
CAF_ADD_ATOM(taihu, taihu::msg, tick_atom, "tick")                 // a timer: a node checks that it was not stopped
CAF_ADD_ATOM(taihu, taihu::msg, teardown_atom, "teardown")         // a node's teardown took too long
