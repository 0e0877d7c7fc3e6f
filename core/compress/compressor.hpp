#pragma once
// Residual gradient compression state (reference §2.1–2.6): error feedback,
// DGC momentum correction and momentum-factor masking, warm-up / density
// schedule, local clipping, selection, RedSync's sign-alternating
// quantization (ASQ), and the fp16 / random-k baselines.
//
// One Compressor owns one range of a bucket (a layer's parameter, or the whole
// bucket); a BucketCompressor strings the ranges of a bucket together and
// writes ONE packed message per iteration (core/compress/packed.hpp).
//
// Per iteration, with s = the caller's scale (e.g. 1/P) times the clip factor
// (fma = one rounding; the exact float expressions, so tests can redo them):
//   no momentum:  V = fma(s, g, V)
//   vanilla:      U = fma(m, U, s·g) ;      V = V + U
//   Nesterov:     U = m·fma(s, g, U) ;      V = fma(s, g, V + U)
//   send the selected entries of V; sparse: V[I] = 0, ASQ: V[I] = V[I] - mean,
//   fp16: V = V - half(V); masking: U[I] = 0 (sparse iterations only).
// Invariant (tested, bit for bit except ASQ): sent + new residual = V before
// sending. Without error feedback the residual is dropped after each send
// (and random-k then scales its values by n/k, so the sum stays unbiased).
//
// With momentum > 0 the compressor applies the momentum: the solver must then
// take a plain SGD step (momentum 0) on the decompressed sum, and weight decay
// must already be in g. Decompression sums without scaling: the 1/P belongs
// in `scale`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/bounded_decode.hpp"
#include "core/common/random.hpp"
#include "core/compress/packed.hpp"
#include "core/compress/select.hpp"

namespace taihu::compress {

enum class Method : std::uint8_t { dense, fp16, topk, trimmed, bsearch, dgc, randomk };
std::string_view method_name(Method method);
inline bool is_sparse(Method m) { return m != Method::dense && m != Method::fp16; }

// Density per iteration: `dense_iterations` dense (RedSync's warm-up), then
// `ramp_stages` stages of `stage_iterations` each at DGC's geometric ramp
// c^(e+1), c = density^(1/(stages+1)), then `density`. 1.0 means dense.
struct DensitySchedule {
  double density = 0.001;
  std::uint64_t dense_iterations = 0;
  int ramp_stages = 0;
  std::uint64_t stage_iterations = 0;
  double at(std::uint64_t iteration) const;
  bool dense_at(std::uint64_t iteration) const { return iteration < dense_iterations; }
};

struct Options {
  Method method = Method::bsearch;
  DensitySchedule schedule;
  bool quantize = false;        // ASQ: indices + one mean, sign alternating per iteration
  int reuse_interval = 0;       // bsearch: search every N iterations, reuse the threshold between
  double bsearch_eps = 1e-4;
  bool error_feedback = true;   // keep what was not sent for later
  float momentum = 0;           // > 0: momentum correction in the compressor
  bool nesterov = false;
  bool momentum_masking = true;
  float clip_norm = 0;          // > 0: clip g to L2 norm clip_norm / sqrt(workers) first (DGC)
  int workers = 1;
  std::uint64_t seed = 0;       // random-k and DGC sampling; equal seeds give equal random-k indices
};

// What a compressor carries from one iteration to the next: all a resumed
// run needs to continue exactly where it stopped.
struct CompressorState {
  std::vector<float> residual;  // V
  std::vector<float> velocity;  // U (empty without momentum)
  std::uint64_t iteration = 0;
  bool positive_turn = true;
  ThresholdReuse::State reuse;
  std::array<std::uint64_t, 4> rng{};

  static constexpr std::size_t min_encoded_bytes = 2 * sizeof(cereal::size_type);
  template <class Archive>
  void serialize(Archive& archive) {
    archive(bounded(residual), bounded(velocity), iteration, positive_turn, reuse, rng);
  }
};

class Compressor {
 public:
  Compressor(std::size_t elements, Options options);

