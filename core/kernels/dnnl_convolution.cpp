#include "core/kernels/dnnl_convolution.hpp"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/kernels/parallel.hpp"

namespace taihu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dims = memory::dims;
constexpr auto f32 = memory::data_type::f32;

// Work per piece of images below which a oneDNN call's own cost (a few
// microseconds, a reorder in and out, and its channels padded to the vector
// width) is not paid back: LeNet's conv2 (3.2 MFLOP an image) took 9.8 ms a
// step in pieces of 2 images, 9.2 in pieces of 8.
constexpr double min_piece_flops = 3.2e7;
// But at least this many pieces per batch, for the pool's threads to share
// (a count independent of the thread count: the pieces fix the primitives,
// and the results must not depend on the threads).
constexpr int64_t min_pieces = 8;
// Weight-gradient pieces: output-channel slices, about this many per layer.
constexpr int64_t target_slices = 16;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN's OpenMP is held to one thread on every thread that creates or
// runs a primitive, so it never starts a team of its own. Creation matters
// too: a primitive plans its work for the threads there are when it is made.
void hold_openmp_to_this_thread() {
  thread_local const bool held = (omp_set_num_threads(1), true);
  (void)held;
}

// The calling thread's stream.
dnnl::stream& thread_stream() {
  hold_openmp_to_this_thread();
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

// Per-thread, 64-byte aligned, growing buffers: blocked copies of a piece's
// tensors and oneDNN's scratchpad; and, on the thread that calls a layer's
// pass, what the whole call reads: the weights in the kernel's layout, and
// for the weight gradient the whole batch's input in the kernel's layout
// (one buffer as large as the largest layer's, not one per layer: held per
// layer, these copies added up to a copy of every convolution's input, and
// two of every weight, 0.2 GB in ResNet-50).
enum Slot { slot_in, slot_out, slot_scratchpad, slot_diff, slot_weights, slot_batch_input, slot_count };
void* thread_buffer(Slot slot, size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[slot_count];
  Buffer& b = buffers[slot];
  if (b.size < bytes) {
    std::free(b.data);
    b.size = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, b.size);
  }
  return b.data;
}

memory::desc plain(const Dims& dims, Tag tag) { return memory::desc(dims, f32, tag); }
memory::desc any(const Dims& dims) { return memory::desc(dims, f32, Tag::any); }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool is_jit(const dnnl::primitive_desc_base& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("jit", 0) == 0;
}

// `user` as `wanted`: the same memory when the layouts agree, else a reorder
// into the thread's buffer `slot`.
memory as_layout(const memory& user, const memory::desc& wanted, Slot slot, dnnl::stream& stream) {
  if (user.get_desc() == wanted) return user;
  memory converted(wanted, cpu_engine(), thread_buffer(slot, wanted.get_size()));
  dnnl::reorder(user, converted).execute(stream, const_cast<memory&>(user), converted);
  return converted;
}

}  // namespace

struct DnnlConvolution::Impl {
  ConvGeometry g;
  int64_t num_output = 0;
  int64_t group = 1;
  bool bias = false;
  Dims strides, dilates, pad_l, pad_r;
  std::string kernels[3];

  // Forward and data-gradient primitives for a piece of `images` images.
  struct ImagePrimitives {
    dnnl::convolution_forward::primitive_desc forward_pd;
    dnnl::convolution_forward forward;
    dnnl::convolution_backward_data::primitive_desc data_pd;
    dnnl::convolution_backward_data data;
  };
  std::map<int64_t, ImagePrimitives> image_primitives;
  // Weight-gradient primitives for a slice of `channels` output channels over `batch` images.
  struct WeightPrimitives {
    dnnl::convolution_backward_weights::primitive_desc pd;
    dnnl::convolution_backward_weights primitive;
    dnnl::reorder accumulate;  // the slice's weight gradient added into taihu's OIHW
  };
  std::map<std::pair<int64_t, int64_t>, WeightPrimitives> weight_primitives;

