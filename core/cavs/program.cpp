#include "core/cavs/program.hpp"

#include <algorithm>
#include <queue>
#include <string>

#include "core/common/check.hpp"

namespace taihu::cavs {

bool is_rowwise(OpKind kind) {
  switch (kind) {
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::relu:
    case OpKind::one_minus:
    case OpKind::concat:
    case OpKind::add_bias:
      return true;
    default:
      return false;
  }
}

namespace {

bool computes_nothing(OpKind kind) {
  return kind == OpKind::pull || kind == OpKind::label || kind == OpKind::slice || kind == OpKind::scatter ||
         kind == OpKind::push;
}

bool reads_children(OpKind kind) {
  return kind == OpKind::gather || kind == OpKind::gather_sum || kind == OpKind::children;
}


// Which ops depend on the children's state (so run in the recurrent
// phase), need a gradient, and are zero on rows without children (what
// gathers read there, and what only linear or zero-preserving ops make of
// it). Returns which ops come after a gather.
std::vector<uint8_t> classify(Program& p) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  std::vector<uint8_t> after_gather(n, 0);
  p.needs_grad.assign(n, 0);
  p.zero_at_leaves.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = d.ops[i];
    bool g = reads_children(op.kind);
    bool grad = g || op.param >= 0;
    for (int32_t in : op.inputs) {
      g = g || after_gather[static_cast<size_t>(in)];
      grad = grad || p.needs_grad[static_cast<size_t>(in)];
    }
    after_gather[i] = g;
    p.needs_grad[i] = grad && op.kind != OpKind::pull && op.kind != OpKind::label;
    // Zero on rows without children: what gathers read there, and what only
    // linear or zero-preserving ops make of it.
    auto zl = [&](size_t k) { return p.zero_at_leaves[static_cast<size_t>(op.inputs[k])] != 0; };
    bool zero = false;
    switch (op.kind) {
      case OpKind::gather:
      case OpKind::gather_sum:
      case OpKind::children:
      case OpKind::sum_children:  // a leaf has no edges to sum
        zero = true;
        break;
      case OpKind::slice:
      case OpKind::tanh:
      case OpKind::relu:
      case OpKind::matmul:
      case OpKind::to_edges:
        zero = zl(0);
        break;
      case OpKind::add:
      case OpKind::sub:
        zero = zl(0) && zl(1);
        break;
      case OpKind::mul:
        zero = zl(0) || zl(1);
        break;
      case OpKind::concat:
        zero = std::all_of(op.inputs.begin(), op.inputs.end(),
                           [&](int32_t in) { return p.zero_at_leaves[static_cast<size_t>(in)] != 0; });
        break;
      default:
        break;
    }
    p.zero_at_leaves[i] = zero;
  }
  return after_gather;
}

// Dead on rows without children: the value cannot change the loss there,
// because every use ends in a product with something zero there (the
// forget gate of a child that does not exist).
void mark_dead_at_leaves(Program& p) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  p.dead_at_leaves.assign(n, 0);
  std::vector<std::vector<int32_t>> users(n);
  for (size_t i = 0; i < n; ++i)
    for (int32_t in : d.ops[i].inputs) users[static_cast<size_t>(in)].push_back(static_cast<int32_t>(i));
  for (size_t v = n; v-- > 0;) {
    if (users[v].empty() || d.ops[v].domain != Domain::vertex) continue;
    bool dead = true;
    for (int32_t c : users[v]) {
      const Op& use = d.ops[static_cast<size_t>(c)];
      if (use.kind == OpKind::mul) {
        const int32_t other = use.inputs[0] == static_cast<int32_t>(v) ? use.inputs[1] : use.inputs[0];
        if (p.zero_at_leaves[static_cast<size_t>(other)] || p.dead_at_leaves[static_cast<size_t>(c)]) continue;
      } else if ((is_rowwise(use.kind) || use.kind == OpKind::slice || use.kind == OpKind::matmul) &&
                 p.dead_at_leaves[static_cast<size_t>(c)]) {
        continue;
      }
      dead = false;
      break;
    }
    p.dead_at_leaves[v] = dead;
  }
}

// Each op's phase: recurrent (after a gather, on the way to the scatter),
// eager (before any gather) or lazy (after the recurrence: outputs, losses).
void assign_phases(Program& p, const std::vector<uint8_t>& after_gather) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  std::vector<uint8_t> reaches_scatter(n, 0);
  if (d.scatter_value >= 0) reaches_scatter[static_cast<size_t>(d.scatter_value)] = 1;
  for (size_t i = n; i-- > 0;)
    if (reaches_scatter[i])
      for (int32_t in : d.ops[i].inputs) reaches_scatter[static_cast<size_t>(in)] = 1;
  p.phase.assign(n, OpClass::eager);
  for (size_t i = 0; i < n; ++i) {
    const OpKind k = d.ops[i].kind;
    if (k == OpKind::scatter)
      p.phase[i] = OpClass::recurrent;
    else if (k == OpKind::push || k == OpKind::softmax_cross_entropy || !reaches_scatter[i])
      p.phase[i] = (k == OpKind::pull || k == OpKind::label) ? OpClass::eager : OpClass::lazy;
    else
      p.phase[i] = after_gather[i] ? OpClass::recurrent : OpClass::eager;
  }
}

