#include "core/cavs/models/gated_graph.hpp"

#include "core/common/check.hpp"

namespace taihu::cavs {

VertexFunction make_gated_graph_network(const GatedGraphOptions& o) {
  require<FunctionError>(o.vocabulary > 0 && o.hidden > 0 && o.classes >= 2,
                         "gated graph network: vocabulary and hidden must be positive and classes >= 2");
  const int32_t H = o.hidden;
  FunctionBuilder f({.max_arity = -1, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, H}, Filler{Filler::Kind::uniform, -o.embedding_scale, o.embedding_scale});
  auto W_msg = f.parameter("W_msg", {H, H});
  auto b_msg = f.parameter("b_msg", {H});
  auto W_z = f.parameter("W_z", {H, H}), W_r = f.parameter("W_r", {H, H}), W_n = f.parameter("W_n", {H, H});
  auto U_z = f.parameter("U_z", {H, H}), U_r = f.parameter("U_r", {H, H}), U_n = f.parameter("U_n", {H, H});
  auto b_z = f.parameter("b_z", {H}), b_r = f.parameter("b_r", {H}), b_n = f.parameter("b_n", {H});
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value m = f.sum_children(f.add_bias(f.matmul(f.children(H), W_msg), b_msg));
  Value x = f.embedding(E, f.pull());
  Value z = f.sigmoid(f.add_bias(f.add(f.matmul(x, W_z), f.matmul(m, U_z)), b_z));
  Value r = f.sigmoid(f.add_bias(f.add(f.matmul(x, W_r), f.matmul(m, U_r)), b_r));
  Value n = f.tanh(f.add_bias(f.add(f.matmul(x, W_n), f.matmul(f.mul(r, m), U_n)), b_n));
  Value h = f.add(f.mul(f.one_minus(z), n), f.mul(z, m));
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