  int64_t group_channels() const { return g.channels / group; }  // input channels per group
  int64_t group_outputs() const { return num_output / group; }
  Dims src_dims(int64_t n) const { return {n, g.channels, g.height, g.width}; }
  Dims dst_dims(int64_t n, int64_t channels) const { return {n, channels, g.out_height(), g.out_width()}; }
  // All weights (OIHW, or GOIHW split by group: the same memory) ...
  Dims all_weight_dims() const {
    if (group == 1) return {num_output, g.channels, g.kernel_h, g.kernel_w};
    return {group, group_outputs(), group_channels(), g.kernel_h, g.kernel_w};
  }
  Tag all_weight_tag() const { return group == 1 ? Tag::oihw : Tag::goihw; }
  // ... and those of `channels` outputs within one group.
  Dims weight_dims(int64_t channels) const { return {channels, group_channels(), g.kernel_h, g.kernel_w}; }
  // One group's input channels of n images: a strided view of NCHW.
  memory::desc group_input(int64_t n) const {
    const int64_t plane = g.height * g.width;
    return memory::desc({n, group_channels(), g.height, g.width}, f32, Dims{g.channels * plane, plane, g.width, 1});
  }
  double image_flops() const {
    return 2.0 * double(num_output) * double(g.out_size()) * double(g.col_rows() / group);
  }

  // Images per forward or data-gradient piece: enough work to pay for a
  // call, and a divisor of the batch, so that every piece has the same size
  // and one primitive (with one weights layout) serves them all.
  int64_t images_per_piece(int64_t batch) const {
    const auto wanted = static_cast<int64_t>(std::ceil(min_piece_flops / std::max(image_flops(), 1.0)));
    for (int64_t n = std::clamp<int64_t>(wanted, 1, std::max<int64_t>(batch / min_pieces, 1)); n > 1; --n)
      if (batch % n == 0) return n;
    return 1;
  }


  // Output channels per weight-gradient piece: a multiple of 16 dividing a
  // group's outputs, giving about target_slices pieces in all.
  int64_t slice_channels() const {
    const int64_t outputs = group_outputs();
    if (outputs % 16 != 0) return outputs;
    const int64_t slice = std::max<int64_t>(16, (outputs * group / target_slices + 15) / 16 * 16);
    return outputs % slice == 0 ? slice : 16;
  }

  // The weight gradient's split. By output-channel slices, each slice reads
  // the whole batch's input: (slices - 1) extra reads of it. By pieces of
  // images (as forward), each piece reads its images once but writes a
  // partial gradient of all weights, which are then summed: two passes over
  // pieces x weights. Whichever moves fewer floats; both are fixed by the
  // shape and the batch, and so are the bits. (ResNet-50's 1x1 layers on
  // 56x56 inputs: 3 extra reads of 26M floats against 0.3M floats of partial
  // sums.) Grouped layers keep the slices.
  bool weight_gradient_by_images(int64_t batch) const {
    if (group != 1) return false;
    const double input = double(batch) * double(g.channels * g.height * g.width);
    const double weights = double(num_output) * double(g.col_rows());
    const int64_t slices = num_output / slice_channels();
    const int64_t pieces = batch / images_per_piece(batch);
    return double(slices - 1) * input > 2.0 * double(pieces) * weights;
  }

