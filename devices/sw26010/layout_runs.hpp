#pragma once
// swCaffe's tensor layout transformation layer (P §IV-C; sw26010.md §6.3):
// the implicit convolution works on H x C x W x N tensors, every other layer
// on Caffe's N x C x H x W. Without the transform layer each implicit
// convolution converts what it reads and writes itself, on every pass; with
// it, a blob between two implicit convolutions stays in the implicit layout
// (data and gradient alike), and conversions happen only at the borders of
// runs of implicit layers. T Table 5 measures the difference on VGG-16
// (feature-map transforms 3.16 s -> 0.73 s per iteration).
//
// The rule, per blob: it stays implicit when the one layer that writes it is a
// convolution running every pass implicitly, and every layer that reads it is
// one too. Elementwise layers (ReLU, in place or not) work in either layout
// and are looked through: conv -> ReLU -> conv is one run. Anything else that
// reads the blob (pooling, BatchNorm, a loss, a split) needs Caffe's layout,
// and so does a net output.
//
// Plain C++ on core/net.

#include <cstddef>
#include <functional>
#include <vector>

#include "core/net/net.hpp"

namespace taihu::sw26010 {

// The layouts a layer's bottom 0 arrives in and its top 0 leaves in.
struct LayerLayouts {
  bool bottom_implicit = false;
  bool top_implicit = false;
};

// Whether layer i of the net runs every one of its passes implicitly (false
// for anything but a convolution).
using ImplicitThroughout = std::function<bool(std::size_t)>;

// One entry per layer of `net`.
std::vector<LayerLayouts> implicit_runs(const Net& net, const ImplicitThroughout& implicit_throughout);

}  // namespace taihu::sw26010
