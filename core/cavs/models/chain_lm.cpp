#include "core/cavs/models/chain_lm.hpp"

#include "core/cavs/models/cell_parts.hpp"
#include "core/common/check.hpp"

namespace taihu::cavs {

namespace {

void check(const ChainLmOptions& o, const char* model) {
  require<FunctionError>(o.vocabulary >= 2 && o.embedding > 0 && o.hidden > 0,
                         "{}: vocabulary must be >= 2, embedding and hidden positive (got {}, {}, {})", model,
                         o.vocabulary, o.embedding, o.hidden);
}

Filler uniform(float s) { return Filler{Filler::Kind::uniform, -s, s}; }

}  // namespace

VertexFunction make_lstm_language_model(const ChainLmOptions& o) {
  check(o, "LSTM language model");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = 1, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, uniform(o.embedding_scale));
  Parameter W[4], U[4], b[4];
  const char* gate[4] = {"i", "f", "u", "o"};
  for (int g = 0; g < 4; ++g) {
    W[g] = f.parameter(std::string("W_") + gate[g], {H, X});
    U[g] = f.parameter(std::string("U_") + gate[g], {H, H});
    b[g] = f.parameter(std::string("b_") + gate[g], {H});
  }
  auto W_out = f.parameter("W_out", {o.vocabulary, H});
  auto b_out = f.parameter("b_out", {o.vocabulary});

  Value prev = f.gather(0, 2 * H);
  Value h_prev = f.slice(prev, 0, H), c_prev = f.slice(prev, H, H);
  Value x = f.embedding(E, f.pull());
  Value pre[4];
  for (int g = 0; g < 4; ++g) pre[g] = gate_input(f, x, W[g], h_prev, U[g], b[g]);
  Value i = f.sigmoid(pre[0]), fg = f.sigmoid(pre[1]), u = f.tanh(pre[2]), out = f.sigmoid(pre[3]);
  Value c = f.add(f.mul(i, u), f.mul(fg, c_prev));
  Value h = f.mul(out, f.tanh(c));
  f.scatter(f.concat({h, c}));
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

VertexFunction make_gru_language_model(const ChainLmOptions& o) {
  check(o, "GRU language model");
  const int32_t H = o.hidden, X = o.embedding;
  FunctionBuilder f({.max_arity = 1, .seed = o.seed});
  auto E = f.parameter("embedding", {o.vocabulary, X}, uniform(o.embedding_scale));
  const GruParameters gru = gru_parameters(f, H, X, H);
  auto W_out = f.parameter("W_out", {o.vocabulary, H});
  auto b_out = f.parameter("b_out", {o.vocabulary});

  Value h_prev = f.gather(0, H);
  Value x = f.embedding(E, f.pull());
  Value h = gru_cell(f, gru, x, h_prev, [&] { return h_prev; });
  f.scatter(h);
  f.push(h);
  f.softmax_cross_entropy(f.add_bias(f.matmul(h, W_out), b_out), f.label());
  return std::move(f).build();
}

InputGraph language_model_chain(std::span<const int32_t> tokens) {
  require<DataError>(tokens.size() >= 2, "language model chain: need at least 2 tokens, got {}", tokens.size());
  InputGraph g = InputGraph::chain(tokens.first(tokens.size() - 1));
  for (int32_t t = 0; t < g.num_vertices(); ++t) g.set_label(t, tokens[static_cast<size_t>(t) + 1]);
  return g;
}

}  // namespace taihu::cavs