// Buffers, matmul groups and views: matmuls of one input (and phase) merge
// into one product; a slice is a view of its input's buffer.
void lay_out_buffers(Program& p, const CompileOptions& options) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  p.value_buffer.assign(n, -1);
  p.value_column.assign(n, 0);
  p.op_group.assign(n, -1);
  auto new_buffer = [&](Domain domain, int32_t width) {
    BufferInfo b;
    b.domain = domain;
    b.width = width;
    b.ld = (width + 15) / 16 * 16;
    b.row_stride = b.ld;
    b.grad_stride = b.ld;
    p.buffers.push_back(b);
    return static_cast<int32_t>(p.buffers.size() - 1);
  };
  // Groups first (their widths must be known before buffers are made).
  for (size_t i = 0; i < n; ++i) {
    const Op& op = d.ops[i];
    if (op.kind != OpKind::matmul) continue;
    const int32_t x = op.inputs[0];
    // Split off outputs dead on leaves, unless the whole group is skipped there anyway.
    const bool dead = p.dead_at_leaves[i] && !p.zero_at_leaves[static_cast<size_t>(x)];
    int32_t gi = -1;
    if (options.merge_matmuls)
      for (size_t g = 0; g < p.groups.size(); ++g)
        if (p.groups[g].input == x && p.groups[g].phase == p.phase[i] &&
            p.groups[g].dead_at_leaves == dead)
          gi = static_cast<int32_t>(g);
    if (gi < 0) {
      MatmulGroup g;
      g.input = x;
      g.in_width = d.ops[static_cast<size_t>(x)].width;
      g.domain = op.domain;
      g.phase = p.phase[i];
      g.sparse_input = d.ops[static_cast<size_t>(x)].kind == OpKind::embedding;
      g.zero_at_leaves = p.zero_at_leaves[static_cast<size_t>(x)] != 0;
      g.dead_at_leaves = dead;
      p.groups.push_back(std::move(g));
      gi = static_cast<int32_t>(p.groups.size() - 1);
    }
    MatmulGroup& g = p.groups[static_cast<size_t>(gi)];
    g.ops.push_back(static_cast<int32_t>(i));
    g.columns.push_back(g.width);
    g.width += op.width;
    p.op_group[i] = gi;
  }
  for (auto& g : p.groups) g.buffer = new_buffer(g.domain, g.width);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = d.ops[i];
    switch (op.kind) {
      case OpKind::pull:
      case OpKind::label:
      case OpKind::scatter:
      case OpKind::push:
      case OpKind::softmax_cross_entropy:
        break;
      case OpKind::slice: {
        const auto in = static_cast<size_t>(op.inputs[0]);
        p.value_buffer[i] = p.value_buffer[in];
        p.value_column[i] = p.value_column[in] + op.offset;
        break;
      }
      case OpKind::matmul: {
        const MatmulGroup& g = p.groups[static_cast<size_t>(p.op_group[i])];
        p.value_buffer[i] = g.buffer;
        const auto pos = std::find(g.ops.begin(), g.ops.end(), static_cast<int32_t>(i)) - g.ops.begin();
        p.value_column[i] = g.columns[static_cast<size_t>(pos)];
        break;
      }
      default:
        p.value_buffer[i] = new_buffer(op.domain, op.width);
        break;
    }
    if (p.value_buffer[i] >= 0 && p.needs_grad[i]) p.buffers[static_cast<size_t>(p.value_buffer[i])].needs_grad = true;
  }
}

// Buffers whose gradients live and die within one backward round.
void mark_round_local(Program& p) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  const int32_t scatter_buffer = d.scatter_value >= 0 ? p.value_buffer[static_cast<size_t>(d.scatter_value)] : -1;
  std::vector<uint8_t> local(p.buffers.size(), 1);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = d.ops[i];
    if (p.value_buffer[i] >= 0 && p.phase[i] != OpClass::recurrent) local[static_cast<size_t>(p.value_buffer[i])] = 0;
    for (int32_t in : op.inputs) {
      const int32_t b = p.value_buffer[static_cast<size_t>(in)];
      if (b >= 0 && p.phase[i] != OpClass::recurrent) local[static_cast<size_t>(b)] = 0;
    }
  }
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    p.buffers[b].round_local_all = static_cast<int32_t>(b) != scatter_buffer;
    p.buffers[b].round_local = p.buffers[b].round_local_all && local[b];
  }
}

