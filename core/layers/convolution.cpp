#include "core/layers/convolution.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/blas/blas.hpp"
#include "core/kernels/parallel.hpp"
#include "core/layers/convolution_choices.hpp"
#include "core/layers/convolution_scratch.hpp"
#include "core/layers/registry.hpp"
#include "core/layers/window_options.hpp"

namespace taihu {

using blas::Trans;

namespace {
// Below this many floats of copying a loop is not worth waking another thread.
constexpr int64_t min_parallel_work = 32768;

// One image's output rows in bands of `rows_per_band`, each with its column
// matrix: the image itself for a 1x1 convolution (leading dimension: the
// output plane), else im2col of the band into `scratch` (leading dimension:
// the band's columns). f(row, row_end, columns, col, ld).
template <class F>
void for_each_band(const ConvGeometry& g, int64_t rows_per_band, const float* image, float* scratch, F&& f) {
  const int64_t out_w = g.out_width();
  for (int64_t row = 0; row < g.out_height(); row += rows_per_band) {
    const int64_t row_end = std::min(row + rows_per_band, g.out_height());
    const int64_t columns = (row_end - row) * out_w;
    if (g.is_pointwise()) {
      f(row, row_end, columns, image + row * out_w, g.out_size());
    } else {
      im2col(image, g, row, row_end, scratch, columns);
      f(row, row_end, columns, static_cast<const float*>(scratch), columns);
    }
  }
}

}  // namespace

ConvolutionLayer::ConvolutionLayer(const LayerSpec& spec) : Layer(spec) {
  const auto& o = options();
  num_output_ = o.get<int64_t>("num_output");
  if (num_output_ < 1) throw o.error("num_output", "must be at least 1");
  const auto kernel = read_height_width(o, "kernel_size", "kernel", std::nullopt, 1);
  const auto stride = read_height_width(o, "stride", "stride", 1, 1);
  const auto pad = read_height_width(o, "pad", "pad", 0, 0);
  const auto dilation = read_height_width(o, "dilation", "dilation", 1, 1);
  geometry_.kernel_h = kernel.h, geometry_.kernel_w = kernel.w;
  geometry_.stride_h = stride.h, geometry_.stride_w = stride.w;
  geometry_.pad_h = pad.h, geometry_.pad_w = pad.w;
  geometry_.dilation_h = dilation.h, geometry_.dilation_w = dilation.w;
  group_ = o.get_or<int64_t>("group", 1);
  if (group_ < 1) throw o.error("group", "must be at least 1");
  if (num_output_ % group_ != 0)
    throw o.error("group", fmt::format("num_output {} is not divisible by group {}", num_output_, group_));
  bias_term_ = o.get_or<bool>("bias_term", true);
  weight_filler_ = Filler::from_options(o, "weight_filler", "xavier");
  if (bias_term_) bias_filler_ = Filler::from_options(o, "bias_filler", "constant 0");
  if (o.has("algorithm"))
    algorithm_ = parse_algorithm(o.get_choice("algorithm", {"auto", "measured", "im2col", "dnnl"}, "auto"));
}

ConvolutionLayer::Algorithm& ConvolutionLayer::default_algorithm() {
  static Algorithm algorithm = Algorithm::automatic;
  return algorithm;
}

ConvolutionLayer::Algorithm ConvolutionLayer::parse_algorithm(const std::string& name) {
  if (name == "auto") return Algorithm::automatic;
  if (name == "measured") return Algorithm::measured;
  if (name == "im2col") return Algorithm::im2col;
  if (name == "dnnl") return Algorithm::dnnl;
  throw std::invalid_argument(fmt::format("'{}' is not a convolution algorithm (auto, measured, im2col, dnnl)", name));
}

void ConvolutionLayer::configure(const config::Section& conv) {
  default_algorithm() =
      parse_algorithm(conv.get_choice("algorithm", {"auto", "measured", "im2col", "dnnl"}, "auto"));
}

namespace {
const char* const pass_names[] = {"forward", "data gradient", "weight gradient"};
}  // namespace

std::string ConvolutionLayer::decision_key(DnnlConvolution::Pass pass, int64_t batch) const {
  const ConvGeometry& g = geometry_;
  return fmt::format("{} {}x{}x{} -> {}/{} k{}x{} s{}x{} p{}x{} d{}x{} batch {}", pass_names[static_cast<int>(pass)],
                     g.channels, g.height, g.width, num_output_, group_, g.kernel_h, g.kernel_w, g.stride_h,
                     g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w, batch);
}

template <class RunDnnl, class RunIm2col>
bool ConvolutionLayer::keep_dnnl_by_time(DnnlConvolution::Pass pass, int64_t batch, RunDnnl&& run_dnnl,
                                         RunIm2col&& run_im2col) {
  const int p = static_cast<int>(pass);
  if (dnnl_timed_[p]) return true;
  dnnl_timed_[p] = true;
  const std::string key = decision_key(pass, batch);
  ConvolutionChoices& choices = ConvolutionChoices::process();
  std::optional<ConvolutionChoices::Decision> decision = choices.find(key);
  if (!decision) {
    // Both have run once (caches, oneDNN's weight reorders, buffers): one
    // more call each, the better of two rounds, alternating.
    const auto seconds = [](auto&& run) {
      const auto start = std::chrono::steady_clock::now();
      run();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    double dnnl_seconds = 1e300, im2col_seconds = 1e300;
    for (int round = 0; round < 2; ++round) {
      dnnl_seconds = std::min(dnnl_seconds, seconds(run_dnnl));
      im2col_seconds = std::min(im2col_seconds, seconds(run_im2col));
    }
    decision = choices.decide(key, dnnl_seconds, im2col_seconds);
    spdlog::info("layer '{}' (Convolution): {} by {} ({:.3f} ms; oneDNN {} {:.3f} ms, im2col+GEMM {:.3f} ms)", name(),
                 pass_names[p], decision->dnnl ? "oneDNN" : "im2col+GEMM",
                 1e3 * std::min(decision->dnnl_seconds, decision->im2col_seconds), dnnl_->kernel(pass),
                 1e3 * decision->dnnl_seconds, 1e3 * decision->im2col_seconds);
  }
  dnnl_passes_[p] = decision->dnnl;
  return decision->dnnl;
}

ConvolutionLayer::Tuning& ConvolutionLayer::tuning() {
  static Tuning t;
  return t;
}

void ConvolutionLayer::setup(const BlobVec& bottom, const BlobVec& top) {
  const Shape& s = bottom[0]->shape();
  if (s.rank() != 4) shape_error("expected a 4-D NCHW bottom, got " + s.str());
  const int64_t channels = s[1];
  if (channels % group_ != 0)
    shape_error(fmt::format("group {} does not divide the {} input channels (bottom {})", group_, channels, s.str()));
  geometry_.channels = channels;
  const int64_t kh = geometry_.kernel_h, kw = geometry_.kernel_w;
  Blob& weight = add_param("weight", Shape{num_output_, channels / group_, kh, kw});
  weight_filler_.fill(weight.data(), rng(), channels / group_ * kh * kw, num_output_ / group_ * kh * kw);
  if (bias_term_) {
    Blob& bias = add_param("bias", Shape{num_output_});
    bias_filler_.fill(bias.data(), rng(), 1, 1);
  }
}

void ConvolutionLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Shape& s = bottom[0]->shape();
  if (s.rank() != 4) shape_error("expected a 4-D NCHW bottom, got " + s.str());
  if (s[1] != geometry_.channels)
    shape_error(fmt::format("expected {} input channels (as at setup), got bottom {}", geometry_.channels, s.str()));
  geometry_.height = s[2];
  geometry_.width = s[3];
  const ConvGeometry& g = geometry_;
  if (g.out_height() < 1 || g.out_width() < 1)
    shape_error(
        fmt::format("kernel {}x{} (dilation {}x{}, extent {}x{}) is larger than the padded input {}x{} "
                    "(bottom {}, pad {}x{})",
                    g.kernel_h, g.kernel_w, g.dilation_h, g.dilation_w, g.extent_h(), g.extent_w(),
                    g.height + 2 * g.pad_h, g.width + 2 * g.pad_w, s.str(), g.pad_h, g.pad_w));
  top[0]->reshape(Shape{s[0], num_output_, g.out_height(), g.out_width()});
  batch_ = s[0];
  plan_chunks(s[0]);
  plan_dnnl();
}

void ConvolutionLayer::plan_chunks(int64_t batch) {
  const ConvGeometry& g = geometry_;
  const int64_t out_size = g.out_size();
  const int64_t rows = g.col_rows();
  const int64_t budget = std::max<int64_t>(tuning().column_budget_bytes / int64_t{sizeof(float)}, rows);
  // Images side by side until the GEMM is wide enough, within the budget and
  // within a core's cache, unless that leaves too few columns.
  int64_t images = out_size >= tuning().batch_below_columns ? 1 : (tuning().target_columns + out_size - 1) / out_size;
  // Cache-sized chunks pay where im2col multiplies the data (a kernel of more
  // than one tap); a 1x1 kernel's columns are its input, and its weights,
  // summed once per share, are large beside them (ResNet-50's res5 1x1
  // weight gradients: 304 GF/s in one chunk of 32 images, 268 in chunks of 6).
  if (g.kernel_h * g.kernel_w > 1) {
    const int64_t cached = tuning().chunk_cache_bytes / int64_t{sizeof(float)} / (rows * out_size);
    images = std::min(images, std::max({cached, (tuning().min_chunk_columns + out_size - 1) / out_size, int64_t{2}}));
  }
  images = std::clamp<int64_t>(images, 1, std::max<int64_t>(batch, 1));
  images = std::max<int64_t>(1, std::min(images, budget / (rows * out_size)));
  plan_.images_per_chunk = images;
  // Gradient slots: enough shares to keep 16 threads busy, within 16 MB.
  const int64_t chunks = (std::max<int64_t>(batch, 1) + images - 1) / images;
  const int64_t slot_bytes = (num_output_ * rows / group_ + num_output_) * int64_t{sizeof(float)};
  plan_.gradient_shares = std::clamp<int64_t>((int64_t{16} << 20) / slot_bytes, 1, std::min<int64_t>(chunks, 16));
  // One image at a time: bands of output rows whose columns fit the budget
  // (a pointwise convolution reads the bottom directly: no bands needed).
  if (g.is_pointwise())
    plan_.rows_per_band = g.out_height();
  else
    plan_.rows_per_band = std::clamp<int64_t>(budget / (rows * g.out_width()), 1, g.out_height());

  const int64_t columns = images > 1 ? images * out_size : plan_.rows_per_band * g.out_width();
  // Batched chunks keep their columns per thread (convolution_batched.cpp).
  int64_t col_count = images == 1 && !g.is_pointwise() ? rows * columns : 0;
  if (images == 1 && transposed_data_grad()) {
    // Bands of bottom rows for the top gradient's column matrix.
    const ConvGeometry t = transposed_geometry();
    transposed_rows_per_band_ = std::clamp<int64_t>(budget / (t.col_rows() * g.width), 1, g.height);
    col_count = std::max(col_count, t.col_rows() * transposed_rows_per_band_ * g.width);
  }
  plan_.image_columns = col_count;
  const int64_t ones = std::max(columns, out_size);
  if (bias_term_ && ones_.count() < ones) {
    ones_.reshape(Shape{ones});
    ones_.fill(1.0f);
  }
}

bool ConvolutionLayer::transposed_data_grad() const {
  const ConvGeometry& g = geometry_;
  // Its GEMM has one row per bottom channel: with few (an RGB input) it
  // runs far below speed, and GEMM + col2im is faster.
  constexpr int64_t min_channels = 32;
  return tuning().transposed_data_grad && g.channels / group_ >= min_channels && !g.is_pointwise() &&
         g.stride_h == 1 && g.stride_w == 1 && g.pad_h <= g.extent_h() - 1 &&
         g.pad_w <= g.extent_w() - 1;
}

ConvGeometry ConvolutionLayer::transposed_geometry() const {
  const ConvGeometry& g = geometry_;
  ConvGeometry t = g;
  t.channels = num_output_;
  t.height = g.out_height(), t.width = g.out_width();
  t.pad_h = g.extent_h() - 1 - g.pad_h, t.pad_w = g.extent_w() - 1 - g.pad_w;
  return t;  // its output is height x width again
}

void ConvolutionLayer::transposed_backward(const float* dout, float* dimage) {
  const ConvGeometry& g = geometry_;
  const ConvGeometry t = transposed_geometry();
  const int64_t kk = g.kernel_h * g.kernel_w;
  const int64_t m = num_output_ / group_;       // top channels per group
  const int64_t cg = g.channels / group_;       // bottom channels per group
  const int64_t k = m * kk;                     // inner dimension
  const int64_t plane = g.height * g.width;
  float* col = convolution_scratch(ConvolutionScratch::image_columns, plan_.image_columns);
  const float* flipped = convolution_scratch(ConvolutionScratch::flipped_weights, flipped_count());
  for (int64_t row = 0; row < g.height; row += transposed_rows_per_band_) {
    const int64_t row_end = std::min(row + transposed_rows_per_band_, g.height);
    const int64_t columns = (row_end - row) * g.width;
    im2col(dout, t, row, row_end, col, columns);
    for (int64_t grp = 0; grp < group_; ++grp)
      blas::gemm(Trans::no, Trans::no, cg, columns, k, 1.0f, flipped + grp * cg * k, k, col + grp * k * columns,
                 columns, 0.0f, dimage + grp * cg * plane + row * g.width, plane);
  }
}

void ConvolutionLayer::forward(const BlobVec& bottom, const BlobVec& top) {
  using Pass = DnnlConvolution::Pass;
  const int64_t batch = bottom[0]->shape()[0];
  const float* x = bottom[0]->data().ptr();
  float* y = top[0]->data().ptr();
  if (!uses_dnnl(Pass::forward)) return im2col_forward(x, y, batch);
  const float* weight = params()[0].blob->data().ptr();
  const float* bias = bias_term_ ? params()[1].blob->data().ptr() : nullptr;
  dnnl_->forward(x, weight, bias, y, batch);
  if (dnnl_checked_[static_cast<int>(Pass::forward)]) return;
  // The reference lives only for the check: a run keeps no copy of a top.
  Tensor reference(top[0]->shape());
  im2col_forward(x, reference.ptr(), batch);
  if (!confirm_dnnl(Pass::forward, y, reference.ptr(), reference.count()) ||
      !keep_dnnl_by_time(
          Pass::forward, batch, [&] { dnnl_->forward(x, weight, bias, y, batch); },
          [&] { im2col_forward(x, reference.ptr(), batch); }))
    top[0]->data().copy_from(reference);
}

void ConvolutionLayer::im2col_forward(const float* x, float* y, int64_t batch) {
  const ConvGeometry& g = geometry_;
  const int64_t out_size = g.out_size();
  const int64_t out_w = g.out_width();
  const int64_t image_size = g.channels * g.height * g.width;
  const int64_t m = num_output_ / group_;
  const int64_t k = g.col_rows() / group_;
  const float* weight = params()[0].blob->data().ptr();
  const float* bias = bias_term_ ? params()[1].blob->data().ptr() : nullptr;

  if (plan_.images_per_chunk > 1) return batched_forward(x, y, batch);
  float* scratch = convolution_scratch(ConvolutionScratch::image_columns, plan_.image_columns);
  for (int64_t first = 0; first < batch; ++first) {
    // One image, band by band, straight into the top blob.
    const float* image = x + first * image_size;
    float* out = y + first * num_output_ * out_size;
    for_each_band(g, plan_.rows_per_band, image, scratch,
                  [&](int64_t row, int64_t, int64_t columns, const float* col, int64_t ld) {
                    float* c = out + row * out_w;
                    if (bias)
                      parallel_ranges(num_output_, min_parallel_work / columns, [&](int64_t begin, int64_t end) {
                        for (int64_t o = begin; o < end; ++o) std::fill_n(c + o * out_size, columns, bias[o]);
                      });
                    for (int64_t grp = 0; grp < group_; ++grp)
                      blas::gemm(Trans::no, Trans::no, m, columns, k, 1.0f, weight + grp * m * k, k,
                                 col + grp * k * ld, ld, bias ? 1.0f : 0.0f, c + grp * m * out_size, out_size);
                  });
  }
}

void ConvolutionLayer::backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  using Pass = DnnlConvolution::Pass;
  const int64_t batch = bottom[0]->shape()[0];
  const float* x = bottom[0]->data().ptr();
  float* dx = propagate_down[0] ? bottom[0]->diff().ptr() : nullptr;
  const float* dy = top[0]->diff().ptr();
  const float* weight = params()[0].blob->data().ptr();
  Tensor& weight_diff = params()[0].blob->diff();
  float* dbias = bias_term_ ? params()[1].blob->diff().ptr() : nullptr;
  const bool dnnl_data = dx && uses_dnnl(Pass::data_gradient);
  const bool dnnl_weights = uses_dnnl(Pass::weight_gradient);
  // im2col's share, in one sweep where it does both.
  if (!dnnl_weights || (dx && !dnnl_data))
    im2col_backward(x, dy, dnnl_data ? nullptr : dx, dnnl_weights ? nullptr : weight_diff.ptr(),
                    dnnl_weights ? nullptr : dbias, batch);
  if (dnnl_data) {
    dnnl_->backward_data(dy, weight, dx, batch);
    if (!dnnl_checked_[static_cast<int>(Pass::data_gradient)]) {
      Tensor reference(bottom[0]->shape());
      im2col_backward(x, dy, reference.ptr(), nullptr, nullptr, batch);
      if (!confirm_dnnl(Pass::data_gradient, dx, reference.ptr(), reference.count()) ||
          !keep_dnnl_by_time(
              Pass::data_gradient, batch, [&] { dnnl_->backward_data(dy, weight, dx, batch); },
              [&] { im2col_backward(x, dy, reference.ptr(), nullptr, nullptr, batch); }))
        bottom[0]->diff().copy_from(reference);
    }
  }
  if (dnnl_weights) {
    if (dnnl_checked_[static_cast<int>(Pass::weight_gradient)]) {
      dnnl_->backward_weights(x, dy, weight_diff.ptr(), dbias, batch);
      return;
    }
    // First call: both into zeroed buffers, then the one that holds is added.
    const int64_t nw = weight_diff.count(), nb = bias_term_ ? num_output_ : 0;
    Tensor mine(Shape{nw + nb}), reference(Shape{nw + nb});
    mine.zero();
    reference.zero();
    dnnl_->backward_weights(x, dy, mine.ptr(), nb ? mine.ptr() + nw : nullptr, batch);
    im2col_backward(x, dy, nullptr, reference.ptr(), nb ? reference.ptr() + nw : nullptr, batch);
    const bool keep =
        confirm_dnnl(Pass::weight_gradient, mine.ptr(), reference.ptr(), nw + nb) &&
        keep_dnnl_by_time(
            Pass::weight_gradient, batch,
            [&] {
              mine.zero();
              dnnl_->backward_weights(x, dy, mine.ptr(), nb ? mine.ptr() + nw : nullptr, batch);
            },
            [&] {
              reference.zero();
              im2col_backward(x, dy, nullptr, reference.ptr(), nb ? reference.ptr() + nw : nullptr, batch);
            });
    const Tensor& chosen = keep ? mine : reference;
    for (int64_t i = 0; i < nw; ++i) weight_diff[i] += chosen[i];
    for (int64_t i = 0; i < nb; ++i) dbias[i] += chosen[nw + i];
  }
}