  ImagePrimitives& images(int64_t n) {
    auto it = image_primitives.find(n);
    if (it != image_primitives.end()) return it->second;
    hold_openmp_to_this_thread();
    const auto attr = user_scratchpad();
    const auto bias_md = bias ? any({num_output}) : memory::desc();
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                       any(src_dims(n)), any(all_weight_dims()), bias_md,
                                       any(dst_dims(n, num_output)), strides, dilates, pad_l, pad_r);
    ImagePrimitives p;
    p.forward_pd = dnnl::convolution_forward::primitive_desc(fd, attr, cpu_engine());
    dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, any(src_dims(n)),
                                             any(all_weight_dims()), any(dst_dims(n, num_output)), strides,
                                             dilates, pad_l, pad_r);
    p.data_pd = dnnl::convolution_backward_data::primitive_desc(dd, attr, cpu_engine(), p.forward_pd);
    p.forward = dnnl::convolution_forward(p.forward_pd);
    p.data = dnnl::convolution_backward_data(p.data_pd);
    return image_primitives.emplace(n, std::move(p)).first->second;
  }

  WeightPrimitives& weights(int64_t channels, int64_t batch) {
    const auto key = std::make_pair(channels, batch);
    auto it = weight_primitives.find(key);
    if (it != weight_primitives.end()) return it->second;
    hold_openmp_to_this_thread();
    const auto attr = user_scratchpad();
    // oneDNN derives backward kernels from a forward one of the same shape.
    const Dims input{batch, group_channels(), g.height, g.width};
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                       any(input), any(weight_dims(channels)),
                                       bias ? any({channels}) : memory::desc(), any(dst_dims(batch, channels)),
                                       strides, dilates, pad_l, pad_r);
    const dnnl::convolution_forward::primitive_desc hint(fd, cpu_engine());
    dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, any(input),
                                                any(weight_dims(channels)), bias ? any({channels}) : memory::desc(),
                                                any(dst_dims(batch, channels)), strides, dilates, pad_l, pad_r);
    WeightPrimitives p;
    p.pd = dnnl::convolution_backward_weights::primitive_desc(wd, attr, cpu_engine(), hint);
    p.primitive = dnnl::convolution_backward_weights(p.pd);
    dnnl::post_ops add;
    add.append_sum(1.0f);
    dnnl::primitive_attr accumulate_attr;
    accumulate_attr.set_post_ops(add);
    p.accumulate = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), p.pd.diff_weights_desc(), cpu_engine(),
                                                               plain(weight_dims(channels), Tag::oihw),
                                                               accumulate_attr));
    return weight_primitives.emplace(key, std::move(p)).first->second;
  }

  // `weight` (OIHW) in the layout `wanted`: itself, or a copy in the calling
  // thread's buffer, which lasts until its next call.
  const float* prepared_weights(const float* weight, const memory::desc& wanted) {
    const memory::desc user = plain(all_weight_dims(), all_weight_tag());
    if (wanted == user) return weight;
    auto* buffer = static_cast<float*>(thread_buffer(slot_weights, wanted.get_size()));
    memory from(user, cpu_engine(), const_cast<float*>(weight));
    memory to(wanted, cpu_engine(), buffer);
    dnnl::reorder(from, to).execute(thread_stream(), from, to);
    return buffer;
  }

  // Calls piece(first, count, primitives) for the batch's pieces of images,
  // on the thread pool.
  template <class Piece>
  void for_image_pieces(int64_t batch, Piece&& piece) {
    const int64_t per_piece = images_per_piece(batch);
    ImagePrimitives& primitives = images(per_piece);
    parallel_for(batch / per_piece, [&](int64_t i) { piece(i * per_piece, per_piece, primitives); });
  }
};

