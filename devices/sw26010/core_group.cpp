#include "devices/sw26010/core_group.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/common/check.hpp"
#include "devices/sw26010/fiber.hpp"

namespace taihu::sw26010 {

void rethrow_with_context(std::string_view context) {
  try {
    throw;
  } catch (const ShapeError& e) {
    raise<ShapeError>("{}: {}", context, e.what());
  } catch (const SimulationError& e) {
    raise<SimulationError>("{}: {}", context, e.what());
  }
}

namespace {
constexpr std::size_t fiber_stack_bytes = 256 * 1024;

const char* state_name(int s) {
  static const char* names[] = {"ready", "getr (row FIFO empty)", "getc (column FIFO empty)",
                                "putr (row FIFO full)", "putc (column FIFO full)", "sync", "done"};
  return names[s];
}
const char* scope_name(Scope s) { return s == Scope::row ? "row" : s == Scope::column ? "column" : "array"; }
}  // namespace

KernelStats& KernelStats::operator+=(const KernelStats& o) {
  cycles += o.cycles;
  dma_requests += o.dma_requests;
  dma_bytes += o.dma_bytes;
  dma_charged_bytes += o.dma_charged_bytes;
  rlc_puts += o.rlc_puts;
  syncs += o.syncs;
  ldm_peak_bytes = std::max(ldm_peak_bytes, o.ldm_peak_bytes);
  ldm_over_budget = ldm_over_budget || o.ldm_over_budget;
  return *this;
}

struct Cpe::Context {
  void* sp = nullptr;
  std::unique_ptr<char[]> stack{new char[fiber_stack_bytes]};
  const std::function<void(Cpe&)>* body = nullptr;
  bool parked = false;  // waits in run_fiber's loop for the next kernel
  fiber::TsanFiber tsan;
};

struct CoreGroup::SchedulerContext {
  void* sp = nullptr;
  const void* stack_bottom = nullptr;  // the thread's stack, for AddressSanitizer
  std::size_t stack_size = 0;
  void* tsan_fiber = nullptr;  // the thread's own, for ThreadSanitizer
};

// ------------------------------------------------------------------- Cpe

const std::string& Cpe::kernel() const { return group_->kernel_; }
const Params& Cpe::params() const { return group_->params_; }

std::string Cpe::where() const {
  return fmt::format("core group {}, CPE {} (row {}, column {}), kernel '{}'", group_->index_, id_, row(), col(),
                     group_->kernel_);
}

Cpe& Cpe::peer(int r, int c) { return group_->cpe(r, c); }
bool Cpe::numerics() const { return group_->numerics_; }

void* Cpe::ldm_alloc(std::size_t bytes, const char* buffer, std::size_t align) {
  const std::size_t start = (ldm_top_ + align - 1) / align * align;
  const auto& p = params();
  if (start + bytes > std::size_t(p.ldm_bytes)) {
    std::string in_use;
    for (const auto& b : ldm_buffers_)
      in_use += fmt::format("{}'{}' ({} bytes)", in_use.empty() ? "" : ", ", b.name, b.bytes);
    raise<ShapeError>(
        "LDM overflow at {}: buffer '{}' ({} bytes) does not fit in the {}-byte local store beside the {} bytes in "
        "use{}{}",
        where(), buffer, bytes, p.ldm_bytes, ldm_top_, in_use.empty() ? "" : ": ", in_use);
  }
  ldm_buffers_.push_back({buffer, start, bytes});
  ldm_top_ = start + bytes;
  ldm_peak_ = std::max(ldm_peak_, ldm_top_);
  if (ldm_top_ > std::size_t(p.ldm_budget_bytes) && !group_->warned_budget_) {
    group_->warned_budget_ = true;
    group_->stats_.ldm_over_budget = true;
    spdlog::warn("sw26010: {} uses {} bytes of LDM, above the {}-byte budget real codes keep", where(), ldm_top_,
                 p.ldm_budget_bytes);
  }
  group_->stats_.ldm_peak_bytes = std::max<std::int64_t>(group_->stats_.ldm_peak_bytes, ldm_top_);
  return ldm_.get() + start;
}

void Cpe::ldm_release(std::size_t mark) {
  if (mark > ldm_top_) raise<SimulationError>("ldm_release({}) above the top {} at {}", mark, ldm_top_, where());
  std::erase_if(ldm_buffers_, [&](const LdmBuffer& b) { return b.offset >= mark; });
  ldm_top_ = mark;
}

void Cpe::order() {
  const auto& ready = group_->ready_at_;
  for (int k = 0; k < cpes_per_group; ++k) {
    if (k == id_) continue;
    if (ready[std::size_t(k)] < clock_ || (ready[std::size_t(k)] == clock_ && k < id_)) {
      group_->switch_to_scheduler(*this);
      return;
    }
  }
}

void Cpe::block(State state) {
  state_ = state;
  group_->switch_to_scheduler(*this);
}

void Cpe::charge_issue(double p0, double p1) { clock_ += ceil_cycles(std::max(p0, p1)); }

void Cpe::charge_gemm_inner(double loops, double iterations, double cycles_per_16) {
  const auto& p = params();
  if (cycles_per_16 <= 0) cycles_per_16 = p.gemm_cycles_per_16_vmad;
  if (loops <= 0 || iterations <= 0) return;
  clock_ += ceil_cycles(loops * (p.gemm_loop_prologue_cycles + (iterations - 1) * cycles_per_16 +
                                 p.gemm_loop_epilogue_cycles));
}

void Cpe::charge_widen(double elements) { clock_ += ceil_cycles(elements / 4 * params().widen_p1_per_vector); }

void Cpe::charge_elementwise(double elements, double vector_ops, double ldm_ops) {
  const auto& p = params();
  clock_ += ceil_cycles(elements / 4 * std::max(vector_ops * p.vector_op_cycles, ldm_ops * p.ldm_access_cycles));
}

// ------------------------------------------------------- register comms

void Cpe::put(Fifo Cpe::*fifo, State blocked_state, bool along_row, int dst, const void* data) {
  auto& g = *group_;
  const int own = along_row ? col() : row();
  if (dst != broadcast && (dst < 0 || dst >= mesh || dst == own))
    raise<SimulationError>("{} to {} {} at {}: must be another CPE of the same {} or broadcast",
                           along_row ? "putr" : "putc", along_row ? "column" : "row", dst, where(),
                           along_row ? "row" : "column");
  std::vector<Cpe*> targets;
  for (int k = 0; k < mesh; ++k) {
    if (k == own || (dst != broadcast && k != dst)) continue;
    targets.push_back(along_row ? &g.cpe(row(), k) : &g.cpe(k, col()));
  }
  order();
  const auto entries = std::size_t(params().rlc_fifo_entries);
  while (std::any_of(targets.begin(), targets.end(), [&](Cpe* t) { return (t->*fifo).packets.size() >= entries; }))
    block(blocked_state);
  Packet packet;
  std::memcpy(packet.data.data(), data, rlc_bytes);
  packet.arrival = clock_ + params().rlc_latency_cycles;
  const State waiting = fifo == &Cpe::row_fifo_ ? State::get_row : State::get_col;
  for (Cpe* t : targets) {
    (t->*fifo).packets.push_back(packet);
    if (t->state_ == waiting) {
      t->state_ = State::ready;  // it takes the packet at its arrival (get)
      t->clock_ = std::max(t->clock_, clock_);
      g.refresh(*t);
    }
  }
  clock_ += 1;
  g.stats_.rlc_puts += 1;
}

void Cpe::get(Fifo Cpe::*fifo, State blocked_state, void* data) {
  auto& g = *group_;
  order();
  while ((this->*fifo).packets.empty()) block(blocked_state);
  const Packet packet = (this->*fifo).packets.front();
  (this->*fifo).packets.pop_front();
  std::memcpy(data, packet.data.data(), rlc_bytes);
  clock_ = std::max(clock_ + 1, packet.arrival);
  // Senders stalled on a full FIFO of this row (column) may go on.
  const bool along_row = fifo == &Cpe::row_fifo_;
  const State stalled = along_row ? State::put_row : State::put_col;
  for (int k = 0; k < mesh; ++k) {
    Cpe& s = along_row ? g.cpe(row(), k) : g.cpe(k, col());
    if (s.state_ == stalled) {
      s.state_ = State::ready;
      s.clock_ = std::max(s.clock_, clock_);
      g.refresh(s);
    }
  }
}

void Cpe::putr(const void* data32, int dst_col) { put(&Cpe::row_fifo_, State::put_row, true, dst_col, data32); }
void Cpe::putc(const void* data32, int dst_row) { put(&Cpe::col_fifo_, State::put_col, false, dst_row, data32); }
void Cpe::getr(void* data32) { get(&Cpe::row_fifo_, State::get_row, data32); }
void Cpe::getc(void* data32) { get(&Cpe::col_fifo_, State::get_col, data32); }

void Cpe::sync(Scope scope) {
  auto& g = *group_;
  order();
  state_ = State::sync;
  sync_scope_ = scope;
  // members: the row, the column or all 64
  const int count = scope == Scope::array ? cpes_per_group : mesh;
  auto member = [&](int k) -> Cpe& {
    return scope == Scope::array ? g.cpes_[std::size_t(k)] : scope == Scope::row ? g.cpe(row(), k) : g.cpe(k, col());
  };
  bool all_here = true;
  std::int64_t t = 0;
  for (int k = 0; k < count && all_here; ++k) {
    const Cpe& c = member(k);
    all_here = c.state_ == State::sync && c.sync_scope_ == scope;
    t = std::max(t, c.clock_);
  }
  if (all_here) {
    for (int k = 0; k < count; ++k) {
      Cpe& c = member(k);
      c.clock_ = t + params().sync_cycles;
      c.state_ = State::ready;
      g.refresh(c);
    }
    g.stats_.syncs += 1;
    order();
  } else {
    block(State::sync);
  }
}

// ---------------------------------------------------------- CoreGroup

CoreGroup::CoreGroup(int index, Params params)
    : index_(index), params_(std::move(params)), cpes_(cpes_per_group), scheduler_(new SchedulerContext) {
  for (int i = 0; i < cpes_per_group; ++i) {
    auto& c = cpes_[i];
    c.group_ = this;
    c.id_ = i;
    c.ldm_.reset(static_cast<std::byte*>(::operator new[](params_.ldm_bytes, std::align_val_t(128))));
    std::memset(c.ldm_.get(), 0, params_.ldm_bytes);
    c.context_ = std::make_unique<Cpe::Context>();
    ready_at_[std::size_t(i)] = never;
  }
}

CoreGroup::~CoreGroup() = default;

int CoreGroup::active_cpes() const { return std::max(live_, 1); }

// Back here when the scheduler picks the CPE again: in a later run() perhaps on
// another thread (whichever runs the actor), whose stack AddressSanitizer learns.
void CoreGroup::switch_to_scheduler(Cpe& cpe) {
  refresh(cpe);
  auto& s = *scheduler_;
  fiber::switch_stack(&cpe.context_->sp, s.sp, s.stack_bottom, s.stack_size, s.tsan_fiber, &s.stack_bottom,
                      &s.stack_size);
}

void CoreGroup::fiber_entry(void* cpe) {
  auto* c = static_cast<Cpe*>(cpe);
  c->group().run_fiber(*c);
  __builtin_unreachable();
}

void CoreGroup::run_fiber(Cpe& cpe) {
  fiber::finish_first_switch(&scheduler_->stack_bottom, &scheduler_->stack_size);
  // One kernel after another: a fiber that ends one waits here for the next, so
  // that it leaves no frames behind (ThreadSanitizer counts them) and the next
  // run need not start it afresh.
  auto& ctx = *cpe.context_;
  for (;;) {
    try {
      (*ctx.body)(cpe);
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
    cpe.state_ = Cpe::State::done;
    --live_;
    ctx.parked = true;
    switch_to_scheduler(cpe);
    ctx.parked = false;
  }
}

void CoreGroup::schedule() {
  scheduler_->tsan_fiber = fiber::current_tsan_fiber();  // run() is called on whichever thread runs the actor
  for (;;) {
    int best = -1;
    std::int64_t best_at = never;
    for (int k = 0; k < cpes_per_group; ++k)
      if (ready_at_[std::size_t(k)] < best_at) best_at = ready_at_[std::size_t(k)], best = k;
    if (best < 0) {
      if (live_ > 0) deadlock();
      return;
    }
    Cpe* next = &cpes_[std::size_t(best)];
    land_until(double(next->clock_));
    current_ = next;
    fiber::switch_stack(&scheduler_->sp, next->context_->sp, next->context_->stack.get(), fiber_stack_bytes,
                        next->context_->tsan.get());
    current_ = nullptr;
    if (failure_) return;
  }
}

void CoreGroup::deadlock() {
  std::string who;
  int listed = 0, blocked = 0;
  bool rlc = false;
  for (const auto& c : cpes_) {
    if (c.state_ == Cpe::State::done) continue;
    ++blocked;
    rlc |= c.state_ != Cpe::State::sync;
    if (listed++ < 8)
      who += fmt::format("; CPE {} (row {}, column {}) at cycle {} in {}{}", c.id_, c.row(), c.col(), c.clock_,
                         state_name(int(c.state_)),
                         c.state_ == Cpe::State::sync ? std::string("(") + scope_name(c.sync_scope_) + ")" : "");
  }
  failure_ = std::make_exception_ptr(SimulationError(
      fmt::format("{} deadlock in kernel '{}' on core group {}: {} CPEs blocked, none can run{}{}",
                  rlc ? "register-communication" : "synchronisation", kernel_, index_, blocked, who,
                  listed > 8 ? "; ..." : "")));
}

void CoreGroup::start_fiber(Cpe& c) {
  auto& ctx = *c.context_;
  ctx.tsan.renew();
  ctx.sp = fiber::first_frame(ctx.stack.get(), fiber_stack_bytes, &CoreGroup::fiber_entry, &c);
}

KernelStats CoreGroup::run(std::string kernel, const std::function<void(Cpe&)>& body) {
  kernel_ = std::move(kernel);
  stats_ = KernelStats{};
  stats_.kernel = kernel_;
  failure_ = nullptr;
  warned_budget_ = false;
  const std::int64_t before = clock_;
  const std::int64_t start = clock_ + ceil_cycles(params_.spawn_cycles);
  for (auto& c : cpes_) {
    c.clock_ = start;
    c.state_ = Cpe::State::ready;
    refresh(c);
    c.ldm_top_ = 0;
    c.ldm_peak_ = 0;
    c.ldm_buffers_.clear();
    c.row_fifo_.packets.clear();
    c.col_fifo_.packets.clear();
    c.dma_starts_.clear();
    c.issued_.clear();
    c.targeted_ = 0;
    c.context_->body = &body;
    // A fiber that a failed run left inside its kernel starts afresh.
    if (!c.context_->parked) start_fiber(c);
  }
  live_ = cpes_per_group;
  schedule();
  if (failure_) {
    pending_.clear();
    for (auto& c : cpes_) c.state_ = Cpe::State::done, refresh(c);
    live_ = 0;
    clock_ = before;
    std::rethrow_exception(failure_);
  }
  // DMAs never waited for still complete (and take their time).
  double end = 0;
  for (const auto& c : cpes_) end = std::max(end, double(c.clock_));
  if (!pending_.empty()) end = std::max(end, pending_.back().completion);
  land_until(std::numeric_limits<double>::infinity());
  clock_ = ceil_cycles(end) + ceil_cycles(params_.join_cycles);
  stats_.cycles = clock_ - before;
  totals_ += stats_;
  return stats_;
}

std::int64_t CoreGroup::mpe_compute(double flops) {
  const auto cycles = ceil_cycles(flops / (params_.mpe_gflops * 1e9) * params_.clock_hz);
  clock_ += cycles;
  return cycles;
}

std::int64_t CoreGroup::mpe_copy(double bytes) {
  const auto cycles = ceil_cycles(bytes / (params_.mpe_copy_gbps * 1e9) * params_.clock_hz);
  clock_ += cycles;
  return cycles;
}

float* timing_address() {
  alignas(host_alignment) static float address[64];
  return address;
}

}  // namespace taihu::sw26010