  // Adds scale·grad (clipped, momentum-corrected) into the residual.
  void accumulate(std::span<const float> grad, float scale = 1.0f);
  // Chooses what to send, writes it as a block at `offset` of the bucket, and
  // removes it from the residual. One call per iteration.
  void emit(PackedWriter& writer, std::size_t offset) { emit(writer, offset, nullptr); }
  // accumulate + emit, in ONE pass over g, V (and U) for exact top-k, binary
  // search and threshold reuse: the pass that updates the residual also
  // computes the selector's statistics and candidates (the threshold estimated
  // beforehand from a strided sample of the updated values). Same floats and
  // same selection as the two calls (tested).
  void step(std::span<const float> grad, float scale, PackedWriter& writer, std::size_t offset);

  std::size_t elements() const { return residual_.size(); }
  const Options& options() const { return options_; }
  std::span<const float> residual() const { return residual_; }
  std::span<const float> velocity() const { return velocity_; }
  std::uint64_t iteration() const { return iteration_; }
  // What the last emit selected (empty after a dense send) and how.
  const Selection& last_selection() const { return selection_; }
  const SelectInfo& last_info() const { return info_; }
  std::size_t last_sent_entries() const { return last_entries_; }
  // The clip factor the last accumulate applied (1 = not clipped).
  float last_clip_factor() const { return clip_factor_; }

  CompressorState state() const;
  // Throws taihu::Error when the state is of another size or momentum setting.
  void restore(const CompressorState& state);

 private:
  void emit(PackedWriter& writer, std::size_t offset, const Prescan* pre);
  float effective_scale(std::span<const float> grad, float scale);

  Options options_;
  std::vector<float> residual_;  // V
  std::vector<float> velocity_;  // U (empty without momentum)
  std::vector<std::uint16_t> halves_;
  std::vector<float> dehalved_;
  Selection selection_;
  SelectScratch scratch_;
  SelectInfo info_;
  ThresholdReuse reuse_;
  Rng rng_;
  std::uint64_t iteration_ = 0;
  bool positive_turn_ = true;  // ASQ parity
  std::size_t last_entries_ = 0;
  float clip_factor_ = 1.0f;
};

// One range of a bucket and how it is compressed.
struct Segment {
  std::string name;  // for logs
  std::size_t offset = 0;
  std::size_t count = 0;
  Options options;
};

// What a shard actor does per bucket and iteration, on every rank:
//   1. compress(gradient, 1.0f / P, words): this rank's packed message (the
//      fused one-pass step where the method allows);
//   2. allgather-v the messages (their sizes differ per rank: exchange sizes
//      first, or use a fixed capacity and the length in the header); they
//      travel as float payloads (words_as_floats / TensorPayload::copy_of);
//   3. decompress_sum(messages in rank order, dense): the same floats on
//      every rank; duplicates across ranks add up;
//   4. the solver's step on `dense` (plain SGD when momentum is corrected here).
// One BucketCompressor per bucket and rank: it holds the residual (and
// velocity) of its bucket, ~1-2x the bucket's size.
class BucketCompressor {
 public:
  // Segments in order, tiling [0, elements) exactly (checked).
  BucketCompressor(std::size_t elements, std::vector<Segment> segments);

  void compress(std::span<const float> grad, float scale, std::vector<std::uint32_t>& message);

  std::size_t elements() const { return elements_; }
  // The longest message compress() can write, whatever it selects.
  std::size_t max_message_words() const;
  std::size_t segments() const { return parts_.size(); }
  const Segment& segment(std::size_t i) const { return segments_[i]; }
  Compressor& compressor(std::size_t i) { return parts_[i]; }
  const Compressor& compressor(std::size_t i) const { return parts_[i]; }
  // Entries sent by the last compress (dense segments count every element).
  std::size_t last_sent_entries() const;
  // True when every segment is dense (the caller may prefer a plain allreduce
  // then; note the compressor would still apply momentum correction).
  bool all_dense() const;

  // One state per segment, in order.
  std::vector<CompressorState> state() const;
  void restore(const std::vector<CompressorState>& states);

 private:
  std::size_t elements_;
  std::vector<Segment> segments_;
  std::vector<Compressor> parts_;
};

// L2 norm of scale·g that DGC's local clipping allows: clip_norm / sqrt(workers).
// For global (all-layer) clipping, compute the factor once from every
// bucket's squared norm and pass it in `scale`.
float local_clip_factor(double squared_norm, float clip_norm, int workers);

}  // namespace taihu::compress
