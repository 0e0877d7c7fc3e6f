#include "core/cavs/models/gated_graph.hpp"

#include "core/cavs/models/cell_parts.hpp"
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
  const GruParameters gru = gru_parameters(f, H, H, H);
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});

  Value m = f.sum_children(f.add_bias(f.matmul(f.children(H), W_msg), b_msg));
  Value x = f.embedding(E, f.pull());
  Value h = gru_cell(f, gru, x, m, [&] { return m; });
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
