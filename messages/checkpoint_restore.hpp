#pragma once
// A resumed run's checkpoint, for a worker on a node: its bytes
// (core/train/checkpoint.hpp, encode_checkpoint) rather than its path, since
// a node need not see the coordinator's files. The worker restores its replica
// from it (weights, solver state, rank 0's random generators) and seeks to
// the checkpoint's position in the data; it answers true.

#include <caf/meta/type_name.hpp>

#include <string>

namespace taihu::msg {

struct CheckpointRestore {
  std::string checkpoint;  // encode_checkpoint's bytes
  std::string source;      // where they came from, for errors ("'out/run.ckpt'")
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CheckpointRestore& x) {
  return f(caf::meta::type_name("taihu::msg::CheckpointRestore"), x.checkpoint, x.source);
}

}  // namespace taihu::msg
