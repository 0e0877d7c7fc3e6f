#pragma once
// The SW26010 cost model's parameters. Every value is read from
// config/devices/sw26010.ini, which names the source of each one; the
// defaults here are the same numbers so that tests can build a model without
// the file.

#include <filesystem>
#include <utility>
#include <vector>

#include "core/config/config.hpp"

namespace taihu::sw26010 {

// A parameter the reference does not pin down: the interval the published facts allow.
struct ParamRange {
  double low = 0, high = 0;
  bool contains(double v) const { return v >= low && v <= high; }
};

// The vendor BLAS's GEMM: the inner loop's rate slowed along each skinny
// dimension d by (d_half / d)^exponent (Hockney's half-performance length,
// one per GEMM dimension), plus a cost per call. Shapes with a dimension below
// min_dimension (the smallest the fit saw) keep swGEMM's memory-level model.
struct BlasGemmParams {
  double call_cycles = 0;
  double m_half = 171, n_half = 279, k_half = 486;
  double exponent = 1.45;
  int min_dimension = 27;
};

struct Params {
  // chip
  double clock_hz = 1.45e9;
  int ldm_bytes = 64 * 1024;
  int ldm_budget_bytes = 60 * 1024;  // above this a kernel is warned

  // DMA: one shared server per core group, 128-byte transactions
  int dma_transaction_bytes = 128;
  double dma_get_latency_cycles = 270;
  double dma_put_latency_cycles = 290;
  double dma_get_gbps = 30.4;  // aggregate asymptote, GB/s (1e9 B/s)
  double dma_put_gbps = 34.2;
  double dma_strided_gbps = 26.3;  // asymptote of strided (multi-block) transfers
  // Aggregate-rate cap by number of CPEs running the kernel (piecewise linear).
  std::vector<std::pair<int, double>> dma_cap_by_active_cpes = {{1, 10.0}, {8, 14.0}, {16, 14.0},
                                                                 {32, 16.0}, {64, 1000.0}};
  double dma_block_overhead_cycles = 0.375;  // per strided block, serialised in the server
  // Reads and writes mixed: a request served right behind one of the other
  // direction (the memory still busy with it) pays a bus turnaround and moves
  // at the mixed read/write rate (STREAM with synchronous DMA, Table D).
  double dma_turnaround_cycles = 27;
  double dma_mixed_gbps = 21.75;
  int dma_queue_depth = 3;               // requests a CPE may have waiting before issue stalls
  int dma_issue_cycles = 1;

  // register communication
  int rlc_latency_cycles = 11;
  int rlc_fifo_entries = 4;
  int sync_cycles = 14;

  // compute
  double gemm_cycles_per_16_vmad = 17;  // hand-scheduled inner loop
  double gemm_loop_prologue_cycles = 5;
  double gemm_loop_epilogue_cycles = 16;
  double gemm_o3_cycles_per_16_vmad = 25;
  double gemm_naive_cycles_per_16_vmad = 26;
  double gemm_single_cycles_per_16_vmad = 25;  // straightforward single precision: 8 more P1 per loop
  double widen_p1_per_vector = 3;  // load + convert + store per 4 elements (float<->double)
  // Share of a memory-level GEMM's next-step DMA that proceeds while the 64
  // CPEs run the register-communication steps in lock-step (1: perfect
  // double-buffered overlap, 0: none; TH Fig. 3.6).
  double gemm_lockstep_dma_overlap = 0;
  // Cycles each iteration (16 vmad) of a memory-level GEMM's register-
  // communication loop pays beyond the calibrated loop while the 64 CPEs run
  // it in lock-step with DMA in flight (TH Fig. 3.6's per-iteration cost).
  double gemm_lockstep_iteration_cycles = 0;
  // The two lock-step parameters are not published (TH Fig. 3.6 has no
  // numbers): the ranges the published facts allow, over which every output
  // is reported (lockstep_range.hpp); the values above are the central ones.
  ParamRange gemm_lockstep_dma_overlap_range{0, 1};
  ParamRange gemm_lockstep_iteration_cycles_range{0, 8};
  double vector_op_cycles = 1;     // one P0 vector op issued per cycle
  double ldm_access_cycles = 1;    // one P1 load/store issued per cycle
  double ldm_load_latency_cycles = 4;  // an LDM load's result is ready after
  double fp_latency_cycles = 7;
  double gld_latency_cycles = 177;  // a direct load from main memory

  // launch and MPE
  double spawn_cycles = 7250;  // athread_spawn, 5 us
  double join_cycles = 1450;   // athread_join, 1 us
  double mpe_gflops = 11.6;
  double mpe_copy_gbps = 9.9;
  int mpe_l2_bytes = 256 * 1024;  // what an MPE pass can keep cached between uses
  double cg_sync_cycles = 2900;  // Simple_Sync between the 4 core groups, 2 us

  // The vendor BLAS's GEMM that swCaffe's explicit convolutions call
  // (libswblas cblas_sgemm; blas_gemm.hpp), fitted by cross-validation on
  // P Table II's explicit column (blas_gemm_fit.hpp).
  BlasGemmParams blas_gemm;

  double dma_get_bytes_per_cycle() const { return dma_get_gbps * 1e9 / clock_hz; }
  double dma_put_bytes_per_cycle() const { return dma_put_gbps * 1e9 / clock_hz; }
  double dma_strided_bytes_per_cycle() const { return dma_strided_gbps * 1e9 / clock_hz; }
  double dma_mixed_bytes_per_cycle() const { return dma_mixed_gbps * 1e9 / clock_hz; }
  // The cap (bytes per cycle) with `active` CPEs running.
  double dma_cap_bytes_per_cycle(int active) const;
  double seconds(double cycles) const { return cycles / clock_hz; }

  // Reads [sw26010] keys (every key optional; unknown keys are errors).
  static Params from(const config::Section& section);
  static Params load(const std::filesystem::path& path);
  // config/devices/sw26010.ini of the source tree (TAIHU_SOURCE_DIR) if present,
  // else of the installed tree (TAIHU_DATA_DIR).
  static Params defaults();
};

}  // namespace taihu::sw26010
