#pragma once
// Where a chunk's floats are when they have not been copied yet: in another
// process of this host (the data plane's same-host path, actors/net/). The
// receiving step reads them straight into place — into its buffer for a
// copy, through a small cache-resident block for a sum — so a message is
// copied once, when and where it is consumed.
//
// Destroying the source releases the sender's memory (it is acknowledged):
// drop it as soon as the floats have been read.

#include <cstddef>

namespace taihu::msg {

class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual std::size_t size() const = 0;  // floats
  // Copies floats [first, first + n) to `to`; throws taihu::Error naming the
  // sender if they cannot be read (it has gone).
  virtual void read(std::size_t first, std::size_t n, float* to) const = 0;
  // The floats themselves when this process can read them where they are
  // (the sender's shared arena, mapped here), valid while the source lives;
  // else null.
  virtual const float* data() const { return nullptr; }
};

}  // namespace taihu::msg
