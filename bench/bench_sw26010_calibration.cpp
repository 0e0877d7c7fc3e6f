// Re-runs the published SW26010 micro-benchmarks on taihu's model and prints
// each model value next to the published one with its relative error.
//   bench_sw26010_calibration [--config=config/devices/sw26010.ini] [--markdown=1]
// Sources: shared/reference/sw26010.md (tables A-C, §8.3).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/gemm.hpp"
#include "devices/sw26010/vector.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {

struct Row {
  std::string group, item;
  double model, published;
  std::string unit;
  bool calibrated = true;  // counted in the 10% criterion
};

// 128-byte aligned main memory
struct Memory {
  std::unique_ptr<float[]> raw;
  float* data;
  explicit Memory(std::size_t floats) : raw(new float[floats + 64]()) {
    auto p = reinterpret_cast<std::uintptr_t>(raw.get());
    data = reinterpret_cast<float*>((p + 127) / 128 * 128);
  }
};

double gbps(double bytes, double cycles, const Params& p) { return bytes / (cycles / p.clock_hz) / 1e9; }

// Table A: every CPE moves `size` bytes per round, rounds separated by an array sync.
double streaming(CoreGroup& cg, DmaOp op, std::size_t size, int rounds, Memory& mem) {
  std::int64_t begin = 0, end = 0;
  cg.run("stream", [&](Cpe& c) {
    void* buf = c.ldm_alloc(size, 128);
    float* region = mem.data + std::size_t(c.id()) * (size / 4 + 32) * rounds;
    DmaReply r;
    c.sync(Scope::array);
    if (c.id() == 0) begin = c.rpcc();
    for (int k = 0; k < rounds; ++k) {
      float* at = region + k * (size / 4 + 32);  // 128-aligned blocks
      if (op == DmaOp::get) c.dma_get(buf, at, size, r);
      else c.dma_put(at, buf, size, r);
      c.dma_wait(r, k + 1);
      c.sync(Scope::array);
    }
    if (c.id() == 0) end = c.rpcc();
  });
  return gbps(64.0 * size * rounds, double(end - begin - rounds * cg.params().sync_cycles), cg.params());
}

// P Fig. 2 plateaus: `active` CPEs each GET 48 KB once.
double one_shot(CoreGroup& cg, int active, std::size_t size, Memory& mem) {
  std::int64_t begin = 0, end = 0;
  cg.run("oneshot", [&](Cpe& c) {
    if (c.id() >= active) return;
    void* buf = c.ldm_alloc(size, 128);
    DmaReply r;
    const auto t0 = c.rpcc();
    c.dma_get(buf, mem.data + std::size_t(c.id()) * (size / 4 + 32), size, r);
    c.dma_wait(r, 1);
    begin = t0;
    end = std::max(end, c.rpcc());
  });
  return gbps(double(active) * size, double(end - begin), cg.params());
}

// swGEMM's MBW_map: 64 CPEs, strided GET of 8 KB tiles in blocks of `block` bytes.
double strided(CoreGroup& cg, std::size_t block, Memory& mem, std::size_t pitch) {
  const std::size_t total = 8192, blocks = total / block;
  std::int64_t begin = 0, end = 0;
  const int rounds = 2;
  cg.run("strided", [&](Cpe& c) {
    void* buf = c.ldm_alloc(total, 128);
    DmaReply r;
    c.sync(Scope::array);
    if (c.id() == 0) begin = c.rpcc();
    for (int k = 0; k < rounds; ++k) {
      c.dma_get_strided(buf, mem.data + c.id() * block / 4, blocks, block, pitch, r);
      c.dma_wait(r, k + 1);
      c.sync(Scope::array);
    }
    if (c.id() == 0) end = c.rpcc();
  });
  return gbps(64.0 * total * rounds, double(end - begin - rounds * cg.params().sync_cycles), cg.params());
}

