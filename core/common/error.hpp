#pragma once
// The exceptions taihu raises for bad input. Each carries enough context for a
// user to fix the cause without reading the source: the file, line and key of
// a config entry, the layer and shapes of a mismatch, the path of missing data.

#include <stdexcept>
#include <string>

namespace taihu {

// Base of every taihu error; what() is a complete, user-facing sentence.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A config file or command-line override that cannot be used as written.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Tensors whose shapes do not fit the operation; names the layer.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A data set that is missing, truncated or corrupted.
class DataError : public Error {
 public:
  using Error::Error;
};

// A size this machine cannot hold (a tensor larger than its memory): says
// what asked for it, so the key behind it can be found.
class ResourceError : public Error {
 public:
  using Error::Error;
};

// Training diverged (NaN or Inf loss) or a numeric invariant broke.
class NumericError : public Error {
 public:
  using Error::Error;
};

}  // namespace taihu
