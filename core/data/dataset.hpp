#pragma once
// Data sets are random-access collections of (sample, label) pairs held in
// memory; BatchSource (batch_source.hpp) turns one into shuffled, prefetched
// mini-batches.

#include <cstdint>
#include <memory>

#include "core/config/config.hpp"
#include "core/tensor/shape.hpp"

namespace taihu {

enum class Split { train, test };

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Shape of one sample, without the batch axis (e.g. 1x28x28).
  virtual Shape sample_shape() const = 0;
  virtual int num_classes() const = 0;
  // Writes sample `index` (sample_shape().count() floats) to `out` and returns its label.
  virtual int label(int64_t index) const = 0;
  virtual void sample(int64_t index, float* out) const = 0;
};

// Builds the data set described by a [data] section, for the given split.
// Errors name the config key; a missing file says how to get the data.
std::shared_ptr<const Dataset> make_dataset(const config::Document& doc, const config::Section& data,
                                            Split split);

}  // namespace taihu
