#include "core/cavs/function.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/common/check.hpp"
#include "core/common/random.hpp"

namespace taihu::cavs {

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::pull: return "pull";
    case OpKind::label: return "label";
    case OpKind::gather: return "gather";
    case OpKind::gather_sum: return "gather_sum";
    case OpKind::children: return "children";
    case OpKind::to_edges: return "to_edges";
    case OpKind::sum_children: return "sum_children";
    case OpKind::embedding: return "embedding";
    case OpKind::matmul: return "matmul";
    case OpKind::add_bias: return "add_bias";
    case OpKind::add: return "add";
    case OpKind::sub: return "sub";
    case OpKind::mul: return "mul";
    case OpKind::sigmoid: return "sigmoid";
    case OpKind::tanh: return "tanh";
    case OpKind::relu: return "relu";
    case OpKind::one_minus: return "one_minus";
    case OpKind::concat: return "concat";
    case OpKind::slice: return "slice";
    case OpKind::scatter: return "scatter";
    case OpKind::push: return "push";
    case OpKind::softmax_cross_entropy: return "softmax_cross_entropy";
  }
  return "?";
}

namespace {

Op make_op(OpKind kind, Domain domain, int32_t width = 0, std::vector<int32_t> inputs = {}, int32_t param = -1) {
  Op op;
  op.kind = kind;
  op.domain = domain;
  op.width = width;
  op.inputs = std::move(inputs);
  op.param = param;
  return op;
}

const char* domain_name(Domain d) {
  switch (d) {
    case Domain::vertex: return "vertex";
    case Domain::edge: return "edge";
    case Domain::index: return "id";
    case Domain::none: return "none";
  }
  return "?";
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? " x " : "") + std::to_string(shape[i]);
  return s;
}

bool is_sink(OpKind k) {
  return k == OpKind::scatter || k == OpKind::push || k == OpKind::softmax_cross_entropy;
}

}  // namespace

std::string Definition::describe(int32_t value) const {
  const Op& op = ops.at(static_cast<size_t>(value));
  std::string s = fmt::format("{} #{}", op_name(op.kind), value);
  if (op.domain == Domain::vertex || op.domain == Domain::edge)
    s += fmt::format(" [{} x {}]", domain_name(op.domain), op.width);
  if (op.kind == OpKind::gather) s += fmt::format(" (slot {})", op.slot);
  if (op.param >= 0) {
    const auto& p = params[static_cast<size_t>(op.param)];
    s += fmt::format(" of '{}' [{}]", p.name, shape_str(p.shape));
  }
  return s;
}

// ---------------------------------------------------------------- VertexFunction

VertexFunction::VertexFunction(std::shared_ptr<const Definition> definition, std::vector<Param> params)
    : definition_(std::move(definition)), params_(std::move(params)) {}

std::vector<Param*> VertexFunction::param_pointers() {
  std::vector<Param*> out;
  for (auto& p : params_) out.push_back(&p);
  return out;
}

std::vector<const Param*> VertexFunction::param_pointers() const {
  std::vector<const Param*> out;
  for (const auto& p : params_) out.push_back(&p);
  return out;
}

Param& VertexFunction::param(std::string_view name) {
  for (auto& p : params_)
    if (p.name == name) return p;
  raise<FunctionError>("vertex function has no parameter '{}'", name);
}

void VertexFunction::zero_diffs() {
  for (auto& p : params_) p.blob->diff().zero();
}

VertexFunction VertexFunction::replica() const {
  std::vector<Param> copies;
  for (const auto& p : params_) {
    Param q = p;
    q.blob = std::make_shared<Blob>(p.blob->shape());
    q.blob->data().copy_from(p.blob->data());
    q.blob->diff().zero();
    copies.push_back(std::move(q));
  }
  return VertexFunction(definition_, std::move(copies));
}

// ---------------------------------------------------------------- FunctionBuilder

FunctionBuilder::FunctionBuilder(FunctionOptions options) : def_(std::make_shared<Definition>()) {
  def_->options = options;
  require<FunctionError>(options.max_arity >= -1, "FunctionBuilder: max_arity must be >= 0 or -1, got {}",
                         options.max_arity);
}

