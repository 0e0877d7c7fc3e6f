#pragma once
// The packed, variable-size message one rank contributes to a bucket's
// allgather (reference §2.8), and decompression: the sum of every rank's
// message into a dense buffer (§2.9).
//
// A message is a sequence of 32-bit words (it travels as a float payload,
// copied bit for bit; nothing does arithmetic on it in transit):
//   [magic 'TSPK', version, extent, block count]
//   per block: [kind, offset, length, count] then the payload
//     dense_f32:   length floats
//     dense_f16:   ceil(length/2) words, two IEEE halves each (low half first)
//     sparse:      count indices (relative to offset, ascending), count floats
//     sparse_mean: count indices, one float added at each of them (RedSync's ASQ)
// A block covers [offset, offset + length) of the bucket's `extent` floats.
// Sizes are checked on decoding; a malformed message throws taihu::Error.
//
// Decompression ADDS: the same index from several ranks (or blocks) is summed,
// never overwritten. decompress_sum adds the messages in the order given
// (rank order), so every rank computes the same floats.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace taihu::compress {

enum class BlockKind : std::uint32_t { dense_f32 = 1, dense_f16 = 2, sparse = 3, sparse_mean = 4 };

inline constexpr std::uint32_t packed_magic = 0x4B505354;  // "TSPK"
inline constexpr std::uint32_t packed_version = 1;

// Writes a message block by block into a reused word vector.
class PackedWriter {
 public:
  // Starts a message for a bucket of `extent` floats in `words` (cleared).
  PackedWriter(std::vector<std::uint32_t>& words, std::size_t extent);

  void dense_f32(std::size_t offset, std::span<const float> values);
  // Values already converted to IEEE halves (see to_half).
  void dense_f16(std::size_t offset, std::span<const std::uint16_t> halves);
  void sparse(std::size_t offset, std::size_t length, std::span<const std::uint32_t> index,
              std::span<const float> value);
  void sparse_mean(std::size_t offset, std::size_t length, std::span<const std::uint32_t> index, float mean);

 private:
  std::size_t begin_block(BlockKind kind, std::size_t offset, std::size_t length, std::size_t count,
                          std::size_t payload_words);
  std::vector<std::uint32_t>& words_;
  std::size_t extent_;
};

// The most words a message can take whose blocks cover `block_lengths` floats
// (one block each), whatever their kinds: a sparse block naming every index,
// or a sparse_mean block over an empty range (its mean word), is the widest.
std::size_t max_packed_words(std::span<const std::size_t> block_lengths);

// Bytes a message of `words` words takes on the wire.
inline std::size_t packed_bytes(std::span<const std::uint32_t> words) { return words.size() * 4; }

// dense[i] += the message's value at i, for every block. dense.size() must
// equal the message's extent.
void decompress_add(std::span<const std::uint32_t> message, std::span<float> dense);
// dense = sum of all messages (dense is zeroed first).
void decompress_sum(std::span<const std::span<const std::uint32_t>> messages, std::span<float> dense);

// The same, for a message carried as floats (bit copies of the words, as in a
// float payload); copies the words once.
void decompress_add(std::span<const float> message, std::span<float> dense);
void decompress_sum(std::span<const std::span<const float>> messages, std::span<float> dense);

// Number of entries a message carries (dense blocks count every element).
std::size_t packed_entries(std::span<const std::uint32_t> message);

// IEEE binary16 conversion, round to nearest even; values beyond the half
// range saturate to ±65504 (so error feedback keeps the rest), NaN stays NaN.
void to_half(std::span<const float> in, std::span<std::uint16_t> out);
void from_half(std::span<const std::uint16_t> in, std::span<float> out);

// Helpers for carrying words in a float payload (bit copies).
std::vector<float> words_as_floats(std::span<const std::uint32_t> words);
std::vector<std::uint32_t> floats_as_words(std::span<const float> floats);

}  // namespace taihu::compress
