#pragma once
// The functional model of one SW26010 core group: an MPE and 8x8 CPEs, each
// CPE a deterministic cooperative fiber with a 64 KB local store (LDM), an
// asynchronous DMA engine shared by the group, row and column register-
// communication FIFOs, and row/column/array synchronisation.
//
// Time: every CPE keeps its own cycle clock. The scheduler always resumes the
// runnable CPE with the smallest (clock, id), and a CPE gives the scheduler a
// chance to run an earlier one before every interaction with shared state
// (DMA issue, put/get, sync). So shared resources see requests in simulated-
// time order and a run is reproducible to the cycle. Compute is charged per
// block by the kernel (Cpe::charge_*), never per element.

#include <array>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/aligned_allocator.hpp"
#include "core/common/error.hpp"
#include "devices/sw26010/params.hpp"

namespace taihu::sw26010 {

// Whole cycles for a simulated time: rounded up, except within 1e-9 of the
// integer below (a sum of fractional charges that is exact must not gain one).
inline std::int64_t ceil_cycles(double x) { return static_cast<std::int64_t>(std::ceil(x - 1e-9)); }

// A kernel broke a rule of the chip: a read before dma_wait, a deadlock, a bad
// descriptor. The message names the core group, CPE and kernel. (Buffers that
// do not fit the LDM at the shapes a kernel was given are bad input, not a
// broken rule: ShapeError, see Cpe::ldm_alloc.)
class SimulationError : public Error {
 public:
  using Error::Error;
};

// Inside a catch block: raises the exception being handled again with
// `context` ("layer 'conv1' (Convolution), 128 samples") in front of its
// message, so that an error deep in a kernel names what it ran for. The
// model's errors (ShapeError, SimulationError) keep their type; any other
// exception goes on unchanged.
[[noreturn]] void rethrow_with_context(std::string_view context);

inline constexpr int cpes_per_group = 64;
inline constexpr int mesh = 8;
inline constexpr int rlc_bytes = 32;

enum class DmaOp { get, put };
// pe: one CPE. bcast: one read, lands at the same LDM offset in every CPE of
// the rows set in bcast_mask. brow: one read, every CPE of the issuer's row.
// row: the region is split in 8 equal consecutive parts, part c landing in
// CPE (issuer row, c) at the same LDM offset (GET only).
enum class DmaMode { pe, bcast, row, brow };

struct DmaDesc {
  DmaOp op = DmaOp::get;
  DmaMode mode = DmaMode::pe;
  std::size_t size = 0;    // bytes moved (per receiving CPE, except row mode: in total)
  std::size_t block = 0;   // strided mode: bytes per contiguous block in memory (0: contiguous)
  std::size_t stride = 0;  // strided mode: bytes skipped in memory between blocks
  std::uint8_t bcast_mask = 0xff;
};

// The reply word: each completed DMA adds one.
struct DmaReply {
  int value = 0;
};

enum class Scope { row, column, array };

struct KernelStats {
  std::string kernel;
  std::int64_t cycles = 0;  // spawn to join, including both overheads
  std::int64_t dma_requests = 0;
  std::int64_t dma_bytes = 0;          // bytes moved for the kernel
  std::int64_t dma_charged_bytes = 0;  // whole 128-B transactions
  std::int64_t rlc_puts = 0;
  std::int64_t syncs = 0;
  std::int64_t ldm_peak_bytes = 0;
  bool ldm_over_budget = false;  // some CPE went above the 60 KB budget (warned once)
  double seconds(const Params& p) const { return p.seconds(double(cycles)); }
  KernelStats& operator+=(const KernelStats& o);
};

// How the GEMM kernels treat their data (T §3.7, Fig. 9; sw26010.md §6.1):
// float2double: float in memory, widened to double in LDM for the double-
// precision register-communication kernel, narrowed on the way out (what
// swGEMM, swDNN and swCaffe do); single: float throughout, the straightforward
// single-precision inner loop (no load-and-broadcast for floats: 8 more P1
// instructions per loop); double_data: double in memory and LDM (timing only).
enum class GemmPrecision { float2double, single, double_data };

class CoreGroup;

class Cpe {
 public:
  int id() const { return id_; }
  int row() const { return id_ / mesh; }
  int col() const { return id_ % mesh; }
  const std::string& kernel() const;
  const Params& params() const;
  // "core group 0, CPE 9 (row 1, column 1), kernel 'gemm'"
  std::string where() const;

  // ---- local store: a bump allocator over a real 64 KB arena
  // `buffer` names the allocation (a string literal: it is kept, not copied).
  // Buffers that do not fit are a ShapeError naming the CPE, the kernel, the
  // buffer and every buffer already in use with its size: the kernel's layout
  // does not fit the local store at the shapes it was given.
  void* ldm_alloc(std::size_t bytes, const char* buffer, std::size_t align = 32);
  template <class T>
  T* ldm_array(std::size_t count, const char* buffer) {
    return static_cast<T*>(ldm_alloc(count * sizeof(T), buffer, alignof(T) < 32 ? 32 : alignof(T)));
  }
  // Frees everything allocated after `mark` (from ldm_used()).
  void ldm_release(std::size_t mark);
  std::size_t ldm_used() const { return ldm_top_; }
  std::byte* ldm_base() { return ldm_.get(); }