const Op& FunctionBuilder::value(Value v, const char* op, const char* role) const {
  require<FunctionError>(def_ != nullptr, "{}: the builder was already built", op);
  require<FunctionError>(v.id >= 0 && v.id < static_cast<int32_t>(def_->ops.size()),
                         "{}: {} is not a value of this vertex function (id {})", op, role, v.id);
  const Op& o = def_->ops[static_cast<size_t>(v.id)];
  require<FunctionError>(!is_sink(o.kind), "{}: {} is {}, which has no value", op, role,
                         def_->describe(v.id));
  return o;
}

int32_t FunctionBuilder::add_op(Op op) {
  require<FunctionError>(def_ != nullptr, "{}: the builder was already built", op_name(op.kind));
  def_->ops.push_back(std::move(op));
  return static_cast<int32_t>(def_->ops.size() - 1);
}

Parameter FunctionBuilder::parameter(std::string name, std::vector<int64_t> shape, std::optional<Filler> filler) {
  require<FunctionError>(def_ != nullptr, "parameter: the builder was already built");
  require<FunctionError>(!name.empty(), "parameter: empty name");
  for (const auto& p : def_->params)
    require<FunctionError>(p.name != name, "parameter '{}' is defined twice", name);
  require<FunctionError>(shape.size() == 1 || shape.size() == 2,
                         "parameter '{}': shape must be [width] or [out, in], got [{}]", name, shape_str(shape));
  for (int64_t d : shape)
    require<FunctionError>(d > 0, "parameter '{}': dimensions must be positive, got [{}]", name, shape_str(shape));
  Filler f;
  if (filler) {
    f = *filler;
  } else if (shape.size() == 2) {
    const float s = 1.0f / std::sqrt(static_cast<float>(shape[1]));
    f = Filler{Filler::Kind::uniform, -s, s};
  }
  def_->params.push_back(ParamSpec{std::move(name), std::move(shape), f});
  return Parameter{static_cast<int32_t>(def_->params.size() - 1)};
}

Value FunctionBuilder::pull() {
  Op op = make_op(OpKind::pull, Domain::index);
  return Value{add_op(op)};
}

Value FunctionBuilder::label() {
  Op op = make_op(OpKind::label, Domain::index);
  return Value{add_op(op)};
}

Value FunctionBuilder::gather_op(OpKind kind, Domain domain, int32_t width, int32_t slot) {
  require<FunctionError>(def_ != nullptr, "{}: the builder was already built", op_name(kind));
  require<FunctionError>(width > 0, "{}: width must be positive, got {}", op_name(kind), width);
  if (def_->gather_width != 0)
    require<FunctionError>(width == def_->gather_width,
                           "{}: width {} differs from the width {} of earlier gathers (all read the one "
                           "scattered state)",
                           op_name(kind), width, def_->gather_width);
  def_->gather_width = width;
  Op op = make_op(kind, domain, width);
  op.slot = slot;
  return Value{add_op(op)};
}

Value FunctionBuilder::gather(int32_t slot, int32_t width) {
  require<FunctionError>(def_ != nullptr, "gather: the builder was already built");
  const int32_t max_arity = def_->options.max_arity;
  require<FunctionError>(slot >= 0, "gather({}): slot must be >= 0", slot);
  require<FunctionError>(max_arity >= 0,
                         "gather({}): child slots need a bounded arity; set FunctionOptions::max_arity, or "
                         "use gather_sum / children for any number of children",
                         slot);
  require<FunctionError>(slot < max_arity,
                         "gather({}): child slot {} cannot exist, F allows at most {} children per vertex",
                         slot, slot, max_arity);
  def_->num_slots = std::max(def_->num_slots, slot + 1);
  return gather_op(OpKind::gather, Domain::vertex, width, slot);
}

Value FunctionBuilder::gather_sum(int32_t width) {
  require<FunctionError>(def_ != nullptr, "gather_sum: the builder was already built");
  def_->reads_all_children = true;
  return gather_op(OpKind::gather_sum, Domain::vertex, width, 0);
}

