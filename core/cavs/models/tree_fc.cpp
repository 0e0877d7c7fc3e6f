#include "core/cavs/models/tree_fc.hpp"

#include "core/common/check.hpp"

namespace taihu::cavs {

VertexFunction make_tree_fc(const TreeFcOptions& o) {
  require<FunctionError>(o.vocabulary > 0 && o.hidden > 0 && o.classes >= 2,
                         "Tree-FC: vocabulary and hidden must be positive and classes >= 2 (got {}, {}, {})",
                         o.vocabulary, o.hidden, o.classes);
  const int32_t H = o.hidden;
  FunctionBuilder f({.max_arity = 2, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, H}, Filler{Filler::Kind::uniform, -o.embedding_scale, o.embedding_scale});
  auto W = f.parameter("W", {H, 2 * H});
  auto W_out = f.parameter("W_out", {o.classes, H});
  auto b_out = f.parameter("b_out", {o.classes});
  Value children = f.concat({f.gather(0, H), f.gather(1, H)});
  Value h = f.relu(f.add(f.matmul(children, W), f.embedding(E, f.pull())));
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

}  // namespace taihu::cavs