// Gradients with one writer that can assign instead of accumulate.
void assign_single_writer_gradients(Program& p, const CompileOptions& options) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  const int32_t scatter_buffer = d.scatter_value >= 0 ? p.value_buffer[static_cast<size_t>(d.scatter_value)] : -1;
  std::vector<int32_t> values_in(p.buffers.size(), 0), writers(n, 0);
  std::vector<uint8_t> capable(n, 1);
  for (size_t i = 0; i < n; ++i) {
    if (p.value_buffer[i] >= 0) ++values_in[static_cast<size_t>(p.value_buffer[i])];
    const Op& op = d.ops[i];
    if (op.kind == OpKind::push || op.kind == OpKind::scatter) continue;  // no gradient written
    if (op.kind == OpKind::matmul) {  // the group writes its input once
      const MatmulGroup& g = p.groups[static_cast<size_t>(p.op_group[i])];
      if (g.ops[0] == static_cast<int32_t>(i)) ++writers[static_cast<size_t>(op.inputs[0])];
      continue;
    }
    for (int32_t in : op.inputs) {
      ++writers[static_cast<size_t>(in)];
      if (!is_rowwise(op.kind) && op.kind != OpKind::sum_children) capable[static_cast<size_t>(in)] = 0;
    }
  }
  // A buffer is assigned when the values written into it (its own value,
  // or the slices and merged-matmul members it holds) each have one writer,
  // cover its columns exactly once, and nothing else reads a zero from it.
  (void)values_in;
  std::vector<uint8_t> sliced(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (d.ops[i].kind == OpKind::slice) sliced[static_cast<size_t>(d.ops[i].inputs[0])] = 1;
  std::vector<std::vector<int32_t>> held(p.buffers.size());
  for (size_t v = 0; v < n; ++v)
    if (p.value_buffer[v] >= 0) held[static_cast<size_t>(p.value_buffer[v])].push_back(static_cast<int32_t>(v));
  p.assign_grad.assign(n, 0);
  for (size_t b = 0; b < p.buffers.size() && options.assign_gradients; ++b) {
    if (static_cast<int32_t>(b) == scatter_buffer || !p.buffers[b].needs_grad) continue;
    bool ok = true;
    std::vector<std::pair<int32_t, int32_t>> columns;
    for (int32_t v : held[b]) {
      const auto vi = static_cast<size_t>(v);
      if (writers[vi] > 0) {
        if (writers[vi] != 1 || !capable[vi] || sliced[vi]) ok = false;
        columns.emplace_back(p.value_column[vi], p.value_column[vi] + d.ops[vi].width);
      } else if (!sliced[vi]) {
        ok = false;  // read by its producer's backward but never written
      }
    }
    std::sort(columns.begin(), columns.end());
    int32_t next = 0;
    for (const auto& [lo, hi] : columns) {
      ok = ok && lo == next;
      next = hi;
    }
    ok = ok && next == p.buffers[b].width;
    if (!ok) continue;
    p.buffers[b].assigned = true;
    for (int32_t v : held[b])
      if (writers[static_cast<size_t>(v)] > 0) p.assign_grad[static_cast<size_t>(v)] = 1;
  }
}