Value FunctionBuilder::children(int32_t width) {
  require<FunctionError>(def_ != nullptr, "children: the builder was already built");
  def_->reads_all_children = true;
  return gather_op(OpKind::children, Domain::edge, width, 0);
}

Value FunctionBuilder::to_edges(Value v) {
  const Op& x = value(v, "to_edges", "its operand");
  require<FunctionError>(x.domain == Domain::vertex, "to_edges: operand {} is not a vertex value",
                         def_->describe(v.id));
  Op op = make_op(OpKind::to_edges, Domain::edge, x.width, {v.id});
  return Value{add_op(op)};
}

Value FunctionBuilder::sum_children(Value e) {
  const Op& x = value(e, "sum_children", "its operand");
  require<FunctionError>(x.domain == Domain::edge, "sum_children: operand {} is not an edge value",
                         def_->describe(e.id));
  Op op = make_op(OpKind::sum_children, Domain::vertex, x.width, {e.id});
  return Value{add_op(op)};
}

Value FunctionBuilder::embedding(Parameter table, Value ids) {
  const Op& x = value(ids, "embedding", "ids");
  require<FunctionError>(x.kind == OpKind::pull, "embedding: ids must be pull(), got {}", def_->describe(ids.id));
  require<FunctionError>(table.id >= 0 && table.id < static_cast<int32_t>(def_->params.size()),
                         "embedding: not a parameter of this vertex function");
  const auto& p = def_->params[static_cast<size_t>(table.id)];
  require<FunctionError>(p.shape.size() == 2, "embedding: table '{}' must be [rows, width], got [{}]", p.name,
                         shape_str(p.shape));
  Op op = make_op(OpKind::embedding, Domain::vertex, static_cast<int32_t>(p.shape[1]), {ids.id}, table.id);
  return Value{add_op(op)};
}

Value FunctionBuilder::matmul(Value xv, Parameter w) {
  const Op& x = value(xv, "matmul", "x");
  require<FunctionError>(x.domain == Domain::vertex || x.domain == Domain::edge,
                         "matmul: x must be a vertex or edge value, got {}", def_->describe(xv.id));
  require<FunctionError>(w.id >= 0 && w.id < static_cast<int32_t>(def_->params.size()),
                         "matmul: W is not a parameter of this vertex function");
  const auto& p = def_->params[static_cast<size_t>(w.id)];
  require<FunctionError>(p.shape.size() == 2 && p.shape[1] == x.width,
                         "matmul: x is {} but W '{}' is [{}], expected [out x {}]", def_->describe(xv.id), p.name,
                         shape_str(p.shape), x.width);
  Op op = make_op(OpKind::matmul, x.domain, static_cast<int32_t>(p.shape[0]), {xv.id}, w.id);
  return Value{add_op(op)};
}

Value FunctionBuilder::add_bias(Value xv, Parameter b) {
  const Op& x = value(xv, "add_bias", "x");
  require<FunctionError>(x.domain == Domain::vertex || x.domain == Domain::edge,
                         "add_bias: x must be a vertex or edge value, got {}", def_->describe(xv.id));
  require<FunctionError>(b.id >= 0 && b.id < static_cast<int32_t>(def_->params.size()),
                         "add_bias: b is not a parameter of this vertex function");
  const auto& p = def_->params[static_cast<size_t>(b.id)];
  require<FunctionError>(p.shape.size() == 1 && p.shape[0] == x.width,
                         "add_bias: x is {} but bias '{}' is [{}], expected [{}]", def_->describe(xv.id), p.name,
                         shape_str(p.shape), x.width);
  Op op = make_op(OpKind::add_bias, x.domain, x.width, {xv.id}, b.id);
  return Value{add_op(op)};
}

