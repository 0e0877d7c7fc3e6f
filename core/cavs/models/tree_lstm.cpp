#include "core/cavs/models/tree_lstm.hpp"

#include "core/cavs/models/cell_parts.hpp"
#include "core/common/check.hpp"

namespace taihu::cavs {

namespace {

void check(const TreeLstmOptions& o, const char* model) {
  require<FunctionError>(o.vocabulary > 0 && o.embedding > 0 && o.hidden > 0 && o.classes >= 2,
                         "{}: vocabulary, embedding and hidden must be positive and classes >= 2 "
                         "(got {}, {}, {}, {})",
                         model, o.vocabulary, o.embedding, o.hidden, o.classes);
}

Filler uniform(float s) { return Filler{Filler::Kind::uniform, -s, s}; }

}  // namespace

VertexFunction make_binary_tree_lstm(const TreeLstmOptions& o) {
  check(o, "binary Tree-LSTM");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = 2, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, uniform(o.embedding_scale));
  auto W_i = f.parameter("W_i", {H, X}), W_o = f.parameter("W_o", {H, X});
  auto W_u = f.parameter("W_u", {H, X}), W_f = f.parameter("W_f", {H, X});
  auto U_i = f.parameter("U_i", {H, 2 * H}), U_o = f.parameter("U_o", {H, 2 * H});
  auto U_u = f.parameter("U_u", {H, 2 * H});
  auto U_fl = f.parameter("U_fl", {H, 2 * H}), U_fr = f.parameter("U_fr", {H, 2 * H});
  auto b_i = f.parameter("b_i", {H}), b_o = f.parameter("b_o", {H});
  auto b_u = f.parameter("b_u", {H}), b_f = f.parameter("b_f", {H});
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value left = f.gather(0, 2 * H), right = f.gather(1, 2 * H);
  Value h_l = f.slice(left, 0, H), c_l = f.slice(left, H, H);
  Value h_r = f.slice(right, 0, H), c_r = f.slice(right, H, H);
  Value hc = f.concat({h_l, h_r});
  Value x = f.embedding(E, f.pull());
  Value xf = f.matmul(x, W_f);
  Value i = f.sigmoid(gate_input(f, x, W_i, hc, U_i, b_i));
  Value out = f.sigmoid(gate_input(f, x, W_o, hc, U_o, b_o));
  Value u = f.tanh(gate_input(f, x, W_u, hc, U_u, b_u));
  Value f_l = f.sigmoid(f.add_bias(f.add(xf, f.matmul(hc, U_fl)), b_f));
  Value f_r = f.sigmoid(f.add_bias(f.add(xf, f.matmul(hc, U_fr)), b_f));
  Value c = f.add(f.add(f.mul(i, u), f.mul(f_l, c_l)), f.mul(f_r, c_r));
  Value h = f.mul(out, f.tanh(c));
  f.scatter(f.concat({h, c}));
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

VertexFunction make_child_sum_tree_lstm(const TreeLstmOptions& o) {
  check(o, "child-sum Tree-LSTM");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = -1, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, uniform(o.embedding_scale));
  auto W_i = f.parameter("W_i", {H, X}), W_o = f.parameter("W_o", {H, X});
  auto W_u = f.parameter("W_u", {H, X}), W_f = f.parameter("W_f", {H, X});
  auto U_i = f.parameter("U_i", {H, H}), U_o = f.parameter("U_o", {H, H});
  auto U_u = f.parameter("U_u", {H, H}), U_f = f.parameter("U_f", {H, H});
  auto b_i = f.parameter("b_i", {H}), b_o = f.parameter("b_o", {H});
  auto b_u = f.parameter("b_u", {H}), b_f = f.parameter("b_f", {H});
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value kids = f.children(2 * H);  // one row per (vertex, child)
  Value h_k = f.slice(kids, 0, H), c_k = f.slice(kids, H, H);
  Value h_sum = f.sum_children(h_k);
  Value x = f.embedding(E, f.pull());
  Value i = f.sigmoid(gate_input(f, x, W_i, h_sum, U_i, b_i));
  Value out = f.sigmoid(gate_input(f, x, W_o, h_sum, U_o, b_o));
  Value u = f.tanh(gate_input(f, x, W_u, h_sum, U_u, b_u));
  Value xf = f.to_edges(f.add_bias(f.matmul(x, W_f), b_f));
  Value f_k = f.sigmoid(f.add(xf, f.matmul(h_k, U_f)));
  Value c = f.add(f.mul(i, u), f.sum_children(f.mul(f_k, c_k)));
  Value h = f.mul(out, f.tanh(c));
  f.scatter(f.concat({h, c}));
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
