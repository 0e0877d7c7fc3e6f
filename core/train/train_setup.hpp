#pragma once
// The parts of a training run that do not depend on how many replicas train:
// the root keys of an application config, building the net and the data
// sources, and evaluating on the test set. Shared by the single-replica
// Trainer and the data-parallel runtime (actors/compute), so that both read
// the same config the same way.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/train/checkpoint.hpp"

namespace taihu {

class Net;
class Dataset;
class BatchFeed;
class Solver;
struct Param;

struct TrainSettings {
  int64_t epochs = 1;
  int64_t batch_size = 64;  // per replica
  int64_t test_batch_size = 1000;
  uint64_t seed = 1;
  int64_t display = 100;
  int64_t workers = 1;  // replicas; > 1 needs the actor runtime
  std::string data_blob = "data";
  std::string label_blob = "label";
  std::string loss_blob = "loss";
  std::string accuracy_blob = "accuracy";

  // Reads (and validates) the root keys above; absent keys keep `defaults`.
  static TrainSettings read(const config::Section& root, const TrainSettings& defaults);
  static TrainSettings read(const config::Section& root) { return read(root, TrainSettings{}); }
};

// The net named by the root key `net`, set up for `batch` samples; checks
// that it has the data, label and loss blobs.
std::unique_ptr<Net> build_net(const config::Document& doc, const TrainSettings& settings, int64_t batch,
                               uint64_t seed);

// Throws ConfigError unless the data set's samples fit the net's input.
void check_sample_shape(const config::Document& doc, const Net& net, const Dataset& data,
                        const TrainSettings& settings);

struct Evaluation {
  double loss = 0.0;
  double accuracy = 0.0;  // fraction in [0, 1]; 0 when the net has no accuracy blob
};

// One pass over `test` in the test phase; leaves the net in the train phase at
// `train_batch` samples.
Evaluation evaluate(Net& net, BatchFeed& test, const TrainSettings& settings, int64_t train_batch);

// Where a run stands, as a checkpoint stores it.
struct TrainPosition {
  int64_t epoch = 0;  // completed epochs
  int64_t batch = 0;  // batches done in the current epoch
  double elapsed_seconds = 0.0;
  double epoch_loss_sum = 0.0;
};

// A checkpoint of named parameters (a model called `name`), their solver's
// state and a position; restore checks that it fits (name, seed, parameter
// names) and returns the position. One at iteration 0 without solver state
// (imported weights: taihu-convert) restores the parameters only.
Checkpoint capture_checkpoint(const std::string& name, const std::vector<const Param*>& params, Solver& solver,
                              uint64_t seed, const TrainPosition& position);
TrainPosition restore_checkpoint(const Checkpoint& checkpoint, const std::string& name,
                                 const std::vector<Param*>& params, Solver& solver, uint64_t seed);
// The same for a net, with every layer's random generator.
Checkpoint capture_checkpoint(const Net& net, Solver& solver, uint64_t seed, const TrainPosition& position);
// A net's parameters and generators as a checkpoint of iteration 0 without
// solver state: weights imported from another framework (taihu-convert),
// which a run resumes from as a starting point.
Checkpoint starting_checkpoint(const Net& net, uint64_t seed);
// Restores params and solver state (and, if `rngs`, every layer's random
// generator) after checking that the checkpoint fits; returns its position.
TrainPosition restore_checkpoint(const Checkpoint& checkpoint, Net& net, Solver& solver, uint64_t seed, bool rngs);
// Saves to `path`, and with keep_all also to "<stem>-iter<N><ext>" beside it.
// With `previous_sane` (the loss stayed sane after the checkpoint now at
// `path`), that one is first kept as the last sane checkpoint, "<stem>-sane<ext>".
void save_checkpoint_files(const Checkpoint& checkpoint, const std::filesystem::path& path, bool keep_all,
                           bool previous_sane = false);

}  // namespace taihu
