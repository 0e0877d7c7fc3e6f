// Which passes of a convolution oneDNN computes (convolution.hpp): the plan
// from [conv] algorithm and the layer's geometry, and the check of oneDNN's
// first result of each pass against im2col+GEMM's.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "core/layers/convolution.hpp"

namespace taihu {

std::string ConvolutionLayer::pass_kernel(DnnlConvolution::Pass pass) const {
  return uses_dnnl(pass) ? "oneDNN " + dnnl_->kernel(pass) : "im2col+GEMM";
}

void ConvolutionLayer::plan_dnnl() {
  const Algorithm algorithm = algorithm_.value_or(default_algorithm());
  const ConvGeometry& g = geometry_;
  const auto same = [](const ConvGeometry& a, const ConvGeometry& b) {
    return a.channels == b.channels && a.height == b.height && a.width == b.width && a.kernel_h == b.kernel_h &&
           a.kernel_w == b.kernel_w && a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.pad_h == b.pad_h &&
           a.pad_w == b.pad_w && a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w;
  };
  if (algorithm == Algorithm::im2col) {
    dnnl_.reset();
    return;
  }
  if (dnnl_ && same(dnnl_geometry_, g)) return;
  dnnl_ = DnnlConvolution::create(g, num_output_, group_, bias_term_);
  dnnl_geometry_ = g;
  if (dnnl_) {
    using Pass = DnnlConvolution::Pass;
    for (const Pass pass : {Pass::forward, Pass::data_gradient, Pass::weight_gradient}) {
      dnnl_passes_[static_cast<int>(pass)] = dnnl_->has_kernel(pass);
      dnnl_checked_[static_cast<int>(pass)] = false;
      dnnl_timed_[static_cast<int>(pass)] = algorithm != Algorithm::measured || !dnnl_->has_kernel(pass);
    }
    if (algorithm == Algorithm::automatic) {
      // Where oneDNN's direct kernels lag for a reason of their structure,
      // not of one CPU, auto leaves the pass to im2col + GEMM. (A 1x1
      // kernel's weight gradient used to be one: cut in slices of output
      // channels, it read the whole input once per slice, 40-100 GF/s on
      // ResNet-50's 1x1 layers. DnnlConvolution now cuts such layers in
      // pieces of images instead, and oneDNN took 14 of ResNet-50's 15 1x1
      // weight-gradient shapes from im2col at batch 32, by 1.1-2.2x.)
      // - the kernels vectorise over input channels, so with one per group
      //   most lanes idle: LeNet's 1-channel conv1 took 0.87 ms forward and
      //   0.81 ms for its weight gradient, against im2col's 0.45 and 0.55
      //   (AVX-512, batch 64). With 3 channels (AlexNet's and ResNet-50's
      //   conv1) oneDNN's first-layer kernels win both by 1.4-2.1x, but its
      //   data gradient, which writes those 3 channels, does not: the
      //   backward of ResNet-50's conv1 ran at 29 GF/s with it and 138
      //   with im2col's (AlexNet's conv1: 70 and 154; batch 8).
      // - they work on blocks of 16 channels (8 on AVX2), padding both
      //   channel counts up: LeNet's conv2 (20 -> 50) fills 49% of the
      //   lanes, and took 1.78 ms forward and 4.2 ms backward (batch 64,
      //   AVX-512) against 1.4 and 3.0 by im2col in per-thread chunks; on
      //   AVX2 (DNNL_MAX_CPU_ISA) forward was even and its backward ran at
      //   47 GF/s against 113. Below 3/4 of the lanes filled (blocks of 16,
      //   and from 5 input channels on, where the first-layer kernels above
      //   do not apply), every pass goes to im2col.
      const int64_t channels_per_group = g.channels / group_;
      const int64_t outputs_per_group = num_output_ / group_;
      const auto lanes_used = [](int64_t channels) {
        return static_cast<double>(channels) / static_cast<double>((channels + 15) / 16 * 16);
      };
      if (channels_per_group > 4 && lanes_used(channels_per_group) * lanes_used(outputs_per_group) < 0.75)
        for (bool& use : dnnl_passes_) use = false;
      if (channels_per_group == 1)
        dnnl_passes_[static_cast<int>(Pass::forward)] = dnnl_passes_[static_cast<int>(Pass::weight_gradient)] = false;
      if (channels_per_group <= 4) dnnl_passes_[static_cast<int>(Pass::data_gradient)] = false;
    }
  }
  if (!dnnl_ && algorithm == Algorithm::dnnl)
    shape_error(fmt::format("algorithm = dnnl, but oneDNN has no JIT kernel for this convolution on this CPU "
                            "(group {}, kernel {}x{}, stride {}x{}, dilation {}x{}, {} input channels); "
                            "use auto or im2col",
                            group_, g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w,
                            g.channels));
}

bool ConvolutionLayer::confirm_dnnl(DnnlConvolution::Pass pass, const float* result, const float* reference,
                                    int64_t count) {
  const int p = static_cast<int>(pass);
  dnnl_checked_[p] = true;
  double largest = 0.0, error = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    largest = std::max(largest, std::abs(double(reference[i])));
    error = std::max(error, std::abs(double(result[i]) - double(reference[i])));
  }
  // Both sum the same products in other orders: they differ by rounding,
  // far below this, unless a kernel is wrong. A diverged run (no finite
  // reference) tells nothing either way.
  if (!std::isfinite(largest)) return true;
  if (std::isfinite(error) && error <= 1e-3 * largest + 1e-6) return true;
  static const char* names[] = {"forward", "data gradient", "weight gradient"};
  spdlog::warn("layer '{}' (Convolution): oneDNN's {} kernel {} differs from im2col by {:.3g} (largest value {:.3g}); "
               "im2col computes this pass from now on",
               name(), names[p], dnnl_->kernel(pass), error, largest);
  dnnl_passes_[p] = false;
  return false;
}

}  // namespace taihu
