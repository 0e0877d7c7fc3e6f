#pragma once
// What a shard actor (plain or compressed) has been handed: its wiring (the
// peers and the owner, once), its owner's inputs, queued by iteration, and
// its peers' chunks that came before their step, kept by (iteration, sender,
// seq); with the checks every kind of shard makes of them. A message that
// does not fit throws, naming the shard, so the actor ends with a reason its
// owner sees.

#include <caf/typed_actor.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/common/check.hpp"
#include "messages/chunk.hpp"
#include "messages/gradient_ready.hpp"
#include "actors/sync/shard_actor.hpp"
#include "messages/shard_init.hpp"

namespace taihu::sync {

class ShardInbox {
 public:
  // `name` names the shard in errors ("shard 3/1"); it takes bucket
  // `bucket` of `elements` floats, among `ranks` ranks.
  void init(std::string name, std::uint32_t bucket, std::size_t elements, int ranks) {
    name_ = std::move(name);
    bucket_ = bucket;
    elements_ = elements;
    ranks_ = ranks;
  }
  const std::string& name() const { return name_; }

  // The peers and the owner, once. `peers_optional`: the list may be empty
  // (a router takes every chunk).
  void wire(msg::ShardInit init, bool peers_optional) {
    require(!wired_, "{}: wired twice", name_);
    require(init.bucket == bucket_ && (static_cast<int>(init.peers.size()) == ranks_ ||
                                       (peers_optional && init.peers.empty())),
            "{}: init for bucket {} with {} peers, expected {} peers", name_, init.bucket, init.peers.size(), ranks_);
    peers_ = std::move(init.peers);
    owner_ = std::move(init.owner);
    wired_ = true;
  }
  bool wired() const { return wired_; }
  // Rank r's shard (empty where a router takes its chunks).
  const msg::chunk_receiver& peer(int rank) const {
    require(static_cast<std::size_t>(rank) < peers_.size() && peers_[static_cast<std::size_t>(rank)],
            "{}: no peer handle for rank {}", name_, rank);
    return peers_[static_cast<std::size_t>(rank)];
  }
  const reduced_receiver& owner() const { return owner_; }

  // The owner's input for one iteration; `running`: the iteration in progress, if any.
  void queue(msg::GradientReady ready, std::optional<std::uint64_t> running) {
    require(ready.bucket == bucket_ && ready.buffer.size() == elements_,
            "{}: gradients of bucket {} with {} floats, expected {}", name_, ready.bucket, ready.buffer.size(),
            elements_);
    require(!last_completed_ || ready.iteration > *last_completed_, "{}: iteration {} is not after the completed {}",
            name_, ready.iteration, *last_completed_);
    require(running != ready.iteration && !queued_.contains(ready.iteration), "{}: iteration {} started twice", name_,
            ready.iteration);
    queued_.emplace(ready.iteration, std::move(ready));
  }
  bool has_input() const { return !queued_.empty(); }
  // The queued input of the earliest iteration (has_input() first).
  msg::GradientReady next_input() {
    auto node = queued_.extract(queued_.begin());
    return std::move(node.mapped());
  }

  // A peer's chunk, kept until its step takes it.
  void keep(msg::Chunk chunk) {
    require(chunk.bucket == bucket_ && chunk.sender >= 0 && chunk.sender < ranks_, "{}: chunk of bucket {} from rank {}",
            name_, chunk.bucket, chunk.sender);
    require(!last_completed_ || chunk.iteration > *last_completed_,
            "{}: chunk {} from rank {} of iteration {}, already completed {}", name_, chunk.seq, chunk.sender,
            chunk.iteration, *last_completed_);
    const Key key{chunk.iteration, static_cast<int>(chunk.sender), chunk.seq};
    const bool fresh = arrived_.emplace(key, std::move(chunk)).second;
    require(fresh, "{}: chunk {} from rank {} of iteration {} arrived twice", name_, std::get<2>(key),
            std::get<1>(key), std::get<0>(key));
  }
  // The kept chunk of (iteration, sender, seq), or null.
  msg::Chunk* find(std::uint64_t iteration, int sender, std::uint32_t seq) {
    auto it = arrived_.find({iteration, sender, seq});
    return it == arrived_.end() ? nullptr : &it->second;
  }
  // Drops a kept chunk (which releases a same-host sender's memory).
  void drop(std::uint64_t iteration, int sender, std::uint32_t seq) { arrived_.erase({iteration, sender, seq}); }

  // The iteration is done: older inputs and chunks are refused from now on.
  void complete(std::uint64_t iteration) { last_completed_ = iteration; }

 private:
  using Key = std::tuple<std::uint64_t, int, std::uint32_t>;  // (iteration, sender, seq)
  std::string name_;
  std::uint32_t bucket_ = 0;
  std::size_t elements_ = 0;
  int ranks_ = 0;
  bool wired_ = false;
  std::vector<msg::chunk_receiver> peers_;
  reduced_receiver owner_;
  std::optional<std::uint64_t> last_completed_;
  std::map<Key, msg::Chunk> arrived_;
  std::map<std::uint64_t, msg::GradientReady> queued_;
};

}  // namespace taihu::sync
