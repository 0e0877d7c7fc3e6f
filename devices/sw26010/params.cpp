#include "devices/sw26010/params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/common/aligned_allocator.hpp"

namespace taihu::sw26010 {

double Params::dma_cap_bytes_per_cycle(int active) const {
  const auto& table = dma_cap_by_active_cpes;
  double gbps = table.back().second;
  if (active <= table.front().first) {
    gbps = table.front().second;
  } else {
    for (std::size_t i = 1; i < table.size(); ++i) {
      if (active <= table[i].first) {
        const auto [n0, b0] = table[i - 1];
        const auto [n1, b1] = table[i];
        gbps = b0 + (b1 - b0) * double(active - n0) / double(n1 - n0);
        break;
      }
    }
  }
  return gbps * 1e9 / clock_hz;
}

namespace {

// dma_cap_by_active_cpes: "cpes:GBps" pairs in increasing order of cpes.
std::vector<std::pair<int, double>> read_dma_caps(const config::Section& s) {
  std::vector<std::pair<int, double>> caps;
  for (const auto& item : s.get_list<std::string>("dma_cap_by_active_cpes")) {
    const auto colon = item.find(':');
    auto n = colon == std::string::npos ? std::nullopt : config::parse_value<int>(item.substr(0, colon));
    auto b = colon == std::string::npos ? std::nullopt : config::parse_value<double>(item.substr(colon + 1));
    if (!n || !b || *n < 1 || *b <= 0 || (!caps.empty() && *n <= caps.back().first))
      throw s.error("dma_cap_by_active_cpes", "expected increasing 'cpes:GBps' pairs, got '" + item + "'");
    caps.emplace_back(*n, *b);
  }
  if (caps.empty()) throw s.error("dma_cap_by_active_cpes", "empty list");
  return caps;
}

// The values' own bounds and the ones between them.
void check_params(const Params& p, const config::Section& s) {
  if (p.ldm_bytes <= 0 || p.ldm_budget_bytes > p.ldm_bytes) throw s.error("ldm_budget_bytes", "must be <= ldm_bytes");
  if (p.rlc_fifo_entries < 1) throw s.error("rlc_fifo_entries", "must be >= 1");
  if (p.gemm_lockstep_dma_overlap_range.low < 0 || p.gemm_lockstep_dma_overlap_range.high > 1)
    throw s.error("gemm_lockstep_dma_overlap_range", "must lie in [0, 1]");
  if (!p.gemm_lockstep_dma_overlap_range.contains(p.gemm_lockstep_dma_overlap))
    throw s.error("gemm_lockstep_dma_overlap", "must lie in gemm_lockstep_dma_overlap_range");
  if (p.gemm_lockstep_iteration_cycles_range.low < 0)
    throw s.error("gemm_lockstep_iteration_cycles_range", "must not be negative");
  if (!p.gemm_lockstep_iteration_cycles_range.contains(p.gemm_lockstep_iteration_cycles))
    throw s.error("gemm_lockstep_iteration_cycles", "must lie in gemm_lockstep_iteration_cycles_range");
  for (const auto& [key, v] : {std::pair{"blas_gemm_call_cycles", p.blas_gemm.call_cycles},
                               {"blas_gemm_m_half", p.blas_gemm.m_half},
                               {"blas_gemm_n_half", p.blas_gemm.n_half},
                               {"blas_gemm_k_half", p.blas_gemm.k_half}})
    if (v < 0) throw s.error(key, "must be >= 0");
  if (p.blas_gemm.exponent <= 0) throw s.error("blas_gemm_exponent", "must be > 0");
  if (p.blas_gemm.min_dimension < 1) throw s.error("blas_gemm_min_dimension", "must be >= 1");
  if (p.dma_queue_depth < 1) throw s.error("dma_queue_depth", "must be >= 1");
  if (p.dma_turnaround_cycles < 0) throw s.error("dma_turnaround_cycles", "must be >= 0");
  if (p.dma_mixed_gbps <= 0) throw s.error("dma_mixed_gbps", "must be > 0");
  // Host buffers start on host_alignment, so a DMA's transactions, and with them
  // every simulated time, do not depend on where the allocator put a buffer.
  if (p.dma_transaction_bytes < 1 || host_alignment % std::size_t(p.dma_transaction_bytes) != 0)
    throw s.error("dma_transaction_bytes", fmt::format("must divide {} (the host buffers' alignment)", host_alignment));
}

}  // namespace

Params Params::from(const config::Section& s) {
  Params p;
  auto num = [&](const char* key, double& v) { v = s.get_or<double>(key, v); };
  auto integer = [&](const char* key, int& v) { v = s.get_or<int>(key, v); };
  // "low, high"
  auto range = [&](const char* key, ParamRange& r) {
    if (!s.has(key)) return;
    const auto values = s.get_list<double>(key);
    if (values.size() != 2 || !(values[0] <= values[1]))
      throw s.error(key, "expected 'low, high' with low <= high");
    r = {values[0], values[1]};
  };
  num("clock_hz", p.clock_hz);
  integer("ldm_bytes", p.ldm_bytes);
  integer("ldm_budget_bytes", p.ldm_budget_bytes);
  integer("dma_transaction_bytes", p.dma_transaction_bytes);
  num("dma_get_latency_cycles", p.dma_get_latency_cycles);
  num("dma_put_latency_cycles", p.dma_put_latency_cycles);
  num("dma_get_gbps", p.dma_get_gbps);
  num("dma_put_gbps", p.dma_put_gbps);
  num("dma_strided_gbps", p.dma_strided_gbps);
  if (s.has("dma_cap_by_active_cpes")) p.dma_cap_by_active_cpes = read_dma_caps(s);
  num("dma_block_overhead_cycles", p.dma_block_overhead_cycles);
  num("dma_turnaround_cycles", p.dma_turnaround_cycles);
  num("dma_mixed_gbps", p.dma_mixed_gbps);
  integer("dma_queue_depth", p.dma_queue_depth);
  integer("dma_issue_cycles", p.dma_issue_cycles);
  integer("rlc_latency_cycles", p.rlc_latency_cycles);
  integer("rlc_fifo_entries", p.rlc_fifo_entries);
  integer("sync_cycles", p.sync_cycles);
  num("gemm_cycles_per_16_vmad", p.gemm_cycles_per_16_vmad);
  num("gemm_loop_prologue_cycles", p.gemm_loop_prologue_cycles);
  num("gemm_loop_epilogue_cycles", p.gemm_loop_epilogue_cycles);
  num("gemm_o3_cycles_per_16_vmad", p.gemm_o3_cycles_per_16_vmad);
  num("gemm_naive_cycles_per_16_vmad", p.gemm_naive_cycles_per_16_vmad);
  num("gemm_single_cycles_per_16_vmad", p.gemm_single_cycles_per_16_vmad);
  num("widen_p1_per_vector", p.widen_p1_per_vector);
  num("gemm_lockstep_dma_overlap", p.gemm_lockstep_dma_overlap);
  num("gemm_lockstep_iteration_cycles", p.gemm_lockstep_iteration_cycles);
  range("gemm_lockstep_dma_overlap_range", p.gemm_lockstep_dma_overlap_range);
  range("gemm_lockstep_iteration_cycles_range", p.gemm_lockstep_iteration_cycles_range);
  num("vector_op_cycles", p.vector_op_cycles);
  num("ldm_access_cycles", p.ldm_access_cycles);
  num("ldm_load_latency_cycles", p.ldm_load_latency_cycles);
  num("fp_latency_cycles", p.fp_latency_cycles);
  num("gld_latency_cycles", p.gld_latency_cycles);
  num("spawn_cycles", p.spawn_cycles);
  num("join_cycles", p.join_cycles);
  num("mpe_gflops", p.mpe_gflops);
  num("mpe_copy_gbps", p.mpe_copy_gbps);
  integer("mpe_l2_bytes", p.mpe_l2_bytes);
  num("cg_sync_cycles", p.cg_sync_cycles);
  num("blas_gemm_call_cycles", p.blas_gemm.call_cycles);
  num("blas_gemm_m_half", p.blas_gemm.m_half);
  num("blas_gemm_n_half", p.blas_gemm.n_half);
  num("blas_gemm_k_half", p.blas_gemm.k_half);
  num("blas_gemm_exponent", p.blas_gemm.exponent);
  integer("blas_gemm_min_dimension", p.blas_gemm.min_dimension);
  check_params(p, s);
  s.reject_unused();
  return p;
}

Params Params::load(const std::filesystem::path& path) {
  const auto doc = config::Document::parse_file(path);
  return from(doc.section("sw26010"));
}

Params Params::defaults() {
#ifdef TAIHU_SOURCE_DIR
  const std::filesystem::path file = std::filesystem::path(TAIHU_SOURCE_DIR) / "config/devices/sw26010.ini";
  if (std::filesystem::exists(file)) return load(file);
#endif
#ifdef TAIHU_DATA_DIR
  const std::filesystem::path installed = std::filesystem::path(TAIHU_DATA_DIR) / "config/devices/sw26010.ini";
  if (std::filesystem::exists(installed)) return load(installed);
#endif
  return Params{};
}

}  // namespace taihu::sw26010