DnnlConvolution::DnnlConvolution(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DnnlConvolution::~DnnlConvolution() = default;

std::unique_ptr<DnnlConvolution> DnnlConvolution::create(const ConvGeometry& geometry, int64_t num_output,
                                                         int64_t group, bool bias) {
  if (group < 1 || geometry.channels % group != 0 || num_output % group != 0 || geometry.out_height() < 1 ||
      geometry.out_width() < 1)
    return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->g = geometry;
  impl->num_output = num_output;
  impl->group = group;
  impl->bias = bias;
  impl->strides = {geometry.stride_h, geometry.stride_w};
  impl->dilates = {geometry.dilation_h - 1, geometry.dilation_w - 1};
  impl->pad_l = {geometry.pad_h, geometry.pad_w};
  // Right padding: whatever the last window reaches beyond the input.
  impl->pad_r = {(geometry.out_height() - 1) * geometry.stride_h + geometry.extent_h() - geometry.height - geometry.pad_h,
                 (geometry.out_width() - 1) * geometry.stride_w + geometry.extent_w() - geometry.width - geometry.pad_w};
  try {
    const int64_t batch = 8;
    Impl::ImagePrimitives& p = impl->images(impl->images_per_piece(batch));
    Impl::WeightPrimitives& w = impl->weights(impl->slice_channels(), batch);
    if (!is_jit(p.forward_pd)) return nullptr;
    impl->kernels[0] = p.forward_pd.impl_info_str();
    if (is_jit(p.data_pd)) impl->kernels[1] = p.data_pd.impl_info_str();
    if (is_jit(w.pd)) impl->kernels[2] = w.pd.impl_info_str();
  } catch (const dnnl::error&) {
    return nullptr;  // no implementation at all for this shape
  }
  return std::unique_ptr<DnnlConvolution>(new DnnlConvolution(std::move(impl)));
}

const std::string& DnnlConvolution::kernel(Pass pass) const { return impl_->kernels[static_cast<int>(pass)]; }

void DnnlConvolution::forward(const float* x, const float* weight, const float* bias, float* y, int64_t batch) {
  Impl& m = *impl_;
  const float* w = m.prepared_weights(weight, m.images(m.images_per_piece(batch)).forward_pd.weights_desc());
  const int64_t in_size = m.g.channels * m.g.height * m.g.width;
  const int64_t out_size = m.num_output * m.g.out_size();
  m.for_image_pieces(batch, [&](int64_t first, int64_t count, Impl::ImagePrimitives& p) {
    dnnl::stream& stream = thread_stream();
    const auto& pd = p.forward_pd;
    memory user_src(plain(m.src_dims(count), Tag::nchw), cpu_engine(), const_cast<float*>(x + first * in_size));
    memory user_dst(plain(m.dst_dims(count, m.num_output), Tag::nchw), cpu_engine(), y + first * out_size);
    memory src = as_layout(user_src, pd.src_desc(), slot_in, stream);
    memory weights(pd.weights_desc(), cpu_engine(), const_cast<float*>(w));
    const bool direct = pd.dst_desc() == user_dst.get_desc();
    memory dst = direct ? user_dst : memory(pd.dst_desc(), cpu_engine(), thread_buffer(slot_out, pd.dst_desc().get_size()));
    memory scratchpad(pd.scratchpad_desc(), cpu_engine(), thread_buffer(slot_scratchpad, pd.scratchpad_desc().get_size()));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (m.bias) args.emplace(DNNL_ARG_BIAS, memory(pd.bias_desc(), cpu_engine(), const_cast<float*>(bias)));
    p.forward.execute(stream, args);
    if (!direct) dnnl::reorder(dst, user_dst).execute(stream, dst, user_dst);
    stream.wait();
  });
}

void DnnlConvolution::backward_data(const float* dy, const float* weight, float* dx, int64_t batch) {
  Impl& m = *impl_;
  const float* w = m.prepared_weights(weight, m.images(m.images_per_piece(batch)).data_pd.weights_desc());
  const int64_t in_size = m.g.channels * m.g.height * m.g.width;
  const int64_t out_size = m.num_output * m.g.out_size();
  m.for_image_pieces(batch, [&](int64_t first, int64_t count, Impl::ImagePrimitives& p) {
    dnnl::stream& stream = thread_stream();
    const auto& pd = p.data_pd;
    memory user_dy(plain(m.dst_dims(count, m.num_output), Tag::nchw), cpu_engine(),
                   const_cast<float*>(dy + first * out_size));
    memory user_dx(plain(m.src_dims(count), Tag::nchw), cpu_engine(), dx + first * in_size);
    memory diff_dst = as_layout(user_dy, pd.diff_dst_desc(), slot_in, stream);
    memory weights(pd.weights_desc(), cpu_engine(), const_cast<float*>(w));
    const bool direct = pd.diff_src_desc() == user_dx.get_desc();
    memory diff_src =
        direct ? user_dx : memory(pd.diff_src_desc(), cpu_engine(), thread_buffer(slot_out, pd.diff_src_desc().get_size()));
    memory scratchpad(pd.scratchpad_desc(), cpu_engine(), thread_buffer(slot_scratchpad, pd.scratchpad_desc().get_size()));
    p.data.execute(stream, {{DNNL_ARG_DIFF_DST, diff_dst},
                            {DNNL_ARG_WEIGHTS, weights},
                            {DNNL_ARG_DIFF_SRC, diff_src},
                            {DNNL_ARG_SCRATCHPAD, scratchpad}});
    if (!direct) dnnl::reorder(diff_src, user_dx).execute(stream, diff_src, user_dx);
    stream.wait();
  });
}

void DnnlConvolution::backward_weights(const float* x, const float* dy, float* dweight, float* dbias, int64_t batch) {
  Impl& m = *impl_;
  if (m.weight_gradient_by_images(batch)) return backward_weights_by_images(x, dy, dweight, dbias, batch);
  const int64_t slice = m.slice_channels();
  Impl::WeightPrimitives& p = m.weights(slice, batch);
  const auto& pd = p.pd;
  const int64_t out_plane = m.g.out_size();
  const int64_t in_size = m.g.channels * m.g.height * m.g.width;
  const int64_t group_in = m.group_channels() * m.g.height * m.g.width;  // a group's channels of one image
  const int64_t kernel_size = m.group_channels() * m.g.kernel_h * m.g.kernel_w;

  // Each group's input for the whole batch in the kernel's layout, once for
  // all of its slices (converted piece by piece of images on the pool).
  const bool convert = pd.src_desc() != m.group_input(batch);
  const size_t group_floats = pd.src_desc().get_size() / sizeof(float);
  float* const blocked_input =
      convert ? static_cast<float*>(thread_buffer(slot_batch_input, sizeof(float) * group_floats *
                                                                        static_cast<size_t>(m.group)))
              : nullptr;
  if (convert) {
    const int64_t per_piece = m.images_per_piece(batch);
    const int64_t pieces = (batch + per_piece - 1) / per_piece;
    parallel_for(m.group * pieces, [&](int64_t i) {
      const int64_t grp = i / pieces, first = (i % pieces) * per_piece, count = std::min(per_piece, batch - first);
      dnnl::stream& stream = thread_stream();
      memory from(m.group_input(count), cpu_engine(), const_cast<float*>(x + first * in_size + grp * group_in));
      memory to(pd.src_desc().submemory_desc({count, m.group_channels(), m.g.height, m.g.width}, {first, 0, 0, 0}),
                cpu_engine(), blocked_input + static_cast<size_t>(grp) * group_floats);
      dnnl::reorder(from, to).execute(stream, from, to);
      stream.wait();
    });
  }

  const int64_t slices = m.group_outputs() / slice;
  parallel_for(m.group * slices, [&](int64_t item) {
    dnnl::stream& stream = thread_stream();
    const int64_t grp = item / slices;
    const int64_t first = grp * m.group_outputs() + (item % slices) * slice;  // first output channel
    // This slice's channels of the output gradient: a strided view of NCHW.
    const memory::desc view(m.dst_dims(batch, slice), f32,
                            Dims{m.num_output * out_plane, out_plane, m.g.out_width(), 1});
    memory user_dy(view, cpu_engine(), const_cast<float*>(dy + first * out_plane));
    memory diff_dst = as_layout(user_dy, pd.diff_dst_desc(), slot_in, stream);
    const float* input = convert ? blocked_input + static_cast<size_t>(grp) * group_floats : x + grp * group_in;
    memory src(pd.src_desc(), cpu_engine(), const_cast<float*>(input));
    memory diff_weights(pd.diff_weights_desc(), cpu_engine(),
                        thread_buffer(slot_diff, pd.diff_weights_desc().get_size()));
    memory scratchpad(pd.scratchpad_desc(), cpu_engine(), thread_buffer(slot_scratchpad, pd.scratchpad_desc().get_size()));
    auto* bias_sums = static_cast<float*>(thread_buffer(slot_out, sizeof(float) * static_cast<size_t>(slice)));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, diff_dst},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (m.bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(pd.diff_bias_desc(), cpu_engine(), bias_sums));
    p.primitive.execute(stream, args);
    memory user_dw(plain(m.weight_dims(slice), Tag::oihw), cpu_engine(), dweight + first * kernel_size);
    p.accumulate.execute(stream, diff_weights, user_dw);
    stream.wait();
    if (dbias && m.bias)
      for (int64_t o = 0; o < slice; ++o) dbias[first + o] += bias_sums[o];
  });
}

