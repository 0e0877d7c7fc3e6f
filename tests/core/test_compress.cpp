#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/common/cpu_features.hpp"
#include "core/common/random.hpp"
#include "core/compress/compressor.hpp"
#include "core/compress/half.hpp"
#include "core/compress/packed.hpp"
#include "core/compress/policy.hpp"
#include "core/compress/select.hpp"
#include "core/config/config.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "support/temp_dir.hpp"

using namespace taihu;
using namespace taihu::compress;

namespace {

std::vector<float> normal(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (auto& v : x) v = rng.normal(0.0f, scale);
  return x;
}

std::vector<float> laplace_heavy(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (auto& v : x) {
    const float u = rng.uniform() - 0.5f;
    v = (u < 0 ? 1.0f : -1.0f) * std::log(1.0f - 2.0f * std::fabs(u) + 1e-12f);
    if (rng.below(1000) == 0) v *= 10.0f;
  }
  return x;
}

float key_ref(float v, Key key) { return key == Key::magnitude ? std::fabs(v) : key == Key::positive ? v : -v; }

// All indices by (key desc, index asc), by a full sort.
std::vector<std::uint32_t> rank_by_sort(const std::vector<float>& x, Key key) {
  std::vector<std::uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return key_ref(x[a], key) > key_ref(x[b], key); });
  return order;
}
// The k best, ascending.
std::vector<std::uint32_t> first_k(const std::vector<std::uint32_t>& ranked, std::size_t k) {
  std::vector<std::uint32_t> out(ranked.begin(), ranked.begin() + std::min(k, ranked.size()));
  std::sort(out.begin(), out.end());
  return out;
}

void check_selection_consistent(const std::vector<float>& x, const Selection& s) {
  REQUIRE(s.index.size() == s.value.size());
  for (std::size_t j = 0; j < s.size(); ++j) {
    REQUIRE(s.index[j] < x.size());
    if (j > 0) REQUIRE(s.index[j - 1] < s.index[j]);
    REQUIRE(s.value[j] == x[s.index[j]]);
  }
}

// TH8's printed update rule (with `ratio`): raises the threshold when k/2 <= nnz < k.
std::size_t printed_search_count(const std::vector<float>& x, std::size_t k, double eps) {
  const KeyStats stats = key_stats(x, Key::magnitude);
  double l = 0, r = 1;
  std::size_t nnz = 0;
  while (r - l > eps) {
    const double ratio = (l + r) / 2;
    nnz = count_above(x, Key::magnitude, ratio_threshold(stats, ratio));
    if (nnz >= k && nnz < 2 * k) break;
    if (nnz < k / 2)
      r = ratio;
    else
      l = ratio;
  }
  return nnz;
}

std::vector<float> decode(const std::vector<std::uint32_t>& message, std::size_t n) {
  std::vector<float> dense(n, 0.0f);
  decompress_add(message, dense);
  return dense;
}

}  // namespace