  // ---- DMA (asynchronous; the data moves at simulated completion)
  void dma(const DmaDesc& desc, void* mem, void* ldm, DmaReply& reply);
  void dma_get(void* ldm, const void* mem, std::size_t bytes, DmaReply& reply);
  void dma_put(void* mem, const void* ldm, std::size_t bytes, DmaReply& reply);
  // Strided: `blocks` blocks of `block` bytes, `stride` bytes apart (start to start) in memory.
  void dma_get_strided(void* ldm, const void* mem, std::size_t blocks, std::size_t block, std::size_t pitch,
                       DmaReply& reply);
  void dma_put_strided(void* mem, const void* ldm, std::size_t blocks, std::size_t block, std::size_t pitch,
                       DmaReply& reply);
  // Blocks until reply.value >= count.
  void dma_wait(DmaReply& reply, int count);
  // When the last DMA this CPE has in flight to `reply` completes (cycles; -1:
  // none in flight). The server fixes completion at issue, as the engine's
  // FIFO order does; kernels that model a loss of overlap use it.
  double dma_completion(const DmaReply& reply) const;
  // Throws if [p, p+bytes) of this CPE's LDM is the target of a GET, or the
  // source of a PUT, that has not been waited for. Kernels call it at the
  // block level before they read (or overwrite) a buffer.
  void check_ready(const void* p, std::size_t bytes) const;

  // ---- register communication (32 bytes per put)
  static constexpr int broadcast = -1;
  void putr(const void* data32, int dst_col);  // dst_col or broadcast (the other 7 of the row)
  void putc(const void* data32, int dst_row);
  void getr(void* data32);
  void getc(void* data32);

  // ---- synchronisation (athread_syn)
  void sync(Scope scope);

  // ---- cycle accounting
  std::int64_t rpcc() const { return clock_; }
  void charge(std::int64_t cycles) { clock_ += cycles; }
  // Dual issue: P0 (floating point) and P1 (LDM, RLC, branches) in parallel.
  void charge_issue(double p0, double p1);
  // `vmads` vector multiply-adds of the GEMM inner kernel, in loops of
  // `iterations` steps of 16 vmads (prologue + (n-1) * steady + epilogue).
  void charge_gemm_inner(double loops, double iterations, double cycles_per_16 = 0);
  // float <-> double conversion of `elements` in LDM (P1 bound).
  void charge_widen(double elements);
  // Elementwise vector work: `vector_ops` P0 and `ldm_ops` P1 per 4 elements.
  void charge_elementwise(double elements, double vector_ops, double ldm_ops);

  // The 8 CPEs of this row / column, and the whole group, for block-level
  // register-communication kernels that read peers' LDM after a sync.
  Cpe& peer(int row, int col);
  CoreGroup& group() { return *group_; }
  // Whether kernels compute numerics (false: timing only).
  bool numerics() const;

 private:
  friend class CoreGroup;
  enum class State { ready, get_row, get_col, put_row, put_col, sync, done };
  struct Packet {
    std::array<std::byte, rlc_bytes> data;
    std::int64_t arrival;
  };
  struct Fifo {
    std::deque<Packet> packets;
  };

  void order();  // let an earlier CPE run first
  void block(State state);
  // Throws SimulationError for a descriptor the hardware refuses (alignment,
  // row mode, PUT mode, LDM bounds); returns the LDM bytes it touches.
  std::size_t check_dma(const DmaDesc& desc, const void* mem, const void* ldm) const;
  void put(Fifo Cpe::*fifo, State blocked_state, bool along_row, int dst, const void* data);
  void get(Fifo Cpe::*fifo, State blocked_state, void* data);

  CoreGroup* group_ = nullptr;
  int id_ = 0;
  std::int64_t clock_ = 0;
  State state_ = State::done;
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(128)); }
  };
  std::unique_ptr<std::byte[], AlignedDelete> ldm_;
  std::size_t ldm_top_ = 0;
  std::size_t ldm_peak_ = 0;
  struct LdmBuffer {
    const char* name;
    std::size_t offset, bytes;
  };
  std::vector<LdmBuffer> ldm_buffers_;  // in use, by offset (for the overflow message)
  Fifo row_fifo_, col_fifo_;
  std::vector<double> dma_starts_;  // server start times of this CPE's requests in flight
  Scope sync_scope_ = Scope::array;
  // this CPE's DMAs in flight (reply word, completion) and how many in-flight DMAs touch its LDM
  std::vector<std::pair<DmaReply*, double>> issued_;
  int targeted_ = 0;
  struct Context;
  std::unique_ptr<Context> context_;
};

class CoreGroup {
 public:
  CoreGroup(int index, Params params);
  ~CoreGroup();
  CoreGroup(const CoreGroup&) = delete;
  CoreGroup& operator=(const CoreGroup&) = delete;

