#pragma once
// `[conv] algorithm = measured`: each pass of each convolution shape runs by
// whichever of oneDNN and im2col + GEMM is the faster on this machine, timed
// on the pass's first call, as swCaffe picks its method per layer by measured
// time and cuDNN's benchmark mode picks an algorithm.
//
// Decisions are kept per process and shape (geometry, outputs, groups,
// batch, pass): every layer and replica of one shape in a process computes
// with the same kernel, and a shape is timed once. A training run decides
// once for all its replicas: rank 0 times its layers at start-up
// (ConvolutionLayer::decide_kernels), its decisions travel with its weights
// to every replica, on nodes too, and into each checkpoint, which a resumed
// run adopts; so a measured run is bit-exact across nodes and resumes. Two
// separate runs may still decide otherwise where the two kernels are close;
// `auto`, deciding by shape and CPU alone, computes the same bits in every
// run, and stays the default for that reason.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taihu {

class ConvolutionChoices {
 public:
  struct Decision {
    std::string key;
    bool dnnl = true;  // false: im2col + GEMM
    double dnnl_seconds = 0.0;
    double im2col_seconds = 0.0;
  };

  // The one table of this process.
  static ConvolutionChoices& process();

  // The decision in force for `key`, if any.
  std::optional<Decision> find(const std::string& key) const;
  // Records a decision from two timings unless one exists for `key` (a
  // replica timing the same shape concurrently); returns the one in force.
  Decision decide(const std::string& key, double dnnl_seconds, double im2col_seconds);
  std::vector<Decision> decisions() const;
  // Takes decisions made elsewhere (rank 0's, a checkpoint's), replacing any
  // of the same keys made here.
  void adopt(const std::vector<std::pair<std::string, bool>>& decisions);
  // The decisions as key and oneDNN-or-not pairs, for messages and checkpoints.
  std::vector<std::pair<std::string, bool>> choices() const;
  void clear();  // for tests

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Decision> decisions_;
};

}  // namespace taihu