Value FunctionBuilder::binary(OpKind kind, Value av, Value bv) {
  const Op& a = value(av, op_name(kind), "a");
  const Op& b = value(bv, op_name(kind), "b");
  require<FunctionError>(a.domain == Domain::vertex || a.domain == Domain::edge,
                         "{}: operands must be vertex or edge values, got {}", op_name(kind), def_->describe(av.id));
  require<FunctionError>(a.domain == b.domain && a.width == b.width,
                         "{}: operands differ: a is {}, b is {}", op_name(kind), def_->describe(av.id),
                         def_->describe(bv.id));
  Op op = make_op(kind, a.domain, a.width, {av.id, bv.id});
  return Value{add_op(op)};
}

Value FunctionBuilder::add(Value a, Value b) { return binary(OpKind::add, a, b); }
Value FunctionBuilder::sub(Value a, Value b) { return binary(OpKind::sub, a, b); }
Value FunctionBuilder::mul(Value a, Value b) { return binary(OpKind::mul, a, b); }

Value FunctionBuilder::unary(OpKind kind, Value xv) {
  const Op& x = value(xv, op_name(kind), "its operand");
  require<FunctionError>(x.domain == Domain::vertex || x.domain == Domain::edge,
                         "{}: operand must be a vertex or edge value, got {}", op_name(kind), def_->describe(xv.id));
  Op op = make_op(kind, x.domain, x.width, {xv.id});
  return Value{add_op(op)};
}

Value FunctionBuilder::sigmoid(Value x) { return unary(OpKind::sigmoid, x); }
Value FunctionBuilder::tanh(Value x) { return unary(OpKind::tanh, x); }
Value FunctionBuilder::relu(Value x) { return unary(OpKind::relu, x); }
Value FunctionBuilder::one_minus(Value x) { return unary(OpKind::one_minus, x); }

Value FunctionBuilder::concat(std::initializer_list<Value> values) {
  return concat(std::vector<Value>(values));
}

Value FunctionBuilder::concat(const std::vector<Value>& values) {
  require<FunctionError>(!values.empty(), "concat: no operands");
  Op op = make_op(OpKind::concat, Domain::vertex);
  for (size_t i = 0; i < values.size(); ++i) {
    const Op& x = value(values[i], "concat", "an operand");
    require<FunctionError>(x.domain == Domain::vertex || x.domain == Domain::edge,
                           "concat: operand {} is {}, not a vertex or edge value", i, def_->describe(values[i].id));
    if (i == 0) op.domain = x.domain;
    require<FunctionError>(x.domain == op.domain, "concat: operand {} is {} but operand 0 is {}", i,
                           def_->describe(values[i].id), def_->describe(values[0].id));
    op.width += x.width;
    op.inputs.push_back(values[i].id);
  }
  return Value{add_op(op)};
}

Value FunctionBuilder::slice(Value v, int32_t offset, int32_t length) {
  const Op& x = value(v, "slice", "its operand");
  require<FunctionError>(x.domain == Domain::vertex || x.domain == Domain::edge,
                         "slice: operand must be a vertex or edge value, got {}", def_->describe(v.id));
  require<FunctionError>(offset >= 0 && length > 0 && offset + length <= x.width,
                         "slice: columns [{}, {}) are outside {}", offset, offset + length, def_->describe(v.id));
  Op op = make_op(OpKind::slice, x.domain, length, {v.id});
  op.offset = offset;
  return Value{add_op(op)};
}

void FunctionBuilder::scatter(Value state) {
  const Op& x = value(state, "scatter", "its state");
  require<FunctionError>(x.domain == Domain::vertex, "scatter: state must be a vertex value, got {}",
                         def_->describe(state.id));
  if (def_->scatter_value >= 0)
    raise<FunctionError>("scatter: F scatters twice ({} and {})", def_->describe(def_->scatter_value),
                         def_->describe(state.id));
  def_->scatter_value = state.id;
  add_op(make_op(OpKind::scatter, Domain::none, 0, {state.id}));
}

void FunctionBuilder::push(Value output) {
  const Op& x = value(output, "push", "its output");
  require<FunctionError>(x.domain == Domain::vertex, "push: output must be a vertex value, got {}",
                         def_->describe(output.id));
  def_->push_values.push_back(output.id);
  add_op(make_op(OpKind::push, Domain::none, 0, {output.id}));
}

