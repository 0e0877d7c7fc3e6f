#pragma once
// A collective as data: for each of P ranks, an ordered list of steps over a
// buffer of n floats that has the same layout on every rank.
//
// Step semantics (what an executor, actor or simulator must do), rank by rank:
//   1. Steps run strictly in order; step i+1 starts only when step i is done.
//   2. If the step sends: snapshot buffer[send.offset, +send.length) as it is
//      *before* this step's receive, and send it to `send_to`. Sends never
//      block (they are buffered messages).
//   3. If the step receives: wait for the message from `recv_from` whose
//      sequence number is `recv_seq`, then either add it element-wise into
//      buffer[recv] (Combine::reduce) or overwrite buffer[recv] (copy).
// A message is identified by (sender, receiver, seq): seq counts the messages
// the sender sends to that receiver, in step order. The range travels with it
// and is the same on both sides (validated by finalize()), so messages may
// arrive in any order; a receiver keeps early ones until their step comes.
//
// Determinism: every reduction is a step on one rank, in a fixed step order,
// so each output element is one fixed expression tree of the inputs. Every
// algorithm here reduces each element on exactly one rank and then copies the
// result everywhere, so all ranks end bit-identical, whatever the arrival order.
//
// Zero-length transfers are never emitted (both sides know every length).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taihu::collectives {

struct Range {
  std::size_t offset = 0;
  std::size_t length = 0;
  std::size_t end() const { return offset + length; }
  bool empty() const { return length == 0; }
  friend bool operator==(const Range&, const Range&) = default;
};

enum class Combine : std::uint8_t { copy, reduce };

struct Step {
  int send_to = -1;  // < 0: the step sends nothing
  Range send;
  int recv_from = -1;  // < 0: the step waits for nothing
  Range recv;
  Combine combine = Combine::copy;
  // Assigned by Schedule::finalize().
  std::uint32_t send_seq = 0;
  std::uint32_t recv_seq = 0;

  bool sends() const { return send_to >= 0; }
  bool receives() const { return recv_from >= 0; }

  static Step send_only(int to, Range range) {
    Step s;
    s.send_to = to;
    s.send = range;
    return s;
  }
  static Step receive_only(int from, Range range, Combine combine) {
    Step s;
    s.recv_from = from;
    s.recv = range;
    s.combine = combine;
    return s;
  }
  // Sends `out` to `to` and receives `in` from `from` in one step.
  static Step exchange(int to, Range out, int from, Range in, Combine combine) {
    Step s = receive_only(from, in, combine);
    s.send_to = to;
    s.send = out;
    return s;
  }
};

enum class Collective : std::uint8_t { allreduce, broadcast, allgatherv };

enum class Algorithm : std::uint8_t {
  ring,            // allreduce: ring reduce-scatter + ring allgather; allgatherv: ring
  rabenseifner,    // allreduce: recursive halving + doubling, any P (fold/unfold extras)
  topology_aware,  // Rabenseifner on ranks relabelled round-robin over groups (swCaffe)
  hierarchical,    // reduce to group leaders, allreduce among leaders, broadcast back
  binomial,        // broadcast: binomial tree from the root
  scatter_allgather,  // broadcast: binomial scatter of P chunks, then ring allgather
  direct,          // allreduce: each rank sends every peer its chunk at once, then the sums
  pipelined_ring,  // allreduce: the ring in segments, each passed on as soon as it is combined
  reduce_broadcast,  // allreduce: binomial reduce to rank 0, binomial broadcast (a plain MPI's)
};

std::string_view name(Collective c);
std::string_view name(Algorithm a);
// Inverse of name(Algorithm); throws taihu::Error for an unknown name.
Algorithm parse_algorithm(std::string_view text);

struct Schedule {
  Collective collective = Collective::allreduce;
  Algorithm algorithm = Algorithm::ring;
  int ranks = 0;
  std::size_t elements = 0;          // buffer length in floats
  std::vector<std::vector<Step>> steps;  // steps[rank]

  Schedule() = default;
  Schedule(Collective c, Algorithm a, int p, std::size_t n)
      : collective(c), algorithm(a), ranks(p), elements(n), steps(static_cast<std::size_t>(p)) {}

  // Appends one step to `rank`; drops empty transfers and empty steps.
  void add(int rank, Step step);
  // Appends a lone transfer: `from` sends `range` to `to`, which combines it.
  void transfer(int from, int to, Range range, Combine combine);

  // Numbers the messages and checks that every send has exactly one matching
  // receive with the same range, and that ranges fit the buffer. Throws
  // taihu::Error describing the first mismatch.
  void finalize();

  std::size_t elements_sent(int rank) const;
  std::size_t elements_received(int rank) const;
  std::size_t messages_sent(int rank) const;
};

// The same collective with no message longer than `max_elements`: each step
// becomes ceil(longest / max) steps carrying consecutive pieces of its send
// and receive ranges, so a transport can bound message sizes and credits.
// Each element is still combined once per original step, in the same order,
// so results keep their bits. Requires that no step receives into the range
// it sends (true of every generator here); throws taihu::Error otherwise.
Schedule segment(const Schedule& schedule, std::size_t max_elements);

// Balanced split of n elements into `parts` contiguous chunks: the first
// n % parts chunks get one element more. Works for n < parts (empty chunks).
Range chunk(std::size_t n, int parts, int index);

}  // namespace taihu::collectives