TEST_SUITE("compress") {
  TEST_CASE("stats and counts match a naive loop for every key and odd lengths") {
    for (std::size_t n : {1u, 31u, 33u, 1000u, 4099u}) {
      auto x = normal(n, 7 + n);
      for (Key key : {Key::magnitude, Key::positive, Key::negative}) {
        double sum = 0;
        float mx = -INFINITY;
        for (float v : x) {
          sum += std::fabs(v);
          mx = std::max(mx, key_ref(v, key));
        }
        const KeyStats st = key_stats(x, key);
        CHECK(st.mean_abs == doctest::Approx(sum / n).epsilon(1e-6));
        CHECK(st.max_key == mx);
        for (float t : {-0.5f, 0.0f, 0.3f, 1.5f}) {
          std::size_t c = 0;
          for (float v : x) c += key_ref(v, key) > t;
          CHECK(count_above(x, key, t) == c);
          Selection s;
          filter_above(x, key, t, s);
          CHECK(s.size() == c);
          check_selection_consistent(x, s);
        }
      }
    }
  }

  TEST_CASE("exact and trimmed top-k return exactly k, the k largest, ties to the lower index") {
    SelectScratch scratch;
    Selection s;
    auto ties = normal(100000, 3);
    for (auto& v : ties) v = std::round(v * 4) / 4;  // many equal keys
    const std::vector<std::vector<float>> inputs = {normal(1 << 20, 1), laplace_heavy(300000, 2), ties,
                                                    normal(1000, 4), std::vector<float>(5000, 0.25f)};
    for (const auto& x : inputs) {
      for (Key key : {Key::magnitude, Key::negative}) {
        const auto ranked = rank_by_sort(x, key);
        for (std::size_t k : {std::size_t{1}, std::size_t{7}, x.size() / 1000 + 1, x.size() / 50}) {
          const auto want = first_k(ranked, k);
          exact_topk(x, k, key, s, scratch);
          CHECK(s.size() == k);
          CHECK(s.index == want);
          check_selection_consistent(x, s);
          trimmed_topk(x, k, key, s, scratch);
          CHECK(s.size() == k);
          CHECK(s.index == want);
          exact_topk_reference(x, k, key, s);
          CHECK(s.index == want);
        }
      }
    }
    auto x = normal(100, 5);
    exact_topk(x, 0, Key::magnitude, s, scratch);
    CHECK(s.size() == 0);
    exact_topk(x, 100, Key::magnitude, s, scratch);
    CHECK(s.size() == 100);
    exact_topk(x, 500, Key::magnitude, s, scratch);
    CHECK(s.size() == 100);
  }

  TEST_CASE("threshold binary search keeps between k and 2k, and the fast path equals the plain search") {
    SelectScratch scratch;
    Selection fast, plain;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<std::vector<float>> inputs = {normal(1 << 20, seed), laplace_heavy(1 << 19, seed),
                                                      normal(3000, seed)};
      for (const auto& x : inputs) {
        for (double d : {0.001, 0.01}) {
          const std::size_t k = count_for_density(x.size(), d);
          SelectInfo info;
          threshold_search(x, k, Key::magnitude, fast, scratch, 1e-4, &info);
          CHECK(fast.size() >= k);
          CHECK((fast.size() < 2 * k || fast.size() == k));
          check_selection_consistent(x, fast);
          threshold_search_plain(x, k, Key::magnitude, plain);
          CHECK(fast.index == plain.index);
          if (x.size() >= (1u << 19) && d == 0.001) CHECK(info.full_passes == 1);
        }
      }
    }
    // Degenerate inputs: all equal, k = 0, k >= n.
    std::vector<float> flat(200000, -2.0f);
    threshold_search(flat, 150, Key::magnitude, fast, scratch);
    CHECK(fast.size() == 150);
    threshold_search(flat, 0, Key::magnitude, fast, scratch);
    CHECK(fast.size() == 0);
    threshold_search(flat, 300000, Key::magnitude, fast, scratch);
    CHECK(fast.size() == flat.size());
  }

  TEST_CASE("regression: the printed bisection rule under-selects where the corrected one does not") {
    // N(0,1), n = 2^20, density 0.1%: the printed rule raises the threshold when
    // k/2 <= nnz < k and ends with about k/2 (reference §2.5b table).
    const auto x = normal(1 << 20, 42);
    const std::size_t k = count_for_density(x.size(), 0.001);
    const std::size_t printed = printed_search_count(x, k, 1e-4);
    CHECK(printed < k);
    SelectScratch scratch;
    Selection s;
    threshold_search(x, k, Key::magnitude, s, scratch, 1e-4);
    CHECK(s.size() >= k);
    CHECK(s.size() < 2 * k);
  }

  TEST_CASE("threshold reuse searches every 5th iteration and filters once in between") {
    ThresholdReuse reuse(5);
    SelectScratch scratch;
    Selection s;
    Rng rng(9);
    auto x = normal(1 << 18, 11);
    const std::size_t k = count_for_density(x.size(), 0.001);
    for (int it = 0; it < 12; ++it) {
      for (auto& v : x) v += 0.01f * rng.normal();  // a slowly drifting residual
      SelectInfo info;
      reuse.select(x, k, Key::magnitude, s, scratch, &info);
      CAPTURE(it);
      if (it % 5 == 0)
        CHECK(info.probes > 0);
      else
        CHECK(info.probes == 0);
      CHECK(info.full_passes == 1);
      CHECK(2 * s.size() >= k);
      CHECK(s.size() <= 4 * k);
      check_selection_consistent(x, s);
    }
    // A cached threshold far off forces a new search at once.
    for (auto& v : x) v *= 100.0f;
    SelectInfo info;
    reuse.select(x, k, Key::magnitude, s, scratch, &info);
    CHECK(info.probes > 0);
    CHECK(s.size() >= k);
  }

  TEST_CASE("DGC sampling keeps between 0.8k and k; random-k is distinct, ascending and seeded") {
    SelectScratch scratch;
    Selection s;
    int inside = 0;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      auto x = seed % 2 ? normal(200000, seed) : laplace_heavy(200000, seed);
      Rng rng(seed);
      const std::size_t k = 200;
      dgc_sample_select(x, k, Key::magnitude, rng, s, scratch);
      check_selection_consistent(x, s);
      CHECK(s.size() <= k);
      inside += s.size() * 10 >= 8 * k;
    }
    CHECK(inside == 20);
    auto x = normal(100003, 1);
    Rng a(5), b(5);
    Selection sa, sb;
    random_k(x, 1000, a, sa);
    random_k(x, 1000, b, sb);
    CHECK(sa.size() == 1000);
    CHECK(sa.index == sb.index);
    check_selection_consistent(x, sa);
  }

  TEST_CASE("without error feedback the residual is dropped and random-k scales by n/k") {
    Options o;
    o.method = Method::randomk;
    o.schedule.density = 0.1;
    o.error_feedback = false;
    Compressor c(1000, o);
    const auto g = normal(1000, 3);
    c.accumulate(g);
    std::vector<std::uint32_t> msg;
    PackedWriter w(msg, 1000);
    c.emit(w, 0);
    CHECK(std::all_of(c.residual().begin(), c.residual().end(), [](float v) { return v == 0; }));
    const auto sent = decode(msg, 1000);
    REQUIRE(c.last_selection().size() == 100);
    for (auto i : c.last_selection().index) CHECK(sent[i] == 10.0f * g[i]);
  }

  TEST_CASE("packed messages: round trip, duplicates summed across ranks, malformed input rejected") {
    std::vector<std::uint32_t> m0, m1, m2;
    {
      PackedWriter w(m0, 10);
      const std::uint32_t idx[] = {1, 4};
      const float val[] = {1.5f, -2.0f};
      w.sparse(2, 6, idx, val);  // bucket positions 3 and 6
      const float dense[] = {0.25f, 0.5f};
      w.dense_f32(8, dense);
    }
    {
      PackedWriter w(m1, 10);
      const std::uint32_t idx[] = {3, 6};
      w.sparse_mean(0, 10, idx, 0.75f);  // 3 and 6 again: must add
    }
    {
      PackedWriter w(m2, 10);
      const float vals[] = {1, 2, 3};
      std::uint16_t halves[3];
      to_half(vals, halves);
      w.dense_f16(0, halves);
    }
    std::vector<float> dense(10, 99.0f);
    const std::vector<std::span<const std::uint32_t>> all = {m0, m1, m2};
    decompress_sum(all, dense);
    const std::vector<float> want = {1, 2, 3, 1.5f + 0.75f, 0, 0, -2.0f + 0.75f, 0, 0.25f, 0.5f};
    CHECK(dense == want);
    CHECK(packed_entries(m0) == 4);
    CHECK(packed_entries(m1) == 2);
    CHECK(m1.size() == 4 + 4 + 3);  // [header][block header][2 indices][mean]
    // Through a float payload and back, bit for bit; decoding the floats directly.
    CHECK(floats_as_words(words_as_floats(m0)) == m0);
    const auto f0 = words_as_floats(m0), f1 = words_as_floats(m1), f2 = words_as_floats(m2);
    const std::vector<std::span<const float>> as_floats = {f0, f1, f2};
    std::vector<float> dense2(10, -1.0f);
    decompress_sum(as_floats, dense2);
    CHECK(dense2 == want);
    std::vector<float> small(9);
    CHECK_THROWS_AS(decompress_add(m0, small), Error);
    auto bad = m0;
    bad[4 + 4] = 7;  // index 7 in a block of length 6
    std::vector<float> ten(10);
    CHECK_THROWS_AS(decompress_add(bad, ten), Error);
    bad = m0;
    bad.pop_back();
    CHECK_THROWS_AS(decompress_add(bad, ten), Error);
  }

  TEST_CASE("fp16 conversion rounds to nearest and saturates") {
    const std::vector<float> in = {0.0f, 1.0f, -2.5f, 1e-8f, 70000.0f, -1e9f, 0.1f, 65504.0f, 3.14159f};
    std::vector<std::uint16_t> h(in.size());
    std::vector<float> out(in.size());
    to_half(in, h);
    from_half(h, out);
    CHECK(out[1] == 1.0f);
    CHECK(out[2] == -2.5f);
    CHECK(out[4] == 65504.0f);
    CHECK(out[5] == -65504.0f);
    CHECK(out[6] == doctest::Approx(0.1f).epsilon(1e-3));
    CHECK(out[8] == doctest::Approx(3.14159f).epsilon(1e-3));
  }

  TEST_CASE("the portable fp16 conversion equals the F16C one (or IEEE rounding) on every half and across the floats") {
    // Every half survives the round trip (NaNs come back quiet).
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
      const auto half = static_cast<std::uint16_t>(h);
      const bool nan = (half & 0x7c00u) == 0x7c00u && (half & 0x3ffu) != 0;
      if (half_bits(float_of_half(half)) != (nan ? (half | 0x200u) : half)) FAIL("half ", h, " does not round-trip");
    }
    // Against to_half/from_half (F16C where the CPU has it), over a sweep
    // of float bit patterns within the half range, ties and subnormals included.
    std::vector<float> floats;
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 0x1357u) {
      const float f = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
      if (f != f || std::fabs(f) <= 65504.0f) floats.push_back(f);
    }
    for (const float tie : {0x1.002p0f, 0x1.006p0f, 0x1p-25f, 0x1.8p-24f, 0x1.ffcp15f, 65503.0f}) {
      floats.push_back(tie);
      floats.push_back(-tie);
    }
    std::vector<std::uint16_t> halves(floats.size());
    std::vector<float> back(floats.size());
    to_half(floats, halves);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < floats.size(); ++i) differ += halves[i] != half_bits(floats[i]);
    CHECK(differ == 0);
    from_half(halves, back);
    for (std::size_t i = 0; i < floats.size(); ++i)
      differ += std::bit_cast<std::uint32_t>(back[i]) != std::bit_cast<std::uint32_t>(float_of_half(halves[i]));
    CHECK(differ == 0);
    CHECK(half_bits(1.0f) == 0x3c00u);
    CHECK(half_bits(0x1.002p0f) == 0x3c00u);  // ties round to even
    CHECK(half_bits(0x1.006p0f) == 0x3c02u);
    CHECK(half_bits(0x1.8p-24f) == 0x0002u);  // in the subnormals too
    CHECK(half_bits(65520.0f) == 0x7c00u);    // past the largest half: infinity
  }

  TEST_CASE("conservation: sent plus the new residual equals the accumulated gradient, bit for bit") {
    const std::size_t n = 70000;
    for (Method method : {Method::topk, Method::trimmed, Method::bsearch, Method::dgc, Method::randomk, Method::fp16,
                          Method::dense}) {
      for (int momentum_kind = 0; momentum_kind < 3; ++momentum_kind) {
        CAPTURE(method_name(method));
        CAPTURE(momentum_kind);
        Options o;
        o.method = method;
        o.schedule.density = 0.01;
        o.reuse_interval = method == Method::bsearch ? 3 : 0;
        o.momentum = momentum_kind == 0 ? 0.0f : 0.9f;
        o.nesterov = momentum_kind == 2;
        Compressor c(n, o);
        std::vector<float> u(n, 0.0f), v(n, 0.0f);  // the test's own copy of the state
        std::vector<std::uint32_t> msg;
        for (int it = 0; it < 6; ++it) {
          const auto g = normal(n, 100 + it);
          const float scale = 0.25f;
          for (std::size_t i = 0; i < n; ++i) {
            if (momentum_kind == 0) {
              v[i] = std::fma(scale, g[i], v[i]);
            } else if (momentum_kind == 1) {
              u[i] = std::fma(0.9f, u[i], scale * g[i]);
              v[i] = v[i] + u[i];
            } else {
              u[i] = 0.9f * std::fma(scale, g[i], u[i]);
              v[i] = std::fma(scale, g[i], v[i] + u[i]);
            }
          }
          c.accumulate(g, scale);
          REQUIRE(std::equal(v.begin(), v.end(), c.residual().begin()));
          PackedWriter w(msg, n);
          c.emit(w, 0);
          const auto sent = decode(msg, n);
          std::size_t exact = 0;
          for (std::size_t i = 0; i < n; ++i) exact += sent[i] + c.residual()[i] == v[i];
          CHECK(exact == n);
          if (is_sparse(method)) CHECK(c.last_sent_entries() >= count_for_density(n, 0.01) * 8 / 10);
          // Follow the compressor's masking and reset on our copy.
          v.assign(c.residual().begin(), c.residual().end());
          if (o.momentum > 0) {
            for (auto i : c.last_selection().index) u[i] = 0.0f;
            REQUIRE(std::equal(u.begin(), u.end(), c.velocity().begin()));
          }
        }
      }
    }
  }

  TEST_CASE("the fused step equals accumulate + emit, bit for bit, for every fusable configuration") {
    const std::size_t n = 200003;
    struct Config {
      Method method;
      int reuse;
      bool quantize;
      float momentum;
      bool nesterov;
    };
    const Config configs[] = {{Method::bsearch, 0, false, 0, false},   {Method::bsearch, 0, false, 0.9f, false},
                              {Method::bsearch, 0, false, 0.9f, true}, {Method::bsearch, 4, false, 0.9f, false},
                              {Method::bsearch, 0, true, 0.9f, true},  {Method::topk, 0, false, 0.9f, true},
                              {Method::topk, 0, true, 0, false}};
    for (const auto& cfg : configs) {
      CAPTURE(method_name(cfg.method));
      CAPTURE(cfg.reuse);
      CAPTURE(cfg.quantize);
      CAPTURE(cfg.nesterov);
      Options o;
      o.method = cfg.method;
      o.schedule.density = 0.005;
      o.schedule.dense_iterations = 1;
      o.reuse_interval = cfg.reuse;
      o.quantize = cfg.quantize;
      o.momentum = cfg.momentum;
      o.nesterov = cfg.nesterov;
      o.clip_norm = 100.0f;
      Compressor fused(n, o), split(n, o);
      std::vector<std::uint32_t> a, b;
      for (int it = 0; it < 9; ++it) {
        const auto g = normal(n, 500 + it, 0.5f);
        PackedWriter wa(a, n), wb(b, n);
        fused.step(g, 0.5f, wa, 0);
        split.accumulate(g, 0.5f);
        split.emit(wb, 0);
        CAPTURE(it);
        CHECK(a == b);
        CHECK(std::equal(fused.residual().begin(), fused.residual().end(), split.residual().begin()));
        CHECK(std::equal(fused.velocity().begin(), fused.velocity().end(), split.velocity().begin()));
        if (it > 0) {
          // (A reused threshold here sees a residual whose spread grows each step, so it re-searches.)
          if (cfg.reuse == 0) CHECK(fused.last_info().full_passes == 0);
          CHECK(fused.last_sent_entries() >= count_for_density(n, 0.005));
        }
      }
    }
  }

  TEST_CASE("the generic kernels give the AVX2 kernels' bits: stats, counts, selections and compressor steps") {
    if (!cpu::supports_avx2()) {
      MESSAGE("this CPU has no AVX2: nothing to compare the generic kernels with");
      return;
    }
    // What every kernel returns for one input, run at one level.
    struct Result {
      std::vector<float> stats;  // mean, max key per Key, sum, max |x|
      std::vector<std::size_t> counts;
      std::vector<std::vector<std::uint32_t>> selections;
      std::vector<std::uint32_t> messages;
      std::vector<float> residual;
    };
    auto run_all = [](cpu::Simd level, std::span<const float> x) {
      const cpu::Simd before = cpu::force_simd(level);
      REQUIRE(cpu::simd() == level);
      Result r;
      SelectScratch scratch;
      Selection out;
      for (Key key : {Key::magnitude, Key::positive, Key::negative}) {
        const KeyStats stats = key_stats(x, key);
        r.stats.push_back(static_cast<float>(stats.mean_abs));
        r.stats.push_back(stats.max_key);
        for (double ratio : {0.0, 0.3, 0.9}) r.counts.push_back(count_above(x, key, ratio_threshold(stats, ratio)));
        const std::size_t k = count_for_density(x.size(), 0.003);
        exact_topk(x, k, key, out, scratch);
        r.selections.push_back(out.index);
        trimmed_topk(x, k, key, out, scratch);
        r.selections.push_back(out.index);
        threshold_search(x, k, key, out, scratch);
        r.selections.push_back(out.index);
      }
      r.stats.push_back(sum_pass(x));
      r.stats.push_back(max_abs_pass(x));
      std::vector<std::uint16_t> halves(x.size());
      to_half(x, halves);
      r.counts.insert(r.counts.end(), halves.begin(), halves.end());
      // Fused and split compressor steps, with momentum and quantization.
      for (bool quantize : {false, true}) {
        Options o;
        o.method = Method::bsearch;
        o.schedule.density = 0.004;
        o.momentum = 0.9f;
        o.nesterov = quantize;
        o.quantize = quantize;
        Compressor c(x.size(), o);
        for (int it = 0; it < 3; ++it) {
          std::vector<std::uint32_t> message;
          PackedWriter w(message, x.size());
          c.step(x, 0.5f, w, 0);
          r.messages.insert(r.messages.end(), message.begin(), message.end());
          c.accumulate(x, 0.25f);
        }
        r.residual.insert(r.residual.end(), c.residual().begin(), c.residual().end());
      }
      cpu::force_simd(before);
      return r;
    };
    for (std::size_t n : {std::size_t{77}, std::size_t{100003}, std::size_t{(1u << 19) + 13}}) {
      CAPTURE(n);
      auto x = laplace_heavy(n, 41 + n);
      // Signed zeros, ties and a spike, where lane order could show.
      for (std::size_t i = 0; i < n; i += 97) x[i] = (i / 97) % 2 == 0 ? 0.0f : -0.0f;
      for (std::size_t i = 5; i < n; i += 89) x[i] = 1.5f;
      x[n / 2] = -40.0f;
      const Result avx2 = run_all(cpu::Simd::avx2, x);
      const Result generic = run_all(cpu::Simd::generic, x);
      CHECK(std::memcmp(avx2.stats.data(), generic.stats.data(), avx2.stats.size() * sizeof(float)) == 0);
      CHECK(avx2.counts == generic.counts);
      CHECK(avx2.selections == generic.selections);
      CHECK(avx2.messages == generic.messages);
      CHECK(std::memcmp(avx2.residual.data(), generic.residual.data(), avx2.residual.size() * sizeof(float)) == 0);
    }
  }

  TEST_CASE("sign-alternating quantization: one mean of one sign, parity flips, residual keeps V - mean") {
    const std::size_t n = 50000;
    Options o;
    o.method = Method::bsearch;
    o.schedule.density = 0.002;
    o.quantize = true;
    Compressor c(n, o);
    std::vector<std::uint32_t> msg;
    for (int it = 0; it < 4; ++it) {
      const auto g = normal(n, 300 + it);
      c.accumulate(g);
      const std::vector<float> before(c.residual().begin(), c.residual().end());
      PackedWriter w(msg, n);
      c.emit(w, 0);
      const Selection& s = c.last_selection();
      REQUIRE(s.size() >= count_for_density(n, 0.002));
      double sum = 0;
      for (float v : s.value) {
        CHECK((it % 2 == 0 ? v > 0 : v < 0));
        sum += v;
      }
      const float mean = static_cast<float>(sum / s.size());
      CHECK(msg.size() == 4 + 4 + s.size() + 1);
      CHECK(std::bit_cast<float>(msg.back()) == mean);
      const auto sent = decode(msg, n);
      for (std::size_t j = 0; j < s.size(); ++j) {
        const auto i = s.index[j];
        CHECK(sent[i] == mean);
        CHECK(c.residual()[i] == before[i] - mean);
        CHECK(sent[i] + c.residual()[i] == doctest::Approx(before[i]).epsilon(1e-6));
      }
    }
  }

  TEST_CASE("density 1 reproduces dense momentum SGD; with masking, plain SGD") {
    for (int workers : {1, 3}) {
      for (bool nesterov : {false, true}) {
        const std::size_t n = 257;
        const float lr = 0.1f, m = 0.9f;
        Options o;
        o.method = Method::topk;
        o.schedule.density = 1.0;
        o.momentum = m;
        o.nesterov = nesterov;
        o.momentum_masking = false;
        std::vector<Compressor> comp;
        for (int p = 0; p < workers; ++p) comp.emplace_back(n, o);
        std::vector<float> w_rgc(n, 1.0f), w_dense(n, 1.0f), buf(n, 0.0f), sum(n);
        std::vector<std::vector<std::uint32_t>> msgs(workers);
        for (int it = 0; it < 30; ++it) {
          std::vector<std::vector<float>> grads;
          for (int p = 0; p < workers; ++p) grads.push_back(normal(n, 1000 * it + p));
          for (int p = 0; p < workers; ++p) {
            comp[p].accumulate(grads[p], 1.0f / workers);
            PackedWriter wr(msgs[p], n);
            comp[p].emit(wr, 0);
          }
          std::vector<std::span<const std::uint32_t>> views(msgs.begin(), msgs.end());
          decompress_sum(views, sum);
          for (std::size_t i = 0; i < n; ++i) w_rgc[i] -= lr * sum[i];
          // Dense momentum SGD on the averaged gradient (PyTorch form).
          for (std::size_t i = 0; i < n; ++i) {
            float g = 0;
            for (int p = 0; p < workers; ++p) g += (1.0f / workers) * grads[p][i];
            if (nesterov) {
              const float u_prev = buf[i];
              buf[i] = m * (u_prev + g);  // U = m(U + g), step U + g
              w_dense[i] -= lr * (buf[i] + g);
            } else {
              buf[i] = std::fma(m, buf[i], g);
              w_dense[i] -= lr * buf[i];
            }
          }
        }
        CAPTURE(workers);
        CAPTURE(nesterov);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, double(std::fabs(w_rgc[i] - w_dense[i])));
        if (workers == 1)
          CHECK(w_rgc == w_dense);
        else
          CHECK(worst < 1e-5);
      }
    }
    // Masking at density 1 zeroes U every step: plain SGD, bit for bit.
    Options o;
    o.method = Method::bsearch;
    o.schedule.density = 1.0;
    o.momentum = 0.9f;
    o.momentum_masking = true;
    Compressor c(100, o);
    std::vector<float> w(100, 0.0f), w_sgd(100, 0.0f);
    std::vector<std::uint32_t> msg;
    for (int it = 0; it < 10; ++it) {
      const auto g = normal(100, it);
      c.accumulate(g);
      PackedWriter wr(msg, 100);
      c.emit(wr, 0);
      const auto sent = decode(msg, 100);
      for (int i = 0; i < 100; ++i) {
        w[i] -= 0.1f * sent[i];
        w_sgd[i] -= 0.1f * g[i];
      }
    }
    CHECK(w == w_sgd);
  }

  TEST_CASE("warm-up and density ramp; local clipping") {
    DensitySchedule s;
    s.density = 0.001;
    s.dense_iterations = 2;
    s.ramp_stages = 4;
    s.stage_iterations = 10;
    CHECK(s.at(0) == 1.0);
    CHECK(s.at(1) == 1.0);
    CHECK(s.at(2) == doctest::Approx(0.2512).epsilon(1e-3));
    CHECK(s.at(12) == doctest::Approx(0.0631).epsilon(1e-3));
    CHECK(s.at(32) == doctest::Approx(0.00398).epsilon(1e-2));
    CHECK(s.at(42) == 0.001);
    // Warm-up iterations send dense and keep momentum (no masking).
    Options o;
    o.method = Method::bsearch;
    o.schedule = s;
    o.momentum = 0.5f;
    Compressor c(1000, o);
    std::vector<std::uint32_t> msg;
    c.accumulate(normal(1000, 1));
    PackedWriter w(msg, 1000);
    c.emit(w, 0);
    CHECK(c.last_sent_entries() == 1000);
    CHECK(std::all_of(c.residual().begin(), c.residual().end(), [](float v) { return v == 0; }));
    CHECK(std::any_of(c.velocity().begin(), c.velocity().end(), [](float v) { return v != 0; }));
    // Clipping: ||g|| = 5 with clip 2 at 4 workers -> limit 1 -> factor 0.2.
    CHECK(local_clip_factor(25.0, 2.0f, 4) == doctest::Approx(0.2));
    CHECK(local_clip_factor(0.25, 2.0f, 4) == 1.0f);
    Options oc;
    oc.method = Method::dense;
    oc.clip_norm = 2.0f;
    oc.workers = 4;
    Compressor cc(2, oc);
    const float g[] = {3.0f, 4.0f};
    cc.accumulate(g);
    CHECK(cc.last_clip_factor() == doctest::Approx(0.2f));
    CHECK(cc.residual()[0] == doctest::Approx(0.6f));
    CHECK(cc.residual()[1] == doctest::Approx(0.8f));
  }

  TEST_CASE("policy from config: size cut-off, vectors dense, overrides, output never quantized, errors") {
    auto doc = config::Document::parse(
        "[compress]\n"
        "method = trimmed\n"
        "density = 0.001\n"
        "min_elements = 1000\n"
        "quantize = true\n"
        "momentum = 0.9\n"
        "[compress fc8]\n"
        "method = bsearch\n"
        "[compress conv1/weight]\n"
        "method = dense\n",
        "net.ini");
    const Policy p = Policy::from_config(doc);
    CHECK(p.enabled());
    doc.reject_unused();
    CHECK(p.choose({"conv2/weight", 5000, 4, false}, 8).method == Method::trimmed);
    CHECK(p.choose({"conv2/weight", 5000, 4, false}, 8).quantize);
    CHECK(p.choose({"conv2/weight", 5000, 4, false}, 8).momentum == 0.9f);
    CHECK(p.choose({"conv2/bias", 5000, 1, false}, 8).method == Method::dense);
    CHECK(p.choose({"conv3/weight", 999, 4, false}, 8).method == Method::dense);
    CHECK(p.choose({"conv1/weight", 50000, 4, false}, 8).method == Method::dense);
    const Options fc8 = p.choose({"fc8/weight", 4096000, 2, true}, 8);
    CHECK(fc8.method == Method::bsearch);
    CHECK(!fc8.quantize);
    CHECK(fc8.workers == 8);
    // A cost hook replaces the size rule.
    Policy hooked = p;
    hooked.set_cost_hook([](const LayerInfo& l, const Options&, int) { return l.elements > 10; });
    CHECK(hooked.choose({"conv3/weight", 999, 4, false}, 8).method == Method::trimmed);
    // Segments: adjacent dense tensors merge.
    const std::vector<LayerInfo> layers = {{"fc8/weight", 4000, 2, true}, {"fc8/bias", 10, 1, true},
                                           {"fc7/bias", 20, 1, false}, {"fc7/weight", 3000, 2, false}};
    const auto seg = plan_segments(p, layers, 4);
    REQUIRE(seg.size() == 3);
    CHECK(seg[1].offset == 4000);
    CHECK(seg[1].count == 30);
    CHECK(seg[2].offset == 4030);
    BucketCompressor bucket(7030, seg);
    std::vector<std::uint32_t> msg;
    bucket.compress(normal(7030, 5), 0.25f, msg);
    CHECK(packed_entries(msg) == bucket.last_sent_entries());
    CHECK(!bucket.all_dense());
    // The bandwidth rule sends dense once d·P·s/8 >= 1.
    auto bw = config::Document::parse("[compress]\nmethod = topk\ndensity = 0.01\nrule = bandwidth\n", "b.ini");
    const Policy pb = Policy::from_config(bw);
    CHECK(pb.choose({"w", 1 << 20, 2, false}, 50).method == Method::topk);
    CHECK(pb.choose({"w", 1 << 20, 2, false}, 100).method == Method::dense);
    // method = none: compression off.
    auto off = config::Document::parse("[compress]\nmethod = none\n", "o.ini");
    CHECK(!Policy::from_config(off).enabled());
    CHECK(!Policy::from_config(config::Document::parse("", "e.ini")).enabled());
    // Errors name file, line and key.
    auto error_of = [](const std::string& text) -> std::string {
      try {
        Policy::from_config(config::Document::parse(text, "bad.ini"));
      } catch (const ConfigError& e) {
        return e.what();
      }
      return "<no error>";
    };
    const auto e1 = error_of("[compress]\nmethod = bsearch\ndensity = 1.5\n");
    CHECK(e1.find("bad.ini:3") != std::string::npos);
    CHECK(e1.find("density") != std::string::npos);
    const auto e2 = error_of("[compress]\nmethod = topkk\n");
    CHECK(e2.find("bad.ini:2") != std::string::npos);
    const auto e4 = error_of("[compress]\nmethod = bsearch\ndensty = 0.01\n");
    CHECK(e4.find("bad.ini:3") != std::string::npos);
    CHECK(e4.find("densty") != std::string::npos);
    const auto e3 = error_of("[compress]\nquantize = true\nreuse_interval = 5\n");
    CHECK(e3.find("bad.ini:2") != std::string::npos);
    CHECK(e3.find("quantize") != std::string::npos);
  }

  TEST_CASE("no message is longer than max_message_words, which a top-k of every entry reaches") {
    // Three segments of 1, 7 and 64 floats, every method, selecting ones also quantized,
    // at densities 1 and 0.05, during warm-up and after, on random and zero gradients.
    const Method methods[] = {Method::dense, Method::fp16, Method::topk, Method::trimmed,
                              Method::bsearch, Method::dgc, Method::randomk};
    for (Method method : methods)
      for (bool quantize : {false, true})
        for (double density : {1.0, 0.05}) {
          if (quantize && (!is_sparse(method) || method == Method::randomk)) continue;
          CAPTURE(method_name(method));
          CAPTURE(quantize);
          CAPTURE(density);
          Options o;
          o.method = method;
          o.quantize = quantize;
          o.schedule.density = density;
          o.schedule.dense_iterations = 1;
          std::vector<Segment> segments{{"a", 0, 1, o}, {"b", 1, 7, o}, {"c", 8, 64, o}};
          BucketCompressor c(72, segments);
          CHECK(c.max_message_words() == 4 + 3 * 4 + 2 * 72);
          std::vector<std::uint32_t> words;
          for (int it = 0; it < 3; ++it) {
            c.compress(it == 2 ? std::vector<float>(72, 0.0f) : normal(72, 5 + it), 1.0f, words);
            CHECK(words.size() <= c.max_message_words());
          }
        }
    Options every;
    every.method = Method::topk;
    every.schedule.density = 1.0;
    BucketCompressor c(10, {{"all", 0, 10, every}});
    std::vector<std::uint32_t> words;
    c.compress(normal(10, 1), 1.0f, words);
    CHECK(words.size() == c.max_message_words());
    // An empty range's widest block is sparse_mean's: no index, one mean.
    CHECK(max_packed_words(std::vector<std::size_t>{0}) == 4 + 4 + 1);
  }

  TEST_CASE("bytes on the wire follow the reference formulas") {
    // ResNet-50 at P = 8, reference §3.2: 180.2 MB dense, 1.44 MB sparse (s = 8).
    CHECK(ring_allreduce_bytes(25.75e6, 8) == doctest::Approx(180.25e6));
    CHECK(sparse_allgather_bytes(25.75e3, 8, 8) == doctest::Approx(1.442e6));
    CHECK(ring_allreduce_bytes(100, 1) == 0);
  }
}

