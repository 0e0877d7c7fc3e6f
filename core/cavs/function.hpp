#pragma once
// The Cavs vertex function F: a static dataflow graph, written once, that says
// what one vertex of an input graph computes (../shared/reference/cavs.md §1).
// F reads its children's state with gather / gather_sum / children, its own
// input with pull(), publishes its state to its parents with scatter() and
// exports values with push() or a per-vertex loss. The runtime (schedule.hpp,
// executor.hpp) evaluates F batched over many vertices of many samples.
//
// Values live in one of two row domains: one row per vertex, or one row per
// (vertex, child) edge (children(), to_edges(), sum_children()), which is how
// child-sum Tree-LSTMs give every child its own forget gate. pull() and
// label() are per-vertex integer ids (token, class), usable only by
// embedding() and softmax_cross_entropy().
//
// Weights are stored [out, in], so y = x * W^T and the matmuls that share an
// input can be merged into one GEMM over a row-concatenated weight.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/error.hpp"
#include "core/layers/filler.hpp"
#include "core/layers/layer.hpp"

namespace taihu::cavs {

// A vertex function that cannot work as written (shapes, unused values, a
// gather from a child slot that cannot exist); names the op and its operands.
class FunctionError : public Error {
 public:
  using Error::Error;
};

// Handles into a FunctionBuilder; only meaningful for the builder that made them.
struct Value {
  int32_t id = -1;
};
struct Parameter {
  int32_t id = -1;
};

enum class OpKind : uint8_t {
  pull, label,                      // per-vertex integer ids
  gather, gather_sum, children,     // the children's scattered state
  to_edges, sum_children,           // vertex rows <-> edge rows
  embedding, matmul, add_bias,      // with a parameter
  add, sub, mul, sigmoid, tanh, relu, one_minus, concat, slice,
  scatter, push, softmax_cross_entropy,  // sinks
};
const char* op_name(OpKind kind);

enum class Domain : uint8_t { vertex, edge, index, none };

struct Op {
  OpKind kind;
  Domain domain = Domain::vertex;  // of the output
  int32_t width = 0;               // of the output (0 for sinks and ids)
  std::vector<int32_t> inputs;     // value (= op) ids
  int32_t param = -1;
  int32_t slot = 0;    // gather: child slot
  int32_t offset = 0;  // slice: first column
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;  // [out, in] for matmul, [rows, width] for embedding, [width] for bias
  Filler filler;
};

struct FunctionOptions {
  // Most children a vertex may have; gather(slot) needs slot < max_arity.
  // -1: unbounded (only gather_sum / children may then read children).
  int32_t max_arity = -1;
  uint64_t seed = 0;  // parameter initialisation
};

// The recorded graph: ops in definition order (each op's output is value id
// = op index), parameters, and facts the schedule checks inputs against.
struct Definition {
  FunctionOptions options;
  std::vector<Op> ops;
  std::vector<ParamSpec> params;
  int32_t scatter_value = -1;  // the value scatter() publishes; -1 if none
  int32_t gather_width = 0;    // width every gather reads (== scatter width)
  int32_t num_slots = 0;       // 1 + largest gather slot used
  bool reads_all_children = false;  // gather_sum or children used
  int64_t vocabulary = -1;     // rows of the smallest embedding table; -1 if no embedding
  int64_t num_classes = -1;    // smallest softmax width; -1 if no loss
  std::vector<int32_t> push_values;

  // "matmul #7 (x = concat #6 [vertex x 300], W = 'U' [750 x 300])"
  std::string describe(int32_t value) const;
};

class VertexFunction {
 public:
  VertexFunction(std::shared_ptr<const Definition> definition, std::vector<Param> params);

  const Definition& definition() const { return *definition_; }
  std::shared_ptr<const Definition> shared_definition() const { return definition_; }

  // Parameters in definition order, as taihu Params (for Solver::create).
  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }
  std::vector<Param*> param_pointers();
  std::vector<const Param*> param_pointers() const;
  Param& param(std::string_view name);
  // Zeroes every parameter diff (diffs accumulate across backward passes).
  void zero_diffs();

  // Same F, with its own copy of the parameters (values copied, diffs zeroed):
  // one per data-parallel replica, so replicas' executors never share memory.
  VertexFunction replica() const;

 private:
  std::shared_ptr<const Definition> definition_;
  std::vector<Param> params_;
};

class FunctionBuilder {
 public:
  explicit FunctionBuilder(FunctionOptions options = {});

  // shape [out, in] (matmul), [rows, width] (embedding) or [width] (bias).
  // Default filler: uniform(+-1/sqrt(in)) for matrices, 0 for vectors.
  Parameter parameter(std::string name, std::vector<int64_t> shape, std::optional<Filler> filler = {});

  Value pull();   // the vertex's token id (none = no input: embedding gives a zero row)
  Value label();  // the vertex's label (none = no loss at this vertex)

  // Child `slot`'s scattered state; a zero row where the vertex has no such child.
  Value gather(int32_t slot, int32_t width);
  // Sum of all children's scattered states (zero for a leaf).
  Value gather_sum(int32_t width);
  // Edge domain: one row per (vertex, child) edge, the child's scattered state.
  Value children(int32_t width);
  // Edge domain: the vertex value repeated on each of its edges.
  Value to_edges(Value v);
  // Vertex domain: the sum of the vertex's edge rows (zero for a leaf).
  Value sum_children(Value e);

  Value embedding(Parameter table, Value ids);
  Value matmul(Value x, Parameter w);  // x * w^T, w [out, in]
  Value add_bias(Value x, Parameter b);
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value sigmoid(Value x);
  Value tanh(Value x);
  Value relu(Value x);
  Value one_minus(Value x);  // 1 - x
  Value concat(std::initializer_list<Value> values);
  Value concat(const std::vector<Value>& values);
  Value slice(Value v, int32_t offset, int32_t length);

  void scatter(Value state);
  void push(Value output);
  // Per-vertex softmax cross-entropy; the loss is its sum over labelled vertices.
  void softmax_cross_entropy(Value logits, Value labels);

  // Checks the whole graph (unused values and parameters, gathers without a
  // scatter, no output) and initialises the parameters.
  VertexFunction build() &&;

 private:
  const Op& value(Value v, const char* op, const char* role) const;
  int32_t add_op(Op op);
  Value unary(OpKind kind, Value x);
  Value binary(OpKind kind, Value a, Value b);
  Value gather_op(OpKind kind, Domain domain, int32_t width, int32_t slot);

  std::shared_ptr<Definition> def_;
};

}  // namespace taihu::cavs
