#pragma once
// What an swCaffe training iteration pays after the backward pass, besides the
// layers (C-swcaffe @2b783a6; sw26010.md §6.5, §7):
//  - core group 0 adds the other three groups' weight gradients into its own
//    (conv_layer.cpp Backward_cpu_4cg: caffe_axpy per group);
//  - the SGD solver applies weight decay, momentum and the update
//    (sgd_solver.cpp: Regularize caffe_axpy, ComputeUpdateValue
//    caffe_cpu_axpby + caffe_copy, Net::Update caffe_axpy).
// Where each runs: swCaffe's Makefile defines USE_SWBASE, not USE_SWBASE1, so
// caffe_axpy and caffe_cpu_axpby are the host BLAS (cblas_saxpy/saxpby) on
// the MPE, while caffe_copy is sw_memcpy on the CPEs (math_functions.cpp).
// The MPE's level-1 passes stream through its caches at the MPE copy rate
// (P Principle 2), counting the bytes read and written.

#include <cstdint>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

// CG 0's MPE adds `groups - 1` gradient buffers of `parameters` floats into its own.
std::int64_t gradient_sum_mpe(CoreGroup& cg, std::int64_t parameters, int groups = 4);

// y += x on the MPE (caffe_axpy as swCaffe builds it): computes when the group
// has numerics, charges the MPE's streaming time to the group's clock.
KernelStats axpy_mpe(CoreGroup& cg, const float* x, float* y, std::int64_t n);

// One SGD step with momentum and weight decay over `parameters` floats:
// three MPE passes (decay axpy, momentum axpby, update axpy) and a CPE copy.
std::int64_t sgd_update(CoreGroup& cg, std::int64_t parameters);

}  // namespace taihu::sw26010