  int index() const { return index_; }
  const Params& params() const { return params_; }
  Cpe& cpe(int id) { return cpes_[id]; }
  Cpe& cpe(int row, int col) { return cpes_[row * mesh + col]; }

  // athread_spawn + athread_join: runs body on the 64 CPEs (body may return
  // at once on CPEs it does not use). Throws SimulationError on a rule broken.
  KernelStats run(std::string kernel, const std::function<void(Cpe&)>& body);

  // The group's simulated clock (the MPE's), in cycles.
  std::int64_t clock() const { return clock_; }
  // MPE work: flops at the MPE's rate, bytes at its copy rate.
  std::int64_t mpe_compute(double flops);
  std::int64_t mpe_copy(double bytes);
  void advance(std::int64_t cycles) { clock_ += cycles; }
  void set_clock(std::int64_t cycles) { clock_ = cycles; }
  // Totals over all kernels run so far.
  const KernelStats& totals() const { return totals_; }
  // Whether numerics run (false: timing only, kernels skip host arithmetic).
  bool numerics() const { return numerics_; }
  void set_numerics(bool on) { numerics_ = on; }
  // The GEMM kernels' data handling (double_data is timing only).
  GemmPrecision gemm_precision() const { return gemm_precision_; }
  void set_gemm_precision(GemmPrecision p) { gemm_precision_ = p; }
  // The implicit forward and data-gradient kernels' (swDNN's, as swCaffe
  // calls them for float nets): single, their GEMM is gemmfloat (C-swcaffe
  // sw_slave_conv_pad_float.c and sw_slave_conv_full_pad_float_v2.c call
  // gemm_float.S, which loads floats with vlds/ldse and broadcasts them with
  // putr/putc: T §3.7's straightforward single precision). The implicit
  // weight gradient always widens (sw_slave_conv_pad_float2double.c).
  GemmPrecision implicit_precision() const { return implicit_precision_; }
  void set_implicit_precision(GemmPrecision p) { implicit_precision_ = p; }

 private:
  friend class Cpe;
  struct Pending {
    double completion;
    std::int64_t seq;
    int issuer;
    DmaDesc desc;
    std::byte* mem;
    std::size_t ldm_offset;
    std::uint64_t targets;  // bit per CPE whose LDM is written (GET) or read (PUT)
    DmaReply* reply;
  };

  void schedule();
  void start_fiber(Cpe& cpe);
  void run_fiber(Cpe& cpe);
  static void fiber_entry(void* cpe);  // a fresh fiber's first call (fiber::first_frame): run_fiber
  void switch_to_scheduler(Cpe& cpe);
  void land(Pending& p);
  void land_until(double time);
  void deadlock();  // records the failure
  int active_cpes() const;
  std::uint64_t dma_targets(const Cpe& issuer, const DmaDesc& desc) const;
  // Keeps ready_at_ in step with a CPE's state and clock.
  void refresh(const Cpe& c) {
    ready_at_[std::size_t(c.id_)] = c.state_ == Cpe::State::ready ? c.clock_ : never;
  }
  static constexpr std::int64_t never = INT64_MAX;

  int index_;
  Params params_;
  std::vector<Cpe> cpes_;
  std::array<std::int64_t, cpes_per_group> ready_at_{};  // clock of each ready CPE, never otherwise
  int live_ = 0;                                         // CPEs not done
  std::int64_t clock_ = 0;
  std::string kernel_;
  KernelStats stats_;
  KernelStats totals_;
  double dma_free_ = 0;  // when the DMA server is next idle (cycles)
  // when the GETs / PUTs issued so far have all completed (cycles)
  double dma_get_busy_until_ = 0, dma_put_busy_until_ = 0;
  std::int64_t dma_seq_ = 0;
  std::deque<Pending> pending_;
  Cpe* current_ = nullptr;
  std::exception_ptr failure_;
  bool numerics_ = true;
  GemmPrecision gemm_precision_ = GemmPrecision::float2double;
  GemmPrecision implicit_precision_ = GemmPrecision::single;
  bool warned_budget_ = false;
  struct SchedulerContext;
  std::unique_ptr<SchedulerContext> scheduler_;
};

// For kernels run timing only: their cost depends on the addresses modulo 128,
// never on the values, so one 128-B-aligned address stands for every tensor.
float* timing_address();

// Runs a core group timing only while in scope, then restores its numerics
// (a kernel whose cost does not depend on the data, inside a run that has them).
class TimingOnly {
 public:
  explicit TimingOnly(CoreGroup& cg) : cg_(cg), numerics_(cg.numerics()) { cg.set_numerics(false); }
  ~TimingOnly() { cg_.set_numerics(numerics_); }
  TimingOnly(const TimingOnly&) = delete;
  TimingOnly& operator=(const TimingOnly&) = delete;

 private:
  CoreGroup& cg_;
  bool numerics_;
};

}  // namespace taihu::sw26010
