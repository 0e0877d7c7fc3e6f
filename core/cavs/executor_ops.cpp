// The Executor's ops that are neither row-local nor matmuls
// (core/cavs/executor.hpp), forward and backward: gathers and scatters of the
// children's state, embeddings, pushes and losses. (executor.cpp runs the
// phases and steps, executor_rowwise.cpp the fused row-local ops,
// executor_matmul.cpp the merged matmuls and weight gradients.)
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

// Longer than 80 lines because it is the op table: one case per op kind,
// each a short loop over the range's rows, compiled for each ISA as one
// dispatch (TAIHU_MULTIVERSION). A new op is one more case.
TAIHU_MULTIVERSION void Executor::op_forward(int32_t id, const Range& r) {
  const Definition& d = f_.definition();
  const Op& op = d.ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const auto offsets = schedule_.child_offsets();
  const auto child_rows = schedule_.child_rows();
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(w);
  switch (op.kind) {
    case OpKind::gather:
    case OpKind::gather_sum:
    case OpKind::children: {
      const float* s = data(d.scatter_value);
      const int64_t lds = ld(d.scatter_value);
      float* y = data(id);
      const int64_t ldy = ld(id);
      if (op.kind == OpKind::gather) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          const int32_t c = schedule_.child(i, op.slot);
          if (c < 0)
            std::memset(y + i * ldy, 0, row_bytes);
          else
            std::memcpy(y + i * ldy, s + c * lds, row_bytes);
        }
      } else if (op.kind == OpKind::gather_sum) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          float* yr = y + i * ldy;
          std::memset(yr, 0, row_bytes);
          for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
            add_row(yr, s + child_rows[static_cast<size_t>(e)] * lds, w);
        }
      } else {
        for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
          std::memcpy(y + e * ldy, s + child_rows[static_cast<size_t>(e)] * lds, row_bytes);
      }
      break;
    }
    case OpKind::to_edges: {
      const float* x = data(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      float* y = data(id);
      const int64_t ldy = ld(id);
      const auto parents = schedule_.edge_parents();
      for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
        std::memcpy(y + e * ldy, x + parents[static_cast<size_t>(e)] * ldx, row_bytes);
      break;
    }
    case OpKind::sum_children: {
      const float* x = data(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      float* y = data(id);
      const int64_t ldy = ld(id);
      for (int32_t i = r.begin; i < r.end; ++i) {
        float* yr = y + i * ldy;
        std::memset(yr, 0, row_bytes);
        for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
          add_row(yr, x + e * ldx, w);
      }
      break;
    }
    case OpKind::embedding: {
      const float* table = weight(op.param);
      float* y = data(id);
      const int64_t ldy = ld(id);
      const auto tokens = schedule_.tokens();
      for (int32_t i = r.begin; i < r.end; ++i) {
        const int32_t t = tokens[static_cast<size_t>(i)];
        if (t < 0)
          std::memset(y + i * ldy, 0, row_bytes);
        else
          std::memcpy(y + i * ldy, table + static_cast<int64_t>(t) * w, row_bytes);
      }
      break;
    }
    case OpKind::softmax_cross_entropy: {
      const int32_t logits_id = op.inputs[0];
      const float* x = data(logits_id);
      const int64_t ldx = ld(logits_id);
      const int32_t c = d.ops[static_cast<size_t>(logits_id)].width;
      const int32_t k = loss_index_[static_cast<size_t>(id)];  // which loss this is
      float* lse = log_normalizers_.data() + static_cast<int64_t>(k) * schedule_.num_rows();
      const auto labels = schedule_.labels();
      for (int32_t i = r.begin; i < r.end; ++i) {
        const float* xr = x + i * ldx;
        int32_t best = 0;
        float m = xr[0];
        for (int32_t j = 1; j < c; ++j)
          if (xr[j] > m) {
            m = xr[j];
            best = j;
          }
        if (k == 0) predictions_[static_cast<size_t>(i)] = best;
        const int32_t label = labels[static_cast<size_t>(i)];
        if (label < 0) continue;
        float sum = 0.0f;
        for (int32_t j = 0; j < c; ++j) sum += kernels::fast_exp(xr[j] - m);
        lse[i] = m + std::log(sum);
        loss_ += static_cast<double>(lse[i] - xr[label]);
        ++loss_vertices_;
      }
      break;
    }
    default:
      raise("cavs executor: no forward for {}", d.describe(id));
  }
}

