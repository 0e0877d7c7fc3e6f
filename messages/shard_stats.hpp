#pragma once
// A shard actor's counters over all its iterations (answer to stats_atom),
// one shape for both kinds of shard (actors/sync/shard_actor.hpp,
// compressed_shard_actor.hpp); a count a kind does not keep stays 0.

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace taihu::msg {

struct ShardStats {
  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;   // arrived before the step that takes them
  std::uint64_t buffer_copies = 0;  // owner's buffers the shard had to copy before writing (plain)
  std::uint64_t copied_floats = 0;  // floats its sends copied rather than passed as views (plain)
  std::uint64_t bytes_sent = 0;     // payload (compressed)
  std::uint64_t entries_sent = 0;   // entries of this rank's own packed messages (compressed)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ShardStats& x) {
  return f(caf::meta::type_name("taihu::msg::ShardStats"), x.chunks_sent, x.early_chunks, x.buffer_copies,
           x.copied_floats, x.bytes_sent, x.entries_sent);
}

}  // namespace taihu::msg
