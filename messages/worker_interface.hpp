#pragma once
// A data-parallel replica's interface (the protocol is described at
// actors/compute/worker_actor.hpp). It sits here, beside its messages, because
// worker handles travel in messages: a node reports its workers to the
// coordinator (messages/cluster.hpp: NodeStarted).

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/compressor_restore.hpp"
#include "messages/evaluation.hpp"
#include "messages/iteration.hpp"
#include "messages/parameters.hpp"
#include "messages/reduced.hpp"
#include "messages/replica_control.hpp"

namespace taihu::msg {

using worker_actor =
    caf::typed_actor<caf::replies_to<caf::get_atom>::with<Parameters>, caf::reacts_to<Parameters>,
                     caf::replies_to<Iterate>::with<IterationDone>, caf::reacts_to<Reduced>,
                     caf::reacts_to<resume_atom>,  // to itself: what its step awaited is there
                     caf::replies_to<stats_atom>::with<WorkerProbe>,
                     caf::replies_to<eval_atom>::with<ReplicaEvaluation>,
                     caf::replies_to<figures_atom>::with<ReplicaFigures>, caf::replies_to<SaveCheckpoint>::with<bool>,
                     caf::replies_to<SaveCompressorState>::with<bool>, caf::replies_to<CompressorRestore>::with<bool>,
                     caf::replies_to<RestoreCheckpoint>::with<bool>>;

}  // namespace taihu::msg