void ConvolutionLayer::decide_kernels() {
  using Pass = DnnlConvolution::Pass;
  if (!dnnl_ || batch_ < 1) return;
  // Passes decided already (by another replica, rank 0, a checkpoint) take
  // that decision without running anything.
  bool undecided = false;
  for (const Pass pass : {Pass::forward, Pass::data_gradient, Pass::weight_gradient}) {
    if (dnnl_timed_[static_cast<int>(pass)]) continue;
    if (ConvolutionChoices::process().find(decision_key(pass, batch_)))
      keep_dnnl_by_time(pass, batch_, [] {}, [] {});
    else
      undecided = true;
  }
  if (!undecided) return;
  const ConvGeometry& g = geometry_;
  const int64_t batch = batch_;
  const Shape bottom_shape{batch, g.channels, g.height, g.width};
  const Shape top_shape{batch, num_output_, g.out_height(), g.out_width()};
  Tensor x(bottom_shape), dx(bottom_shape), y(top_shape), dy(top_shape);
  Rng rng(batch);
  for (Tensor* t : {&x, &dy})
    for (int64_t i = 0; i < t->count(); ++i) (*t)[i] = rng.uniform() - 0.5f;
  const float* weight = params()[0].blob->data().ptr();
  const float* bias = bias_term_ ? params()[1].blob->data().ptr() : nullptr;
  const int64_t nw = params()[0].blob->count(), nb = bias_term_ ? num_output_ : 0;
  Tensor gradients(Shape{nw + nb});  // the weight gradients' sink
  float* dbias = nb ? gradients.ptr() + nw : nullptr;
  // Each kernel runs once before it is timed (caches, oneDNN's reorders, buffers).
  const auto decide = [&](Pass pass, auto&& run_dnnl, auto&& run_im2col) {
    if (dnnl_timed_[static_cast<int>(pass)]) return;
    run_dnnl();
    run_im2col();
    keep_dnnl_by_time(pass, batch, run_dnnl, run_im2col);
  };
  decide(
      Pass::forward, [&] { dnnl_->forward(x.ptr(), weight, bias, y.ptr(), batch); },
      [&] { im2col_forward(x.ptr(), y.ptr(), batch); });
  decide(
      Pass::data_gradient, [&] { dnnl_->backward_data(dy.ptr(), weight, dx.ptr(), batch); },
      [&] { im2col_backward(x.ptr(), dy.ptr(), dx.ptr(), nullptr, nullptr, batch); });
  decide(
      Pass::weight_gradient, [&] { dnnl_->backward_weights(x.ptr(), dy.ptr(), gradients.ptr(), dbias, batch); },
      [&] { im2col_backward(x.ptr(), dy.ptr(), nullptr, gradients.ptr(), dbias, batch); });
}

