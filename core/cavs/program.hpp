#pragma once
// F compiled once for execution (cavs.md §3.4): every op classified as eager
// (depends only on pull and parameters but feeds scatter: run once over all
// vertices before round 0), recurrent (depends on a gather and feeds scatter:
// run per round) or lazy (never reaches scatter, e.g. the loss head: run once
// after the last round); matmuls that share an input and a phase merged into
// one GEMM; chains of row-local ops (elementwise, bias, concat) grouped into
// one step that an executor can run row by row, in one pass over memory; and
// every value given a column range of a row-major buffer (slices and merged
// matmul outputs are views, so they cost nothing). The backward pass is the
// same steps replayed in reverse, each op with its derivative.

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cavs/function.hpp"

namespace taihu::cavs {

enum class OpClass : uint8_t { eager = 0, recurrent = 1, lazy = 2 };

struct BufferInfo {
  Domain domain = Domain::vertex;
  int32_t width = 0;
  int32_t ld = 0;  // row stride in floats (width rounded up to 16: aligned rows)
  bool needs_grad = false;
  // Every gradient contribution to this buffer comes from the backward of the
  // same round (recurrent producers and consumers only, not the scattered
  // state), so it can be zeroed per round, just before use, while it is hot.
  bool round_local = false;      // with eager/lazy phases
  bool round_local_all = false;  // when every phase runs per round
  // One value, whose gradient has exactly one writer that covers all its rows
  // and columns: the writer assigns (=) and the buffer is never zeroed.
  bool assigned = false;
  // Produced and consumed inside one fused row step, with no backward reading
  // its value from another row: a scratch of fused_tile_rows rows serves
  // every tile of rows, so chains like sigmoid(x W + h U + b) keep their
  // pre-activations in L1.
  bool transient = false;
  int32_t row_stride = 0;  // = ld
  // The gradient alone can be transient: written and read only inside the
  // producer's fused step (the value itself is kept for a backward that reads it).
  bool grad_transient = false;
  int32_t grad_stride = 0;  // = ld
};

struct MatmulGroup {
  int32_t input = -1;            // x
  std::vector<int32_t> ops;      // member matmuls
  std::vector<int32_t> columns;  // each member's first column in the merged output
  int32_t width = 0;             // merged output width = rows of the merged weight
  int32_t in_width = 0;
  int32_t buffer = -1;
  Domain domain = Domain::vertex;
  OpClass phase = OpClass::eager;
  bool sparse_input = false;    // x is an embedding: rows without a token are zero
  bool zero_at_leaves = false;  // x is zero on every row without children
  bool dead_at_leaves = false;  // the outputs do not matter on rows without children (written as zeros there)
};

// Rows a fused step processes per pass of its ops (the transient scratch height).
inline constexpr int32_t fused_tile_rows = 4;

enum class InstructionKind : uint8_t { op, matmul, rowwise };

struct Instruction {
  InstructionKind kind = InstructionKind::op;
  Domain domain = Domain::vertex;
  int32_t index = -1;        // op id (op) or group id (matmul)
  std::vector<int32_t> ops;  // rowwise: the ops, in forward order
  std::vector<int32_t> zero_grad_rows;  // rowwise: transient gradient rows to zero before each row's backward
};

struct CompileOptions {
  bool merge_matmuls = true;
  bool fuse_rowwise = true;  // the executor runs rowwise steps row by row (enables transient buffers)
  // Single-writer gradients assigned instead of zeroed and accumulated, and
  // transient buffers; off: every gradient is zeroed and accumulated (reference).
  bool assign_gradients = true;
};

struct Program {
  std::shared_ptr<const Definition> def;
  CompileOptions options;
  std::vector<OpClass> phase;           // per op
  std::vector<uint8_t> needs_grad;    // per value
  std::vector<uint8_t> zero_at_leaves;  // per value: provably zero on rows without children
  std::vector<uint8_t> dead_at_leaves;  // per value: cannot affect the loss on rows without children
  std::vector<uint8_t> assign_grad;     // per value: its one backward writer assigns (see BufferInfo)
  std::vector<int32_t> value_buffer;  // per value, -1 for ids and sinks
  std::vector<int32_t> value_column;
  std::vector<BufferInfo> buffers;
  std::vector<MatmulGroup> groups;
  std::vector<int32_t> op_group;  // per op, -1 unless a matmul
  std::array<std::vector<Instruction>, 3> steps;  // by phase, each a topological order

  static std::shared_ptr<const Program> compile(std::shared_ptr<const Definition> def, CompileOptions options = {});
  int64_t gemm_steps(OpClass p) const;
};

bool is_rowwise(OpKind kind);

}  // namespace taihu::cavs
