#pragma once
// The runtime's message types, registered once, in one CAF type-ID block
// (taihu's IDs start at caf::first_custom_type_id). Every app and test loads
// it into its config: cfg.add_message_types<caf::id_block::taihu>(). Append
// new types at the END, so that IDs and names stay stable between nodes.
//
// Atoms take no IDs: they are in messages/atoms.hpp.

#include <caf/type_id.hpp>

#include <string>
#include <vector>

#include "messages/atoms.hpp"
#include "messages/batch_loading.hpp"
#include "messages/chunk.hpp"
#include "messages/cluster.hpp"
#include "messages/compressor_restore.hpp"
#include "messages/core_group_work.hpp"
#include "messages/evaluation.hpp"
#include "messages/gradient_ready.hpp"
#include "messages/iteration.hpp"
#include "messages/parameters.hpp"
#include "messages/reduced.hpp"
#include "messages/replica_control.hpp"
#include "messages/shard_init.hpp"
#include "messages/shard_stats.hpp"
#include "messages/tensor_payload.hpp"
#include "messages/vertex_work.hpp"

CAF_BEGIN_TYPE_ID_BLOCK(taihu, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::TensorPayload))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::Chunk))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::GradientReady))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::Reduced))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::ShardInit))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::Iterate))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::IterationStats))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::IterationDone))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::Parameters))

  // Remote nodes (messages/cluster.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::JoinRequest))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::ClusterSetup))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::NodeReady))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::ClusterPeers))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::NodeStarted))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::NodeFailure))

  // Dynamic networks (messages/vertex_work.hpp; more at the end). In-process
  // only: these two took the places of the per-step VertexWork and
  // VertexWorkDone, so that no other type's ID moved.
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::RunVertexPart))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::VertexPartReady))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::RunGraphBatch))

  // Evaluation of any replica (messages/evaluation.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::Scores))
  CAF_ADD_TYPE_ID(taihu, (taihu::ReplicaEvaluation))

  // Simulated devices (messages/core_group_work.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::CoreGroupWork))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::CoreGroupDone))

  CAF_ADD_TYPE_ID(taihu, (taihu::msg::CompressorRestore))  // messages/compressor_restore.hpp
  // What the coordinator asks of a replica (messages/replica_control.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::SaveCheckpoint))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::SaveCompressorState))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::RestoreCheckpoint))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::WorkerProbe))
  CAF_ADD_TYPE_ID(taihu, (taihu::ReplicaFigures))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::NodeJoined))         // messages/cluster.hpp
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::ShardStats))         // messages/shard_stats.hpp
  // Dynamic networks, continued (messages/vertex_work.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::GraphBatchDone))          // messages/vertex_work.hpp
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::WeightGradientTurn))      // messages/vertex_work.hpp
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::WeightGradientsWritten))  // messages/vertex_work.hpp
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::RunEnded))               // messages/cluster.hpp: the end of a run
  // The streaming feed: batch loader and decoder actors (messages/batch_loading.hpp).
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::DecodeRows))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::RowsDecoded))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::LoadFrom))
  CAF_ADD_TYPE_ID(taihu, (taihu::msg::SlotReleased))
CAF_END_TYPE_ID_BLOCK(taihu)

namespace taihu::msg {

// Names of the block's types as registered (what goes on the wire), in ID order.
std::vector<std::string> registered_type_names();

// Startup self-check: the block's types that `system` cannot create by name
// (not registered, or registered under another name). Empty when all is well.
std::vector<std::string> missing_message_types(caf::actor_system& system);

}  // namespace taihu::msg
