#pragma once
// Trained Caffe weights (.caffemodel) into a taihu net and checkpoint.
//
// Layers are matched by name; a layer's blobs are its parameters in Caffe's
// order (weight, bias; for BatchNorm mean, variance and a one-value scale
// factor). Caffe's BatchNorm keeps its running sums unnormalised: the stored
// mean and variance are divided by that factor here (0 meaning "no
// statistics yet" gives 0, as in Caffe). Every parameter of the net must be
// found with the shape the net expects; layers of the file that the net
// lacks (or that have no parameters in taihu) are reported as notes.

#include <cstdint>
#include <string>
#include <vector>

#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "interop/caffe/caffe.pb.h"

namespace taihu::caffe {

struct ImportedWeights {
  Checkpoint checkpoint;           // iteration 0, no solver state: a starting point
  std::vector<std::string> notes;
};

// Copies the weights into `net`'s parameters and returns them as a
// checkpoint of `net` (made with `seed`, which a run resuming from it must
// use too). ConfigError names the layer, parameter and both shapes on a
// mismatch. A layer with parameters that the file lacks is an error, unless
// `keep_missing` (fine-tuning a net whose new layers start from their
// fillers, as Caffe's --weights does): then it is a note.
ImportedWeights import_weights(const CaffeWeights& weights, const std::string& source, Net& net, uint64_t seed,
                               bool keep_missing = false);

}  // namespace taihu::caffe