void FunctionBuilder::softmax_cross_entropy(Value logits, Value labels) {
  const Op& x = value(logits, "softmax_cross_entropy", "logits");
  const Op& l = value(labels, "softmax_cross_entropy", "labels");
  require<FunctionError>(x.domain == Domain::vertex, "softmax_cross_entropy: logits must be a vertex value, got {}",
                         def_->describe(logits.id));
  require<FunctionError>(l.kind == OpKind::label, "softmax_cross_entropy: labels must be label(), got {}",
                         def_->describe(labels.id));
  require<FunctionError>(x.width >= 2, "softmax_cross_entropy: logits {} need at least 2 classes",
                         def_->describe(logits.id));
  add_op(make_op(OpKind::softmax_cross_entropy, Domain::none, 0, {logits.id, labels.id}));
}

VertexFunction FunctionBuilder::build() && {
  require<FunctionError>(def_ != nullptr, "build: the builder was already built");
  Definition& d = *def_;
  const size_t n = d.ops.size();
  std::vector<int32_t> uses(n, 0);
  std::vector<int32_t> param_uses(d.params.size(), 0);
  bool has_output = false;
  bool has_gather = false;
  for (size_t i = 0; i < n; ++i) {
    const Op& op = d.ops[i];
    for (int32_t in : op.inputs) ++uses[static_cast<size_t>(in)];
    if (op.param >= 0) ++param_uses[static_cast<size_t>(op.param)];
    if (op.kind == OpKind::push || op.kind == OpKind::softmax_cross_entropy) has_output = true;
    if (op.kind == OpKind::gather || op.kind == OpKind::gather_sum || op.kind == OpKind::children) has_gather = true;
    if (op.kind == OpKind::embedding) {
      const int64_t rows = d.params[static_cast<size_t>(op.param)].shape[0];
      d.vocabulary = d.vocabulary < 0 ? rows : std::min(d.vocabulary, rows);
    }
    if (op.kind == OpKind::softmax_cross_entropy) {
      const int64_t c = d.ops[static_cast<size_t>(op.inputs[0])].width;
      d.num_classes = d.num_classes < 0 ? c : std::min(d.num_classes, c);
    }
  }
  for (size_t i = 0; i < n; ++i)
    require<FunctionError>(is_sink(d.ops[i].kind) || uses[i] > 0,
                           "vertex function: the value of {} is never used (scatter, push or use it, or remove it)",
                           d.describe(static_cast<int32_t>(i)));
  for (size_t p = 0; p < d.params.size(); ++p)
    require<FunctionError>(param_uses[p] > 0, "vertex function: parameter '{}' is never used", d.params[p].name);
  require<FunctionError>(has_output, "vertex function: F has no output (push or softmax_cross_entropy)");
  require<FunctionError>(!has_gather || d.scatter_value >= 0,
                         "vertex function: F gathers its children's state but never scatters it");
  if (d.scatter_value >= 0 && has_gather)
    require<FunctionError>(d.ops[static_cast<size_t>(d.scatter_value)].width == d.gather_width,
                           "vertex function: scatter({}) has width {} but gathers read width {}",
                           d.describe(d.scatter_value), d.ops[static_cast<size_t>(d.scatter_value)].width,
                           d.gather_width);

  std::vector<Param> params;
  for (const auto& spec : d.params) {
    Param p;
    p.name = spec.name;
    p.blob = std::make_shared<Blob>(Shape(spec.shape));
    Rng rng(derive_seed(d.options.seed, spec.name));
    const int64_t fan_in = spec.shape.size() == 2 ? spec.shape[1] : spec.shape[0];
    const int64_t fan_out = spec.shape[0];
    spec.filler.fill(p.blob->data(), rng, fan_in, fan_out);
    p.blob->diff().zero();
    params.push_back(std::move(p));
  }
  std::shared_ptr<const Definition> frozen = std::move(def_);
  return VertexFunction(std::move(frozen), std::move(params));
}

}  // namespace taihu::cavs