TEST_SUITE("slow") {
  TEST_CASE("compress: at n = 2^26 the corrected search keeps k..2k in one pass") {
    // The reference's large case (§2.5b). Whether the printed rule fails here
    // depends on the data's max (with this generator it happens to land in the
    // window at 2^26); the fast regression case at 2^20 shows it failing.
    const auto x = normal(std::size_t{1} << 26, 42);
    const std::size_t k = count_for_density(x.size(), 0.001);
    SelectScratch scratch;
    Selection s;
    SelectInfo info;
    threshold_search(x, k, Key::magnitude, s, scratch, 1e-4, &info);
    CHECK(s.size() >= k);
    CHECK(s.size() < 2 * k);
    CHECK(info.full_passes == 1);
  }
}

TEST_SUITE("compress") {
  TEST_CASE("a compressor restored from another's state (and through a file) continues bit for bit") {
    testing::TempDir dir;
    struct Variant {
      Method method;
      bool quantize;
      int reuse;
      float momentum;
    };
    for (const Variant v : {Variant{Method::bsearch, false, 3, 0.9f}, Variant{Method::dgc, false, 1, 0.0f},
                            Variant{Method::topk, true, 1, 0.9f}, Variant{Method::randomk, false, 1, 0.0f}}) {
      CAPTURE(static_cast<int>(v.method));
      Options o;
      o.method = v.method;
      o.schedule.density = 0.02;
      o.quantize = v.quantize;
      o.reuse_interval = v.reuse;
      o.momentum = v.momentum;
      o.seed = 5;
      const std::size_t n = 3000;
      Compressor original(n, o), copy(n, o);
      std::vector<std::uint32_t> a, b;
      for (int it = 0; it < 7; ++it) {
        PackedWriter w(a, n);
        original.step(normal(n, 100 + it), 0.5f, w, 0);
      }
      const auto path = dir.path() / "c.compress-0";
      CompressorCheckpoint file;
      file.iteration = 7;
      file.ranks = 1;
      file.buckets.push_back(encode_states({original.state()}));
      save_compressor_checkpoint(file, path);
      copy.restore(decode_states(load_compressor_checkpoint(path).buckets[0]).at(0));
      for (int it = 7; it < 14; ++it) {
        const auto g = normal(n, 100 + it);
        PackedWriter wa(a, n), wb(b, n);
        original.step(g, 0.5f, wa, 0);
        copy.step(g, 0.5f, wb, 0);
        CHECK(a == b);
      }
      CHECK(std::memcmp(original.residual().data(), copy.residual().data(), n * sizeof(float)) == 0);
      // A state of another size is refused.
      Compressor other(n + 1, o);
      CHECK_THROWS_AS(other.restore(original.state()), Error);
    }
  }

  TEST_CASE("a compressor checkpoint keeps the file it replaces, so a save cut short still has the checkpoint's iteration") {
    testing::TempDir dir;
    const auto path = dir.path() / "c.compress-1";
    CompressorCheckpoint file;
    file.rank = 1;
    file.ranks = 2;
    for (const int64_t iteration : {7, 8}) {
      file.iteration = iteration;
      save_compressor_checkpoint(file, path);
    }
    CHECK(load_compressor_checkpoint(path, 8).iteration == 8);
    CHECK(load_compressor_checkpoint(path, 7).iteration == 7);  // the one before, kept as .prev
    try {
      load_compressor_checkpoint(path, 6);
      FAIL("iteration 6 is in neither file");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("holds iteration 8") != std::string::npos);
      CHECK(std::string(e.what()).find("holds iteration 7") != std::string::npos);
    }
  }

  TEST_CASE("a rank keeps its compressor state with the sane checkpoint, and one without a file goes on") {
    testing::TempDir dir;
    const auto checkpoint = dir.path() / "c.ckpt", sane = dir.path() / "c-sane.ckpt";
    CompressorCheckpoint file;
    file.iteration = 20;
    save_compressor_checkpoint(file, compressor_checkpoint_path(checkpoint, 0));
    keep_sane_compressor_state(compressor_checkpoint_path(checkpoint, 0), sane, 0);
    file.iteration = 40;
    save_compressor_checkpoint(file, compressor_checkpoint_path(checkpoint, 0));
    CHECK(load_compressor_checkpoint(compressor_checkpoint_path(sane, 0), 20).iteration == 20);
    CHECK(load_compressor_checkpoint(compressor_checkpoint_path(checkpoint, 0), 40).iteration == 40);
    // Rank 1 wrote no file at that iteration (its node was stopped mid-save, or
    // a regroup renumbered the ranks): no error, and no stale sane file left
    // to be mistaken for this checkpoint's.
    save_compressor_checkpoint(file, compressor_checkpoint_path(sane, 1));
    CHECK_NOTHROW(keep_sane_compressor_state(compressor_checkpoint_path(checkpoint, 1), sane, 1));
    CHECK_FALSE(std::filesystem::exists(compressor_checkpoint_path(sane, 1)));
  }

  TEST_CASE("an elastic regroup merges old ranks' residuals and velocities so that their pending update carries over") {
    auto state = [](std::vector<float> residual, std::vector<float> velocity, std::uint64_t iteration) {
      CompressorState s;
      s.residual = std::move(residual);
      s.velocity = std::move(velocity);
      s.iteration = iteration;
      return s;
    };
    // Two old ranks of a three-rank run, both now on one node with one new rank of two.
    const std::vector<std::vector<CompressorState>> sources{{state({1, 2, 3}, {0.5f}, 9), state({4}, {}, 9)},
                                                            {state({3, 2, 1}, {1.5f}, 9), state({-4}, {}, 9)}};
    const float weight = (2.0f / 3.0f) / 1.0f;
    const auto merged = merge_states(sources, weight);
    REQUIRE(merged.size() == 2);
    for (float v : merged[0].residual) CHECK(v == doctest::Approx(4.0f * weight));
    CHECK(merged[0].velocity.at(0) == doctest::Approx(2.0f * weight));
    CHECK(merged[1].residual.at(0) == 0.0f);
    CHECK(merged[0].iteration == 9);
    // Pending update (sum of residuals / ranks): the old ranks' (1+2+3 + 3+2+1) / 3 = this rank's / 2.
    float sum = 0;
    for (float v : merged[0].residual) sum += v;
    CHECK(sum / 2.0f == doctest::Approx(12.0f / 3.0f));
    // Layouts that differ are refused.
    CHECK_THROWS_AS(merge_states({{state({1, 2}, {}, 0)}, {state({1}, {}, 0)}}, 1.0f), Error);
    CHECK_THROWS_AS(merge_states({{state({1}, {}, 0)}, {}}, 1.0f), Error);
  }

  TEST_CASE("a rank's compressor states to go on with: its own file as it is, old ranks' merged, a foreign file refused") {
    testing::TempDir dir;
    const auto checkpoint = dir.path() / "c.ckpt";
    auto state = [](std::vector<float> residual) {
      CompressorState s;
      s.residual = std::move(residual);
      return s;
    };
    // Three old ranks, two buckets each (the second not compressed).
    for (int rank = 0; rank < 3; ++rank) {
      CompressorCheckpoint file;
      file.iteration = 40;
      file.rank = rank;
      file.ranks = 3;
      file.buckets = {encode_states({state({float(rank), 1.0f})}), ""};
      save_compressor_checkpoint(file, compressor_checkpoint_path(checkpoint, rank));
    }
    // Resuming rank 1: its own bytes, untouched.
    const auto own = load_rank_compressor_states(checkpoint, {1}, 3, 40, 2, 1.0f);
    REQUIRE(own.size() == 2);
    CHECK(own[0] == encode_states({state({1.0f, 1.0f})}));
    CHECK(own[1].empty());
    // Ranks 0 and 2 onto one new rank: merged with the weight.
    const auto merged = load_rank_compressor_states(checkpoint, {0, 2}, 3, 40, 2, 0.5f);
    const auto states = decode_states(merged[0]);
    REQUIRE(states.size() == 1);
    CHECK(states[0].residual == std::vector<float>{1.0f, 1.0f});  // (0 + 2) x 0.5, (1 + 1) x 0.5
    CHECK(merged[1].empty());
    // No sources: nothing to take.
    CHECK(load_rank_compressor_states(checkpoint, {}, 3, 40, 2, 1.0f) == std::vector<std::string>(2));
    // Another run's layout, another iteration, a missing rank: refused, saying which and why.
    CHECK_THROWS_WITH_AS(load_rank_compressor_states(checkpoint, {1}, 4, 40, 2, 1.0f),
                         doctest::Contains("holds rank 1 of 3 ranks and 2 buckets; expected rank 1 of 4 ranks"), Error);
    CHECK_THROWS_WITH_AS(load_rank_compressor_states(checkpoint, {1}, 3, 40, 5, 1.0f),
                         doctest::Contains("and 5 buckets"), Error);
    CHECK_THROWS_WITH_AS(load_rank_compressor_states(checkpoint, {1}, 3, 60, 2, 1.0f),
                         doctest::Contains("no compressor checkpoint of iteration 60"), Error);
    CHECK_THROWS_WITH_AS(load_rank_compressor_states(checkpoint, {0, 5}, 3, 40, 2, 1.0f),
                         doctest::Contains("c.ckpt.compress-5' does not exist"), Error);
  }

  TEST_CASE("a damaged compressor checkpoint is refused with the file's name") {
    testing::TempDir dir;
    const auto path = dir.path() / "c.compress-0";
    CompressorCheckpoint file;
    file.buckets.push_back(encode_states({}));
    save_compressor_checkpoint(file, path);
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    bytes[bytes.size() / 2] ^= 0x5a;
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    CHECK_THROWS_WITH_AS(load_compressor_checkpoint(path), doctest::Contains("c.compress-0"), Error);
  }
}