void ConvolutionLayer::im2col_backward(const float* x, const float* dy, float* dx, float* dweight, float* dbias,
                                       int64_t batch) {
  const ConvGeometry& g = geometry_;
  const int64_t out_size = g.out_size();
  const int64_t out_w = g.out_width();
  const int64_t image_size = g.channels * g.height * g.width;
  const int64_t m = num_output_ / group_;
  const int64_t k = g.col_rows() / group_;
  const float* weight = params()[0].blob->data().ptr();

  const bool transposed = dx && plan_.images_per_chunk == 1 && transposed_data_grad();
  if (transposed) {
    // flipped[grp][c][o][kh-1-i][kw-1-j] = weight[grp*m + o][c][i][j]
    const int64_t kk = g.kernel_h * g.kernel_w, cg = g.channels / group_;
    float* flipped = convolution_scratch(ConvolutionScratch::flipped_weights, flipped_count());
    for (int64_t grp = 0; grp < group_; ++grp)
      for (int64_t o = 0; o < m; ++o)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t q = 0; q < kk; ++q)
            flipped[((grp * cg + c) * m + o) * kk + (kk - 1 - q)] = weight[((grp * m + o) * cg + c) * kk + q];
  }

  if (plan_.images_per_chunk > 1) return batched_backward(x, dy, dx, dweight, dbias, batch);
  float* scratch = convolution_scratch(ConvolutionScratch::image_columns, plan_.image_columns);
  for (int64_t first = 0; first < batch; ++first) {
    const float* image = x + first * image_size;
    const float* dout = dy + first * num_output_ * out_size;
    float* dimage = dx ? dx + first * image_size : nullptr;
    if (dbias) blas::gemv(Trans::no, num_output_, out_size, 1.0f, dout, ones_.ptr(), 1.0f, dbias);
    if (dimage && transposed) {
      transposed_backward(dout, dimage);
      dimage = nullptr;  // done; the loop below adds the weight gradient only
    }
    if (!dweight && !dimage) continue;
    if (dimage && !g.is_pointwise())
      parallel_ranges(image_size, min_parallel_work,
                      [&](int64_t begin, int64_t end) { std::fill_n(dimage + begin, end - begin, 0.0f); });
    for_each_band(g, plan_.rows_per_band, image, scratch,
                  [&](int64_t row, int64_t row_end, int64_t columns, const float* col, int64_t ld) {
                    const float* d = dout + row * out_w;
                    for (int64_t grp = 0; dweight && grp < group_; ++grp)
                      blas::gemm(Trans::no, Trans::yes, m, k, columns, 1.0f, d + grp * m * out_size, out_size,
                                 col + grp * k * ld, ld, 1.0f, dweight + grp * m * k, k);
                    if (!dimage) return;
                    if (g.is_pointwise()) {
                      for (int64_t grp = 0; grp < group_; ++grp)
                        blas::gemm(Trans::yes, Trans::no, k, columns, m, 1.0f, weight + grp * m * k, k,
                                   d + grp * m * out_size, out_size, 0.0f, dimage + grp * k * out_size + row * out_w,
                                   out_size);
                    } else {
                      // The band's columns are no longer needed: its image gradient goes through them.
                      for (int64_t grp = 0; grp < group_; ++grp)
                        blas::gemm(Trans::yes, Trans::no, k, columns, m, 1.0f, weight + grp * m * k, k,
                                   d + grp * m * out_size, out_size, 0.0f, scratch + grp * k * columns, columns);
                      col2im_add(scratch, columns, g, row, row_end, dimage);
                    }
                  });
  }
}

TAIHU_REGISTER_LAYER("Convolution", ConvolutionLayer);

}  // namespace taihu