double inner_efficiency(CoreGroup& cg, double cycles_per_16, int iterations) {
  std::int64_t cycles = 0;
  cg.run("inner", [&](Cpe& c) {
    if (c.id() != 0) return;
    const auto t0 = c.rpcc();
    c.charge_gemm_inner(1, iterations, cycles_per_16);
    cycles = c.rpcc() - t0;
  });
  return 16.0 * iterations / double(cycles);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string config_path = bench::arg_value(argc, argv, "config", "");
  const Params params = config_path.empty() ? Params::defaults() : Params::load(config_path);
  CoreGroup cg(0, params);
  cg.set_numerics(false);  // timing only: the benchmarks move no meaningful data
  std::vector<Row> rows;

  Memory mem(64u * 1024 * 1024 / 4);
  const std::size_t sizes[] = {32, 64, 128, 192, 256, 384, 512, 576, 640, 1024, 2048, 4096};
  const double get_pub[] = {4.31, 9.00, 17.25, 17.94, 22.44, 22.88, 27.42, 25.96, 29.05, 29.79, 31.32, 32.05};
  const double put_pub[] = {2.56, 9.20, 18.83, 19.82, 25.80, 24.67, 30.34, 28.91, 32.00, 33.44, 35.19, 36.01};
  for (int i = 0; i < 12; ++i)
    rows.push_back({"A: streaming GET, 64 CPEs (D Table II)", std::to_string(sizes[i]) + " B/CPE",
                    streaming(cg, DmaOp::get, sizes[i], 8, mem), get_pub[i], "GB/s"});
  for (int i = 0; i < 12; ++i)
    rows.push_back({"A: streaming PUT, 64 CPEs (D Table II)", std::to_string(sizes[i]) + " B/CPE",
                    streaming(cg, DmaOp::put, sizes[i], 8, mem), put_pub[i], "GB/s", i != 0});

  const int actives[] = {1, 8, 16, 32};
  const double plateau[] = {10, 14, 14, 16};
  for (int i = 0; i < 4; ++i)
    rows.push_back({"B: one-shot GET 48 KB vs active CPEs (P Fig. 2)", std::to_string(actives[i]) + " CPEs",
                    one_shot(cg, actives[i], 48 * 1024, mem), plateau[i], "GB/s"});
  const double all64 = one_shot(cg, 64, 48 * 1024, mem);
  rows.push_back({"B: one-shot GET 48 KB vs active CPEs (P Fig. 2)", "64 CPEs vs P Fig. 2", all64, 26.7, "GB/s", false});
  rows.push_back({"B: one-shot GET 48 KB vs active CPEs (P Fig. 2)", "64 CPEs vs TH real peak", all64, 30.94, "GB/s"});

  const std::size_t blocks[] = {16, 32, 48, 64, 80, 128, 192, 256, 320, 512, 768, 1024};
  const double map_pub[] = {3.362, 6.343, 9.091, 11.967, 14.464, 13.356, 19.322, 17.568, 21.040, 21.103, 22.430, 23.485};
  const std::size_t pitch = 4000;  // a matrix of 1000 floats per column: blocks start at varying alignment
  for (int i = 0; i < 12; ++i)
    rows.push_back({"C: strided GET map, 64 CPEs (swGEMM MBW_map)", std::to_string(blocks[i]) + " B blocks",
                    strided(cg, blocks[i], mem, pitch), map_pub[i], "GB/s"});

  rows.push_back({"GEMM inner kernel EE (D §VI-B; T §3.5)", "hand-scheduled",
                  100 * inner_efficiency(cg, params.gemm_cycles_per_16_vmad, 512), 94.1, "%"});
  rows.push_back({"GEMM inner kernel EE (D §VI-B; T §3.5)", "sw5cc -O3",
                  100 * inner_efficiency(cg, params.gemm_o3_cycles_per_16_vmad, 512), 64.0, "%"});
  rows.push_back({"GEMM inner kernel EE (D §VI-B; T §3.5)", "naive",
                  100 * inner_efficiency(cg, params.gemm_naive_cycles_per_16_vmad, 512), 61.5, "%"});

  // LDM-resident primitive: best over tile shapes that fit 60 KB as doubles
  double best = 0;
  int best_m = 0, best_n = 0, best_k = 0, shapes = 0, above500 = 0;
  for (int tm = 4; tm <= 64; tm += 4)
    for (int tn = 4; tn <= 64; tn += 4)
      for (int tk = 4; tk <= 128; tk += 4) {
        if (std::size_t(tm * tk + tk * tn + tm * tn) * 8 > std::size_t(params.ldm_budget_bytes)) continue;
        const auto s = ldm_gemm_primitive(cg, tm, tn, tk);
        const double cycles = double(s.cycles) - params.spawn_cycles - params.join_cycles;
        const double g = 2.0 * (8.0 * tm) * (8.0 * tn) * (8.0 * tk) / (cycles / params.clock_hz) / 1e9;
        ++shapes;
        above500 += g > 500;
        if (g > best) best = g, best_m = tm, best_n = tn, best_k = tk;
      }
  rows.push_back({"LDM GEMM primitive (TH §4.3.1)",
                  "best, tiles " + std::to_string(best_m) + "x" + std::to_string(best_n) + "x" + std::to_string(best_k),
                  best, 722.95, "GF/s"});
  rows.push_back({"LDM GEMM primitive (TH §4.3.1)", "share of shapes > 500 GF/s (" + std::to_string(shapes) + " shapes here, 1505 in TH)",
                  100.0 * above500 / shapes, 76.1, "%", false});

  // register-communication latency
  std::int64_t rlc = 0;
  cg.run("rlc", [&](Cpe& c) {
    doublev4 v{};
    if (c.id() == 0) c.putr(&v, 1);
    if (c.id() == 1) {
      const auto t0 = c.rpcc();
      c.getr(&v);
      rlc = c.rpcc() - t0;
    }
  });
  rows.push_back({"RLC latency (TH §3.1.3)", "putr -> getr", double(rlc), 11, "cycles"});

  const bool markdown = bench::arg_value(argc, argv, "markdown", "0") == "1";
  std::string group;
  int within = 0, counted = 0;
  double worst = 0;
  if (markdown) std::printf("| benchmark | point | model | published | rel. error |\n|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    const double err = (r.model - r.published) / r.published;
    if (r.calibrated) {
      ++counted;
      within += std::abs(err) <= 0.10;
      worst = std::max(worst, std::abs(err));
    }
    if (markdown) {
      std::printf("| %s | %s | %.2f %s | %.2f %s | %+.1f%%%s |\n", r.group.c_str(), r.item.c_str(), r.model,
                  r.unit.c_str(), r.published, r.unit.c_str(), 100 * err, r.calibrated ? "" : " (not a target)");
    } else {
      if (r.group != group) std::printf("\n%s\n", (group = r.group).c_str());
      std::printf("  %-44s model %9.2f %-6s published %9.2f   error %+6.1f%%%s\n", r.item.c_str(), r.model,
                  r.unit.c_str(), r.published, 100 * err, r.calibrated ? "" : "   (not a target)");
    }
  }
  std::printf("\n%d of %d calibration targets within 10%% (worst %.1f%%)\n", within, counted, 100 * worst);
  return within == counted ? 0 : 1;
}
