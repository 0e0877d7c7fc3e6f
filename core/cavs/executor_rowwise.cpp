// The Executor's row-local ops (core/cavs/executor.hpp), forward and
// backward, run fused tile by tile: add, mul, sigmoid, tanh, relu, concat,
// bias. (executor.cpp runs the phases and steps, executor_ops.cpp the other
// ops, executor_matmul.cpp the merged matmuls and weight gradients.)
#include "core/cavs/executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cavs/executor_detail.hpp"
#include "core/common/check.hpp"
#include "core/common/multiversion.hpp"
#include "core/kernels/elementwise.hpp"

namespace taihu::cavs {

using detail::add_row;

// The row-wise and per-vertex loops are built for AVX2 too (core/common/multiversion.hpp).
TAIHU_MULTIVERSION void Executor::rowwise_forward(int32_t id, int32_t begin, int32_t end) {
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  float* y = data(id);
  const int64_t ldy = ld(id);
  auto in = [&](size_t k) { return op.inputs[k]; };
  switch (op.kind) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: {
      const float* a = data(in(0));
      const float* b = data(in(1));
      const int64_t lda = ld(in(0)), ldb = ld(in(1));
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* ar = a + i * lda;
        const float* br = b + i * ldb;
        if (op.kind == OpKind::add)
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] + br[j];
        else if (op.kind == OpKind::sub)
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] - br[j];
        else
          for (int32_t j = 0; j < w; ++j) yr[j] = ar[j] * br[j];
      }
      break;
    }
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::relu:
    case OpKind::one_minus: {
      const float* x = data(in(0));
      const int64_t ldx = ld(in(0));
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* __restrict xr = x + i * ldx;
        if (op.kind == OpKind::sigmoid)
          for (int32_t j = 0; j < w; ++j) yr[j] = kernels::fast_sigmoid(xr[j]);
        else if (op.kind == OpKind::tanh)
          for (int32_t j = 0; j < w; ++j) yr[j] = kernels::fast_tanh(xr[j]);
        else if (op.kind == OpKind::relu)
          for (int32_t j = 0; j < w; ++j) yr[j] = xr[j] > 0.0f ? xr[j] : 0.0f;
        else
          for (int32_t j = 0; j < w; ++j) yr[j] = 1.0f - xr[j];
      }
      break;
    }
    case OpKind::add_bias: {
      const float* x = data(in(0));
      const int64_t ldx = ld(in(0));
      const float* __restrict bias = weight(op.param);
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict yr = y + i * ldy;
        const float* __restrict xr = x + i * ldx;
        for (int32_t j = 0; j < w; ++j) yr[j] = xr[j] + bias[j];
      }
      break;
    }
    case OpKind::concat: {
      int32_t col = 0;
      for (int32_t v : op.inputs) {
        const float* x = data(v);
        const int64_t ldx = ld(v);
        const int32_t wv = f_.definition().ops[static_cast<size_t>(v)].width;
        for (int64_t i = begin; i < end; ++i)
          std::memcpy(y + i * ldy + col, x + i * ldx, sizeof(float) * static_cast<size_t>(wv));
        col += wv;
      }
      break;
    }
    default:
      raise("cavs executor: {} is not a row-local op", op_name(op.kind));
  }
}

// Longer than 80 lines because it is the op table: one case per op kind,
// each a short loop over the rows begin..end, compiled for each ISA as one
// dispatch (TAIHU_MULTIVERSION). A new op is one more case.
TAIHU_MULTIVERSION void Executor::rowwise_backward(int32_t id, int32_t begin, int32_t end) {
  const Program& p = *program_;
  const Op& op = f_.definition().ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const float* dy = grad(id);
  const float* y = data(id);
  const int64_t ldy = ld(id), ldg = gld(id);
  auto in = [&](size_t k) { return op.inputs[k]; };
  auto wants = [&](int32_t v) { return p.needs_grad[static_cast<size_t>(v)] != 0; };
  auto assigns = [&](int32_t v) { return p.assign_grad[static_cast<size_t>(v)] != 0; };
  // dx (= or +=) f(j) over the rows, for input v.
  auto write = [&](int32_t v, auto&& f) {
    float* dx = grad(v);
    const int64_t ldx = gld(v);
    if (assigns(v)) {
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict dxr = dx + i * ldx;
        for (int32_t j = 0; j < w; ++j) dxr[j] = f(i, j);
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        float* __restrict dxr = dx + i * ldx;
        for (int32_t j = 0; j < w; ++j) dxr[j] += f(i, j);
      }
    }
  };
  switch (op.kind) {
    case OpKind::add:
    case OpKind::sub:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
      if (wants(in(1))) {
        if (op.kind == OpKind::add)
          write(in(1), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
        else
          write(in(1), [&](int64_t i, int32_t j) { return -dy[i * ldg + j]; });
      }
      break;
    case OpKind::mul:
      for (size_t k = 0; k < 2; ++k) {
        if (!wants(in(k))) continue;
        const float* other = data(in(1 - k));
        const int64_t ldo = ld(in(1 - k));
        write(in(k), [&](int64_t i, int32_t j) { return dy[i * ldg + j] * other[i * ldo + j]; });
      }
      break;
    case OpKind::sigmoid:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) {
          const float v = y[i * ldy + j];
          return dy[i * ldg + j] * v * (1.0f - v);
        });
      break;
    case OpKind::tanh:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) {
          const float v = y[i * ldy + j];
          return dy[i * ldg + j] * (1.0f - v * v);
        });
      break;
    case OpKind::relu:
      if (wants(in(0)))
        write(in(0), [&](int64_t i, int32_t j) { return y[i * ldy + j] > 0.0f ? dy[i * ldg + j] : 0.0f; });
      break;
    case OpKind::one_minus:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return -dy[i * ldg + j]; });
      break;
    case OpKind::add_bias:
      if (wants(in(0))) write(in(0), [&](int64_t i, int32_t j) { return dy[i * ldg + j]; });
      if (!options_.lazy_weight_gradients)
        bias_weight_gradient(id, begin, end);
      else if (transient(id))
        bias_weight_gradient(id, begin, end, bias_scratch(id));
      break;
    case OpKind::concat: {
      int32_t col = 0;
      for (int32_t v : op.inputs) {
        const int32_t wv = f_.definition().ops[static_cast<size_t>(v)].width;
        if (wants(v)) {
          float* dx = grad(v);
          const int64_t ldx = gld(v);
          for (int64_t i = begin; i < end; ++i) {
            if (assigns(v))
              std::memcpy(dx + i * ldx, dy + i * ldg + col, sizeof(float) * static_cast<size_t>(wv));
            else
              add_row(dx + i * ldx, dy + i * ldg + col, wv);
          }
        }
        col += wv;
      }
      break;
    }
    default:
      raise("cavs executor: {} is not a row-local op", op_name(op.kind));
  }
}

}  // namespace taihu::cavs
