#pragma once
// Where a net's layers compute. By default a layer runs its own (CPU) code;
// a LayerExecutor installed with Net::set_executor takes over each layer's
// forward and backward instead — a device model, for instance, that runs
// the layer's kernels on simulated hardware and accounts their time. The
// executor must leave the blobs exactly as the layer's own code would (same
// tops, bottom diffs, accumulated parameter diffs, state). Plain C++: devices
// implement it wherever they live (devices/, actors/), the app installs it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/task.hpp"

namespace taihu {

// Simulated time of one layer, summed over the training iterations run.
struct DeviceLayerTime {
  std::string name;
  std::string type;
  std::string method;      // how the device ran it ("explicit", "implicit", "MPE", "host", ...)
  bool simulated = true;   // false: ran on the host CPU, no simulated time
  double forward_seconds = 0.0;
  double data_gradient_seconds = 0.0;    // bottom diffs
  double weight_gradient_seconds = 0.0;  // parameter diffs, with their sum over core groups
  double backward_seconds() const { return data_gradient_seconds + weight_gradient_seconds; }
};

// What computed a layer on the host CPU (no executor), per pass: "oneDNN jit:avx512_core",
// "im2col+GEMM" (convolutions; core/layers/convolution.hpp).
struct LayerKernels {
  std::string layer;
  std::string forward, data_gradient, weight_gradient;
};

struct DeviceReport {
  std::string device = "cpu";
  int64_t iterations = 0;           // training iterations timed
  double simulated_seconds = 0.0;   // all of them
  double update_seconds = 0.0;      // of simulated_seconds: the solver steps after their backward passes
  int64_t images = 0;               // samples trained in them
  double host_seconds = 0.0;        // host (wall) time spent simulating them
  double host_cpu_seconds = 0.0;    // process CPU time spent on them (all threads)
  std::vector<DeviceLayerTime> layers;  // per iteration (averaged)
  // A simulated device whose model has parameters known only as ranges: the
  // iteration's lowest and highest simulated seconds across them (0: none).
  double simulated_iteration_low = 0.0, simulated_iteration_high = 0.0;
  // A total over the timed iterations, per iteration (0 before any).
  double per_iteration(double total) const { return iterations ? total / double(iterations) : 0.0; }
  double simulated_iteration_seconds() const { return per_iteration(simulated_seconds); }
  double simulated_images_per_second() const { return simulated_seconds > 0 ? double(images) / simulated_seconds : 0.0; }
};

class LayerExecutor {
 public:
  virtual ~LayerExecutor() = default;
  // Layer i's forward (its reshape has run) and backward (only when the net
  // would run the layer's backward). Tasks (core/common/task.hpp): a device
  // whose kernels run on actors suspends the caller's step until they answer.
  virtual async::Task<> forward(std::size_t i) = 0;
  virtual async::Task<> backward(std::size_t i) = 0;
  // Training iterations, for devices that account time (not called in evaluation).
  virtual void begin_iteration(int64_t batch) {}
  virtual void end_iteration() {}
  virtual DeviceReport report() const { return {}; }
};

}  // namespace taihu