// The op table, backward (op_forward says why it is one function).
TAIHU_MULTIVERSION void Executor::op_backward(int32_t id, const Range& r) {
  const Definition& d = f_.definition();
  const Program& p = *program_;
  const Op& op = d.ops[static_cast<size_t>(id)];
  const int32_t w = op.width;
  const auto offsets = schedule_.child_offsets();
  const auto child_rows = schedule_.child_rows();
  switch (op.kind) {
    case OpKind::gather:
    case OpKind::gather_sum:
    case OpKind::children: {
      if (!p.needs_grad[static_cast<size_t>(d.scatter_value)]) break;
      float* ds = grad(d.scatter_value);
      const int64_t lds = ld(d.scatter_value);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      if (op.kind == OpKind::gather) {
        for (int32_t i = r.begin; i < r.end; ++i) {
          const int32_t c = schedule_.child(i, op.slot);
          if (c >= 0) add_row(ds + c * lds, dy + i * ldy, w);
        }
      } else if (op.kind == OpKind::gather_sum) {
        for (int32_t i = r.begin; i < r.end; ++i)
          for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e)
            add_row(ds + child_rows[static_cast<size_t>(e)] * lds, dy + i * ldy, w);
      } else {
        for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
          add_row(ds + child_rows[static_cast<size_t>(e)] * lds, dy + e * ldy, w);
      }
      break;
    }
    case OpKind::to_edges: {
      if (!p.needs_grad[static_cast<size_t>(op.inputs[0])]) break;
      float* dx = grad(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      const auto parents = schedule_.edge_parents();
      for (int32_t e = r.edge_begin; e < r.edge_end; ++e)
        add_row(dx + parents[static_cast<size_t>(e)] * ldx, dy + e * ldy, w);
      break;
    }
    case OpKind::sum_children: {
      if (!p.needs_grad[static_cast<size_t>(op.inputs[0])]) break;
      float* dx = grad(op.inputs[0]);
      const int64_t ldx = ld(op.inputs[0]);
      const float* dy = grad(id);
      const int64_t ldy = ld(id);
      const bool assign = p.assign_grad[static_cast<size_t>(op.inputs[0])] != 0;
      for (int32_t i = r.begin; i < r.end; ++i)
        for (int32_t e = offsets[static_cast<size_t>(i)]; e < offsets[static_cast<size_t>(i) + 1]; ++e) {
          if (assign)
            std::memcpy(dx + e * ldx, dy + i * ldy, sizeof(float) * static_cast<size_t>(w));
          else
            add_row(dx + e * ldx, dy + i * ldy, w);
        }
      break;
    }
    case OpKind::embedding:
      if (!options_.lazy_weight_gradients) embedding_weight_gradient(id, r.begin, r.end);
      break;
    case OpKind::softmax_cross_entropy: {
      const int32_t logits_id = op.inputs[0];
      if (!p.needs_grad[static_cast<size_t>(logits_id)]) break;
      const float* x = data(logits_id);
      float* dx = grad(logits_id);
      const int64_t ldx = ld(logits_id);
      const int32_t c = d.ops[static_cast<size_t>(logits_id)].width;
      const int32_t k = loss_index_[static_cast<size_t>(id)];
      const float* lse = log_normalizers_.data() + static_cast<int64_t>(k) * schedule_.num_rows();
      const auto labels = schedule_.labels();
      const float scale = loss_scale_;
      for (int32_t i = r.begin; i < r.end; ++i) {
        const int32_t label = labels[static_cast<size_t>(i)];
        if (label < 0) continue;
        const float* __restrict xr = x + i * ldx;
        float* __restrict dxr = dx + i * ldx;
        const float shift = lse[i];
        for (int32_t j = 0; j < c; ++j) dxr[j] += scale * kernels::fast_exp(xr[j] - shift);
        dxr[label] -= scale;
      }
      break;
    }
    default:
      raise("cavs executor: no backward for {}", d.describe(id));
  }
}

}  // namespace taihu::cavs