// Pieces of images side by side, each a partial gradient of all weights in
// oneDNN's layout; the partials are summed in piece order (each element's sum
// in the same order on any thread count) and added to dweight once.
void DnnlConvolution::backward_weights_by_images(const float* x, const float* dy, float* dweight, float* dbias,
                                                 int64_t batch) {
  Impl& m = *impl_;
  const int64_t per_piece = m.images_per_piece(batch), pieces = batch / per_piece;
  Impl::WeightPrimitives& p = m.weights(m.num_output, per_piece);
  const auto& pd = p.pd;
  const int64_t in_size = m.g.channels * m.g.height * m.g.width;
  const int64_t out_size = m.num_output * m.g.out_size();
  const size_t partial_floats = pd.diff_weights_desc().get_size() / sizeof(float);
  const size_t bias_floats = m.bias ? static_cast<size_t>(m.num_output) : 0;
  // The calling thread's buffer, shared by the pieces: where the sliced
  // split keeps the batch's blocked input, which this split does not need.
  auto* partials = static_cast<float*>(
      thread_buffer(slot_batch_input, sizeof(float) * (partial_floats + bias_floats) * static_cast<size_t>(pieces)));
  float* bias_partials = partials + partial_floats * static_cast<size_t>(pieces);

  parallel_for(pieces, [&](int64_t piece) {
    dnnl::stream& stream = thread_stream();
    const int64_t first = piece * per_piece;
    memory user_src(plain(m.src_dims(per_piece), Tag::nchw), cpu_engine(), const_cast<float*>(x + first * in_size));
    memory user_dy(plain(m.dst_dims(per_piece, m.num_output), Tag::nchw), cpu_engine(),
                   const_cast<float*>(dy + first * out_size));
    memory src = as_layout(user_src, pd.src_desc(), slot_in, stream);
    memory diff_dst = as_layout(user_dy, pd.diff_dst_desc(), slot_out, stream);
    memory diff_weights(pd.diff_weights_desc(), cpu_engine(), partials + partial_floats * static_cast<size_t>(piece));
    memory scratchpad(pd.scratchpad_desc(), cpu_engine(), thread_buffer(slot_scratchpad, pd.scratchpad_desc().get_size()));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, diff_dst},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                         {DNNL_ARG_SCRATCHPAD, scratchpad}};
    if (m.bias)
      args.emplace(DNNL_ARG_DIFF_BIAS, memory(pd.diff_bias_desc(), cpu_engine(),
                                              bias_partials + bias_floats * static_cast<size_t>(piece)));
    p.primitive.execute(stream, args);
    stream.wait();
  });

  parallel_ranges(static_cast<int64_t>(partial_floats), parallel_grain() / pieces, [&](int64_t begin, int64_t end) {
    for (int64_t piece = 1; piece < pieces; ++piece) {
      const float* from = partials + partial_floats * static_cast<size_t>(piece);
      for (int64_t i = begin; i < end; ++i) partials[i] += from[i];
    }
  });
  dnnl::stream& stream = thread_stream();
  memory sum(pd.diff_weights_desc(), cpu_engine(), partials);
  memory user_dw(plain(m.weight_dims(m.num_output), Tag::oihw), cpu_engine(), dweight);
  p.accumulate.execute(stream, sum, user_dw);
  stream.wait();
  if (dbias && m.bias)
    for (int64_t o = 0; o < m.num_output; ++o) {
      float total = bias_partials[o];
      for (int64_t piece = 1; piece < pieces; ++piece) total += bias_partials[bias_floats * static_cast<size_t>(piece) + o];
      dbias[o] += total;
    }
}

}  // namespace taihu
