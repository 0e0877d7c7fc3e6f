#pragma once
// taihu computes with denormals flushed to zero (core/common/flush_to_zero.hpp);
// the Python thread that calls it must get its own mode back, or NumPy code
// after the call would compute differently.

#include "core/common/flush_to_zero.hpp"

namespace taihu::python {

class TaihuFloatMode {
 public:
  explicit TaihuFloatMode(bool flush_to_zero = true) : saved_(float_mode()) {
    if (flush_to_zero) enable_flush_to_zero();
  }
  ~TaihuFloatMode() { set_float_mode(saved_); }
  TaihuFloatMode(const TaihuFloatMode&) = delete;
  TaihuFloatMode& operator=(const TaihuFloatMode&) = delete;

 private:
  unsigned saved_;
};

}  // namespace taihu::python
