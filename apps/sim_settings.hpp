#pragma once
// taihu-sim's [simulation] section (apps/taihu-sim.cpp's usage text lists the
// keys): what to simulate, read and checked once; errors name file, line, key.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace taihu::sim_app {

// A bucket of a training iteration's gradient (simulation.buckets).
struct Bucket {
  std::size_t elements = 0;
  double ready = 0;       // seconds into the iteration when backward hands it over
  std::string algorithm;  // empty: the row's
  // Measured CPU seconds of one rank's work before and after the collective
  // and of unpacking its sum (simulation.compress_seconds, decompress_seconds,
  // unpack_seconds); unset: modelled (the unpacking: free).
  std::optional<double> compress, decompress, unpack;
};

struct Settings {
  std::vector<int> nodes;
  std::vector<std::string> algorithms;
  double bytes = 0;
  std::size_t elements = 0;
  double compute = 0;
  double compute_low = 0, compute_high = 0;  // a net on the SW26010 model: across the lock-step range
  double density = 0.001, spread = 0.1;
  double compress_rate = 0;
  bool data = false;
  bool actors = true;
  int threads = 1;
  std::string svg;
  std::string net;  // the net whose training is simulated, if any
  std::vector<Bucket> buckets;  // in ready order; empty: one collective after compute
  double update = 0;            // with buckets: the solver step
  bool training() const { return compute > 0; }
};

// Reads and checks [simulation]; a net's compute time comes from the SW26010 model.
Settings read_settings(const config::Document& doc, const config::Section& s);

}  // namespace taihu::sim_app
