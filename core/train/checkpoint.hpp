#pragma once
// Training checkpoints: everything needed to continue a run bit-exactly —
// parameters and model state, solver history, the iteration, the position in
// the data order, and every layer's random generator.
//
// Files are Cereal portable binary behind a small header and followed by a
// checksum; they are written to a temporary file, flushed to disk and renamed
// over the target, so a crash never leaves a half-written checkpoint.

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/bounded_decode.hpp"
#include "core/tensor/tensor.hpp"

namespace taihu {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;

  static NamedTensor from(const std::string& name, const Tensor& tensor);
  // Why the values do not fit the shape (a negative or overflowing
  // dimension, another element count), or "" when they do.
  std::string inconsistency() const;
  // Copies the values into `tensor`, which must have the same shape.
  void restore_into(Tensor& tensor) const;

  static constexpr std::size_t min_encoded_bytes = 3 * sizeof(cereal::size_type);
  template <class Archive>
  void serialize(Archive& archive) {
    archive(bounded(name), bounded(dims), bounded(values));
  }
};

struct Checkpoint {
  std::string net_name;
  int64_t iteration = 0;  // solver steps taken
  int64_t epoch = 0;      // epochs completed
  int64_t batch = 0;      // batches consumed in the current epoch
  uint64_t seed = 0;
  double elapsed_seconds = 0.0;
  double epoch_loss_sum = 0.0;  // training loss summed over the current epoch's batches
  std::vector<NamedTensor> params;        // learnable and state, by name
  std::vector<NamedTensor> solver_state;  // momentum, moments, ...
  std::vector<std::pair<std::string, std::array<uint64_t, 4>>> rngs;  // per layer
  // The convolution kernels `[conv] algorithm = measured` chose (shape and
  // pass -> oneDNN or not; core/layers/convolution_choices.hpp): a resumed
  // run computes with the same ones. Since format 2.
  std::vector<std::pair<std::string, bool>> kernel_choices;

  // Format 2 (current) appends kernel_choices to format 1.
  static constexpr int format = 2;
  template <class Archive>
  void serialize(Archive& archive) {
    serialize_format_1(archive);
    archive(bounded(kernel_choices));
  }
  template <class Archive>
  void serialize_format_1(Archive& archive) {
    archive(bounded(net_name), iteration, epoch, batch, seed, elapsed_seconds, epoch_loss_sum, bounded(params),
            bounded(solver_state), bounded(rngs));
  }
};

// Writes atomically (temp file, fsync, rename). Throws Error on I/O failure,
// leaving any previous file at `path` untouched.
void save_checkpoint(const Checkpoint& checkpoint, const std::filesystem::path& path);
// The framing every checkpoint file shares: 8 bytes of magic (the file's
// kind), the payload's size, the payload, its checksum; written atomically as
// above. load_framed checks all of it and returns the payload.
void save_framed(const std::filesystem::path& path, std::string_view magic, std::string_view payload);
std::string load_framed(const std::filesystem::path& path, std::string_view magic);
// Reads and verifies the header and checksum; throws Error naming the file.
Checkpoint load_checkpoint(const std::filesystem::path& path);
// Gives the checkpoint file `from` a second name `to`, replacing `to`
// atomically: a hard link (no bytes written; a later save to `from` renames a
// new file over it and leaves `to` as it was), or a copy where the file
// system has no hard links. Throws Error when neither works.
void keep_checkpoint_as(const std::filesystem::path& from, const std::filesystem::path& to);
// A checkpoint as bytes (the file's payload) and back, e.g. to send it to
// replicas on nodes that cannot read the file; decoding checks it as loading
// does, naming `source` in errors: no bytes after the checkpoint, no
// negative iteration, epoch or batch, every tensor as large as its shape.
std::string encode_checkpoint(const Checkpoint& checkpoint);
Checkpoint decode_checkpoint(const std::string& payload, const std::string& source, int format = Checkpoint::format);

// Whether a run of `epochs` epochs of `per_epoch` batches can continue from
// the checkpoint `source`: its batch within an epoch, its iteration within
// the run. Throws ConfigError naming the checkpoint and the field.
void check_position(const Checkpoint& checkpoint, const std::string& source, int64_t epochs, int64_t per_epoch);

}  // namespace taihu
