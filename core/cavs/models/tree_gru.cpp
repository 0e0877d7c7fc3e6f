#include "core/cavs/models/tree_gru.hpp"

#include "core/common/check.hpp"

namespace taihu::cavs {

VertexFunction make_tree_gru(const TreeGruOptions& o) {
  require<FunctionError>(o.vocabulary > 0 && o.embedding > 0 && o.hidden > 0 && o.classes >= 2,
                         "Tree-GRU: vocabulary, embedding and hidden must be positive and classes >= 2");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = 2, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, Filler{Filler::Kind::uniform, -o.embedding_scale, o.embedding_scale});
  auto W_z = f.parameter("W_z", {H, X}), W_r = f.parameter("W_r", {2 * H, X}), W_n = f.parameter("W_n", {H, X});
  auto U_z = f.parameter("U_z", {H, 2 * H}), U_r = f.parameter("U_r", {2 * H, 2 * H});
  auto U_n = f.parameter("U_n", {H, 2 * H});
  auto b_z = f.parameter("b_z", {H}), b_r = f.parameter("b_r", {2 * H}), b_n = f.parameter("b_n", {H});
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value h_l = f.gather(0, H), h_r = f.gather(1, H);
  Value hc = f.concat({h_l, h_r});
  Value x = f.embedding(E, f.pull());
  Value z = f.sigmoid(f.add_bias(f.add(f.matmul(x, W_z), f.matmul(hc, U_z)), b_z));
  Value r = f.sigmoid(f.add_bias(f.add(f.matmul(x, W_r), f.matmul(hc, U_r)), b_r));
  Value n = f.tanh(f.add_bias(f.add(f.matmul(x, W_n), f.matmul(f.mul(r, hc), U_n)), b_n));
  Value h = f.add(f.mul(f.one_minus(z), n), f.mul(z, f.add(h_l, h_r)));
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
