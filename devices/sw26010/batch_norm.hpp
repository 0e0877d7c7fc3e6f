#pragma once
// BatchNorm as swCaffe trains it (C-swcaffe batch_norm_layer.cpp with
// USE_SWBATCHNORM; its CPE kernels are swDNN's slave/batch_norm/
// sw_slave_batch_norm.c, C-swdnn1), timing only:
//  - planes smaller than 60 x 60 run the CPE kernels. Channel c is CPE c % 64's
//    (fewer than 64 channels leave CPEs idle); every transfer is a synchronous
//    DMA of one plane. Forward: a statistics pass (GET the plane, sum and sum
//    of squares in a scalar loop whose additions chain at the FP latency), then
//    a normalising pass that GETs the plane and PUTs three: the output, x_norm
//    and the divisor temp. Backward: a statistics pass over dy and x_norm, then
//    one GETting both (and loading the plane's divisor by gld) and PUTting dx;
//  - larger planes run Caffe's multi-pass path: the statistics by gemv on the
//    MPE (cblas), the broadcasts by K = 1 GEMMs and sqr, mul, div and copy on
//    the CPEs, axpby on the MPE (USE_SWBASE1 is not defined);
//  - a layer that is not in place copies its input to its output first
//    (forward), an in-place one its output gradient aside (backward).

#include <cstdint>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

struct BatchNormTiming {
  std::int64_t forward = 0, backward = 0;
  bool multi_pass = false;  // Caffe's path (planes of 60 x 60 or more)
};

// `batch` images of `channels` planes of `spatial` floats on this core group.
BatchNormTiming time_batch_norm(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t spatial,
                                bool in_place);

// The plane size from which swCaffe takes Caffe's multi-pass path.
inline constexpr std::int64_t batch_norm_multi_pass_spatial = 60 * 60;

}  // namespace taihu::sw26010