// Steps: per phase, a topological order that runs non-row-local work as
// early as possible, so row-local ops form long runs (fused steps).
void schedule_steps(Program& p) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  const size_t units = n + p.groups.size();
  auto unit_of = [&](size_t op) { return p.op_group[op] >= 0 ? n + static_cast<size_t>(p.op_group[op]) : op; };
  std::vector<std::vector<size_t>> consumers(units);
  std::vector<int32_t> pending(units, 0);
  std::vector<uint8_t> exists(units, 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t u = unit_of(i);
    exists[u] = 1;
    for (int32_t in : d.ops[i].inputs) {
      const size_t v = unit_of(static_cast<size_t>(in));
      if (v == u) continue;
      consumers[v].push_back(u);
      ++pending[u];
    }
  }
  auto unit_phase = [&](size_t u) { return u >= n ? p.groups[u - n].phase : p.phase[u]; };
  auto unit_class = [&](size_t u) {
    if (u >= n) return 1;
    if (computes_nothing(d.ops[u].kind)) return 0;
    return is_rowwise(d.ops[u].kind) ? 2 : 1;
  };
  using Entry = std::pair<int, size_t>;  // (class, unit): smallest first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  std::vector<uint8_t> done(units, 0);
  for (size_t phase_index = 0; phase_index < 3; ++phase_index) {
    const auto ph = static_cast<OpClass>(phase_index);
    for (size_t u = 0; u < units; ++u)
      if (exists[u] && !done[u] && unit_phase(u) == ph && pending[u] == 0) ready.emplace(unit_class(u), u);
    auto& steps = p.steps[phase_index];
    while (!ready.empty()) {
      const size_t u = ready.top().second;
      ready.pop();
      done[u] = 1;
      const int cls = unit_class(u);
      if (cls == 1) {
        Instruction s;
        s.kind = u >= n ? InstructionKind::matmul : InstructionKind::op;
        s.index = static_cast<int32_t>(u >= n ? u - n : u);
        s.domain = u >= n ? p.groups[u - n].domain : d.ops[u].domain;
        steps.push_back(std::move(s));
      } else if (cls == 2) {
        const Domain dom = d.ops[u].domain;
        if (steps.empty() || steps.back().kind != InstructionKind::rowwise || steps.back().domain != dom) {
          Instruction s;
          s.kind = InstructionKind::rowwise;
          s.domain = dom;
          steps.push_back(std::move(s));
        }
        steps.back().ops.push_back(static_cast<int32_t>(u));
      }
      for (size_t c : consumers[u])
        if (--pending[c] == 0 && unit_phase(c) == ph) ready.emplace(unit_class(c), c);
    }
    // Units of later phases whose inputs are now all done wait for their phase.
  }
  for (size_t u = 0; u < units; ++u)
    if (exists[u] && !done[u])
      raise<FunctionError>("vertex function: internal error, {} was never scheduled",
                           u >= n ? std::string("a merged matmul") : d.describe(static_cast<int32_t>(u)));
}

// Transient values and gradients (BufferInfo::transient, grad_transient):
// produced and consumed inside one fused row step, so a scratch of a few
// rows serves them. Only with fused steps and assigned gradients.
void mark_transient(Program& p, const CompileOptions& options) {
  const Definition& d = *p.def;
  const size_t n = d.ops.size();
  if (!options.fuse_rowwise || !options.assign_gradients) return;
  std::vector<int32_t> step_of(n, -1);
  int32_t step_id = 0;
  for (const auto& phase_steps : p.steps)
    for (const auto& step : phase_steps) {
      if (step.kind == InstructionKind::rowwise)
        for (int32_t op : step.ops) step_of[static_cast<size_t>(op)] = step_id;
      ++step_id;
    }
  std::vector<uint8_t> in_step(n, 1), data_unread(n, 1);
  std::vector<int32_t> consumers(n, 0), values_in(p.buffers.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    if (p.value_buffer[i] >= 0) ++values_in[static_cast<size_t>(p.value_buffer[i])];
    const Op& op = d.ops[i];
    for (int32_t in : op.inputs) {
      const auto v = static_cast<size_t>(in);
      ++consumers[v];
      if (step_of[i] < 0 || step_of[i] != step_of[v]) in_step[v] = 0;
      if (op.kind == OpKind::mul) data_unread[v] = 0;  // mul's backward reads its operands
    }
  }
  std::vector<Instruction*> step_ptr;
  for (auto& phase_steps : p.steps)
    for (auto& step : phase_steps) step_ptr.push_back(&step);
  for (size_t v = 0; v < n; ++v) {
    const OpKind k = d.ops[v].kind;
    const int32_t b = p.value_buffer[v];
    if (!in_step[v] || step_of[v] < 0 || consumers[v] == 0 || b < 0 || values_in[static_cast<size_t>(b)] != 1) continue;
    if (static_cast<int32_t>(v) == d.scatter_value) continue;
    BufferInfo& info = p.buffers[static_cast<size_t>(b)];
    if (p.needs_grad[v]) {
      info.grad_transient = true;
      if (!p.assign_grad[v]) step_ptr[static_cast<size_t>(step_of[v])]->zero_grad_rows.push_back(b);
    }
    // sigmoid, tanh and relu read their own output in backward.
    if (data_unread[v] && k != OpKind::sigmoid && k != OpKind::tanh && k != OpKind::relu) {
      info.transient = true;
    }
  }
}

}  // namespace

int64_t Program::gemm_steps(OpClass p) const {
  int64_t n = 0;
  for (const auto& s : steps[static_cast<size_t>(p)]) n += s.kind == InstructionKind::matmul;
  return n;
}

std::shared_ptr<const Program> Program::compile(std::shared_ptr<const Definition> def_ptr, CompileOptions options) {
  auto prog = std::make_shared<Program>();
  Program& p = *prog;
  p.def = def_ptr;
  p.options = options;
  const std::vector<uint8_t> after_gather = classify(p);
  mark_dead_at_leaves(p);
  assign_phases(p, after_gather);
  lay_out_buffers(p, options);
  mark_round_local(p);
  assign_single_writer_gradients(p, options);
  schedule_steps(p);
  mark_transient(p, options);
  return prog;
}

}  // namespace taihu::cavs
