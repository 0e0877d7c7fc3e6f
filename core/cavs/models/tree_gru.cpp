#include "core/cavs/models/tree_gru.hpp"

#include "core/cavs/models/cell_parts.hpp"
#include "core/common/check.hpp"

namespace taihu::cavs {

VertexFunction make_tree_gru(const TreeGruOptions& o) {
  require<FunctionError>(o.vocabulary > 0 && o.embedding > 0 && o.hidden > 0 && o.classes >= 2,
                         "Tree-GRU: vocabulary, embedding and hidden must be positive and classes >= 2");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = 2, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, Filler{Filler::Kind::uniform, -o.embedding_scale, o.embedding_scale});
  const GruParameters gru = gru_parameters(f, H, X, 2 * H);  // over [h_l; h_r]
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value h_l = f.gather(0, H), h_r = f.gather(1, H);
  Value hc = f.concat({h_l, h_r});
  Value x = f.embedding(E, f.pull());
  Value h = gru_cell(f, gru, x, hc, [&] { return f.add(h_l, h_r); });
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
