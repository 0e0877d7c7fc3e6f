#pragma once
// A convolution's bias as swCaffe's convolution layer computes it, whichever
// method ran the convolution itself (C-swcaffe @2b783a6,
// src/caffe/layers/conv_layer.cpp Forward_cpu / Backward_cpu under USE_SWDNN,
// src/caffe/layers/base_conv_layer.cpp):
//  - forward: after the convolution, one forward_cpu_bias per image, i.e.
//    caffe_cpu_gemm(No x (Ho*Wo) x K = 1, bias x ones, beta = 1) into the
//    N x C x H x W output: a vendor GEMM call of K = 1, below the range the
//    vendor model was fitted on, so charged as swGEMM (`blas_gemm`, padded to
//    swGEMM's block grid like any shape its blocks do not divide);
//  - backward: one backward_cpu_bias per image, i.e. caffe_cpu_gemv(No x
//    (Ho*Wo), dY_n, ones) added into db: cblas_sgemv, the host BLAS on the MPE
//    (swCaffe's Makefile links the netlib CBLAS wrapper; its level-1/2 calls
//    run on the MPE as caffe_axpy does, iteration.hpp).
// Both read and write N x C x H x W tensors: an implicit convolution's bias
// comes after its output is transformed back.

#include <cstdint>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

// y (batch x channels x plane) += bias per channel, one K = 1 GEMM per image.
KernelStats conv_bias_forward(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                              const float* bias, float* y);

// db (channels) += the sums of dy (batch x channels x plane) per channel, one
// MPE gemv per image.
KernelStats conv_bias_gradient(CoreGroup& cg, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                               const float* dy, float* db);

// The MPE bytes one image's gemv streams: the channels x plane matrix once,
// and the plane of ones again for every channel when a matrix row and the
// ones do not stay in the MPE's L2 together (224 x 224 planes: 2 x 196 KB).
double conv_bias_gemv_bytes(const Params& params, std::int64_t channels, std::int64_t plane);

}  // namespace taihu::sw26010
