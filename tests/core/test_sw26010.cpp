#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "devices/sw26010/core_group.hpp"
#include "devices/sw26010/vector.hpp"

using namespace taihu;
using namespace taihu::sw26010;

namespace {
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const SimulationError& e) {
    return e.what();
  }
  return "<no error>";
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_SUITE("sw26010") {
  TEST_CASE("the cost parameters load from config/devices/sw26010.ini") {
    const auto p = Params::defaults();
    CHECK(p.clock_hz == doctest::Approx(1.45e9));
    CHECK(p.ldm_bytes == 65536);
    CHECK(p.rlc_latency_cycles == 11);
    CHECK(p.dma_transaction_bytes == 128);
    CHECK(p.dma_cap_bytes_per_cycle(1) == doctest::Approx(10e9 / 1.45e9));
    CHECK(p.dma_cap_bytes_per_cycle(12) == doctest::Approx(14e9 / 1.45e9));
    CHECK(p.dma_cap_bytes_per_cycle(24) == doctest::Approx(15e9 / 1.45e9));
    auto doc = config::Document::parse("[sw26010]\nrlc_latency_cycles = 12\ntypo = 1\n", "x.ini");
    CHECK_THROWS_WITH_AS(Params::from(doc.section("sw26010")), doctest::Contains("typo"), ConfigError);
  }

  TEST_CASE("spawn runs 64 CPEs; ids, rows and columns; the clock includes spawn and join") {
    CoreGroup cg(0, Params{});
    std::vector<int> seen(64, -1);
    const auto stats = cg.run("ids", [&](Cpe& c) {
      seen[c.id()] = c.row() * 8 + c.col();
      c.charge(100 * c.id());
    });
    for (int i = 0; i < 64; ++i) CHECK(seen[i] == i);
    const Params p;
    CHECK(stats.cycles == std::int64_t(p.spawn_cycles) + 6300 + std::int64_t(p.join_cycles));
    CHECK(cg.clock() == stats.cycles);
  }

  TEST_CASE("DMA get and put move data at completion; a missing wait is caught") {
    CoreGroup cg(0, Params{});
    std::vector<float> in(64 * 256), out(64 * 256, 0.0f);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = float(i);
    cg.run("copy2x", [&](Cpe& c) {
      float* buf = c.ldm_array<float>(256);
      DmaReply reply;
      c.dma_get(buf, in.data() + c.id() * 256, 256 * sizeof(float), reply);
      CHECK(std::isnan(buf[0]));  // poisoned until the data lands
      c.dma_wait(reply, 1);
      c.check_ready(buf, 1024);
      for (int i = 0; i < 256; ++i) buf[i] *= 2;
      c.dma_put(out.data() + c.id() * 256, buf, 1024, reply);
      c.dma_wait(reply, 2);
    });
    for (std::size_t i = 0; i < in.size(); ++i) REQUIRE(out[i] == 2 * in[i]);

    const auto msg = error_of([&] {
      cg.run("forgetful", [&](Cpe& c) {
        float* buf = c.ldm_array<float>(64);
        DmaReply reply;
        c.dma_get(buf, in.data(), 256, reply);
        c.check_ready(buf + 8, 16);
      });
    });
    CHECK(contains(msg, "before dma_wait"));
    CHECK(contains(msg, "CPE 0 (row 0, column 0)"));
    CHECK(contains(msg, "kernel 'forgetful'"));
  }

  TEST_CASE("strided and broadcast descriptors; misaligned descriptors are rejected") {
    CoreGroup cg(0, Params{});
    std::vector<float> m(16 * 16);
    for (int i = 0; i < 256; ++i) m[i] = float(i);
    std::vector<float> got(64 * 8);
    cg.run("strided", [&](Cpe& c) {
      float* col = c.ldm_array<float>(8);
      DmaReply r;
      if (c.id() == 0) {
        // 4 blocks of 2 floats, rows of 16 floats apart
        c.dma_get_strided(col, m.data() + 2, 4, 8, 64, r);
        c.dma_wait(r, 1);
        c.dma_put_strided(m.data() + 16 * 8, col, 2, 16, 64, r);  // 2 blocks of 4
        c.dma_wait(r, 2);
      }
      c.sync(Scope::array);
      if (c.id() == 0) {
        DmaDesc d;
        d.mode = DmaMode::bcast;
        d.size = 32;
        d.bcast_mask = 0x03;  // rows 0 and 1
        c.dma(d, m.data() + 32, col, r);
        c.dma_wait(r, 3);
      }
      c.sync(Scope::array);
      std::memcpy(got.data() + c.id() * 8, col, 32);
    });
    CHECK(m[128] == 2);
    CHECK(m[129] == 3);
    CHECK(m[130] == 18);
    CHECK(m[131] == 19);
    CHECK(m[144] == 34);
    CHECK(m[147] == 51);
    CHECK(got[9 * 8 + 0] == 32);   // row 1 received
    CHECK(got[15 * 8 + 7] == 39);
    CHECK(got[16 * 8] == 0);       // row 2 did not (LDM is zeroed at start)

    const auto msg = error_of([&] {
      cg.run("crooked", [&](Cpe& c) {
        if (c.id() != 9) return;
        char* buf = static_cast<char*>(c.ldm_alloc(64));
        DmaReply r;
        c.dma_get(buf + 2, m.data(), 16, r);
      });
    });
    CHECK(contains(msg, "misaligned DMA descriptor"));
    CHECK(contains(msg, "CPE 9 (row 1, column 1)"));
    CHECK(contains(msg, "kernel 'crooked'"));
  }

  TEST_CASE("row-mode DMA scatters over the row") {
    CoreGroup cg(0, Params{});
    std::vector<float> m(64);
    for (int i = 0; i < 64; ++i) m[i] = float(i);
    std::vector<float> got(64);
    cg.run("rowmode", [&](Cpe& c) {
      float* b = c.ldm_array<float>(8);
      DmaReply r;
      if (c.id() == 8) {
        DmaDesc d;
        d.mode = DmaMode::row;
        d.size = 64 * 4;
        c.dma(d, m.data(), b, r);
        c.dma_wait(r, 1);
      }
      c.sync(Scope::row);
      if (c.row() == 1) got[c.col() * 8] = b[0], got[c.col() * 8 + 7] = b[7];
    });
    CHECK(got[0] == 0);
    CHECK(got[7] == 7);
    CHECK(got[56] == 56);
    CHECK(got[63] == 63);
  }

  TEST_CASE("LDM overflow is an error naming the CPE and kernel") {
    CoreGroup cg(0, Params{});
    const auto msg = error_of([&] {
      cg.run("greedy", [&](Cpe& c) {
        c.ldm_alloc(40 * 1024);
        if (c.id() == 5) c.ldm_alloc(30 * 1024);
      });
    });
    CHECK(contains(msg, "LDM overflow"));
    CHECK(contains(msg, "CPE 5 (row 0, column 5)"));
    CHECK(contains(msg, "kernel 'greedy'"));
    // the group is usable afterwards
    CHECK(cg.run("ok", [](Cpe& c) { c.ldm_alloc(62 * 1024); }).ldm_peak_bytes == 62 * 1024);
  }

  TEST_CASE("register communication: point to point, broadcast, latency and FIFO back-pressure") {
    CoreGroup cg(0, Params{});
    std::vector<double> received(64, 0);
    std::vector<std::int64_t> at(64, 0);
    cg.run("ring", [&](Cpe& c) {
      // each CPE sends its id to the next column (row ring), receives from the previous
      doublev4 v = doublev4::splat(double(c.id()));
      c.putr(&v, (c.col() + 1) % 8);
      doublev4 in;
      c.getr(&in);
      received[c.id()] = in[0];
      // column broadcast from row 0
      if (c.row() == 0) {
        doublev4 b = doublev4::splat(100.0 + c.col());
        c.putc(&b, Cpe::broadcast);
      } else {
        doublev4 b;
        c.getc(&b);
        received[c.id()] += b[3];
      }
    });
    CHECK(received[0] == 7);
    CHECK(received[1] == 0);
    CHECK(received[9] == 8 + 101);
    CHECK(received[63] == 62 + 107);

    // latency: the receiver's clock is the sender's + 11
    cg.run("latency", [&](Cpe& c) {
      if (c.id() == 0) {
        c.charge(1000);
        doublev4 v{};
        c.putr(&v, 1);
      } else if (c.id() == 1) {
        const auto t0 = c.rpcc();
        doublev4 v;
        c.getr(&v);
        at[1] = c.rpcc() - t0;
      }
    });
    CHECK(at[1] == 1000 + 11);  // the put at +1000 arrives 11 cycles later

    // 10 puts into a FIFO of 4: the sender waits for the receiver
    cg.run("backpressure", [&](Cpe& c) {
      if (c.id() == 0) {
        for (int i = 0; i < 10; ++i) {
          doublev4 v = doublev4::splat(i);
          c.putc(&v, 1);
        }
        at[0] = c.rpcc();
      } else if (c.id() == 8) {
        c.charge(5000);
        double sum = 0;
        for (int i = 0; i < 10; ++i) {
          doublev4 v;
          c.getc(&v);
          sum += v[0];
        }
        received[8] = sum;
      }
    });
    CHECK(received[8] == 45);
    CHECK(at[0] > 5000);  // stalled until the receiver started draining
  }

  TEST_CASE("a register-communication deadlock is detected and named") {
    CoreGroup cg(0, Params{});
    const auto msg = error_of([&] {
      cg.run("cycle", [&](Cpe& c) {
        if (c.row() != 2) return;
        doublev4 v;
        c.getr(&v);  // everyone waits first
        c.putr(&v, (c.col() + 1) % 8);
      });
    });
    CHECK(contains(msg, "register-communication deadlock"));
    CHECK(contains(msg, "kernel 'cycle'"));
    CHECK(contains(msg, "CPE 16 (row 2, column 0)"));
    CHECK(contains(msg, "getr"));

    const auto sync_msg = error_of([&] {
      cg.run("halfsync", [&](Cpe& c) {
        if (c.id() % 2 == 0) c.sync(Scope::array);
      });
    });
    CHECK(contains(sync_msg, "synchronisation deadlock"));
  }

  TEST_CASE("row, column and array sync align clocks") {
    CoreGroup cg(0, Params{});
    std::vector<std::int64_t> after(64);
    cg.run("sync", [&](Cpe& c) {
      c.charge(10 * c.id());
      c.sync(Scope::row);
      after[c.id()] = c.rpcc();
      c.sync(Scope::column);
      c.sync(Scope::array);
    });
    const Params p;
    const auto start = std::int64_t(p.spawn_cycles);
    CHECK(after[0] == start + 70 + 14);
    CHECK(after[7] == start + 70 + 14);
    CHECK(after[63] == start + 630 + 14);
  }

  TEST_CASE("runs are deterministic to the cycle") {
    auto once = [] {
      CoreGroup cg(0, Params{});
      std::vector<float> data(64 * 1024, 1.0f);
      std::int64_t total = 0;
      for (int rep = 0; rep < 2; ++rep) {
        total += cg.run("mixed", [&](Cpe& c) {
                      float* b = c.ldm_array<float>(1024);
                      DmaReply r;
                      c.dma_get(b, data.data() + c.id() * 1024, 4096 - 128 * (c.id() % 3), r);
                      c.charge(37 * (c.id() % 5));
                      c.dma_wait(r, 1);
                      doublev4 v = doublev4::splat(b[0]);
                      if (c.col() == c.row()) {
                        c.putr(&v, Cpe::broadcast);
                      } else {
                        c.getr(&v);
                      }
                      c.sync(Scope::array);
                      c.dma_put(data.data() + c.id() * 1024, b, 4096, r);
                      c.dma_wait(r, 2);
                    }).cycles;
      }
      return total;
    };
    const auto a = once();
    CHECK(a == once());
    CHECK(a > 0);
  }

  TEST_CASE("vector types") {
    const floatv4 f{{1, 2, 3, 4}};
    const doublev4 d = widen(f);
    CHECK(d[2] == 3.0);
    const doublev4 r = vmad(d, doublev4::splat(2), doublev4::splat(1));
    CHECK(r == doublev4{{3, 5, 7, 9}});
    CHECK(narrow(r)[3] == 9.0f);
    CHECK(shuffle(d, r, 3, 2, 0, 1) == doublev4{{4, 3, 3, 5}});
    CHECK(vmax(d, doublev4::splat(2.5)) == doublev4{{2.5, 2.5, 3, 4}});
  }
}

#include "devices/sw26010/gemm.hpp"

namespace {
std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  unsigned s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float((s >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return v;
}
// C = alpha op(A) op(B) + beta C, naive, in double.
void reference_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                    int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = float(alpha * s + beta * c[i * ldc + j]);
    }
}
}  // namespace

TEST_SUITE("sw26010") {
  TEST_CASE("gemm matches the reference for transposes, edges, alpha and beta") {
    CoreGroup cg(0, Params{});
    struct Case {
      bool ta, tb;
      int m, n, k;
      float alpha, beta;
    };
    for (const Case cs : {Case{false, false, 16, 16, 16, 1, 0}, Case{false, false, 37, 45, 70, 1.5f, 0},
                          Case{true, false, 64, 40, 33, 1, 0.5f}, Case{false, true, 29, 300, 90, -1, 1},
                          Case{true, true, 300, 20, 400, 0.25f, 0}}) {
      CAPTURE(cs.m);
      CAPTURE(cs.n);
      CAPTURE(cs.k);
      const int lda = cs.ta ? cs.m + 3 : cs.k + 1, ldb = cs.tb ? cs.k : cs.n + 2, ldc = cs.n + 5;
      const auto a = random_vector(std::size_t(lda) * (cs.ta ? cs.k : cs.m), 1);
      const auto b = random_vector(std::size_t(ldb) * (cs.tb ? cs.n : cs.k), 2);
      auto c = random_vector(std::size_t(ldc) * cs.m, 3);
      auto expect = c;
      reference_gemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, expect.data(), ldc);
      const auto stats = gemm(cg, cs.ta ? Transpose::yes : Transpose::no, cs.tb ? Transpose::yes : Transpose::no, cs.m,
                              cs.n, cs.k, cs.alpha, a.data(), lda, b.data(), ldb, cs.beta, c.data(), ldc);
      for (std::size_t i = 0; i < c.size(); ++i) REQUIRE(c[i] == doctest::Approx(expect[i]).epsilon(1e-5));
      CHECK(stats.cycles > 0);
      CHECK(stats.dma_requests > 0);
      CHECK(stats.ldm_peak_bytes <= 60 * 1024);
    }
  }

  TEST_CASE("gemm time: compute-bound at large sizes, deterministic, the same without numerics") {
    CoreGroup cg(0, Params{});
    const int m = 256, n = 512, k = 768;
    const auto a = random_vector(std::size_t(m) * k, 4), b = random_vector(std::size_t(k) * n, 5);
    std::vector<float> c(std::size_t(m) * n);
    const auto s1 = gemm(cg, Transpose::no, Transpose::no, m, n, k, 1, a.data(), k, b.data(), n, 0, c.data(), n);
    const auto s2 = gemm(cg, Transpose::no, Transpose::no, m, n, k, 1, a.data(), k, b.data(), n, 0, c.data(), n);
    CHECK(s1.cycles == s2.cycles);
    cg.set_numerics(false);
    const auto s3 = gemm(cg, Transpose::no, Transpose::no, m, n, k, 1, a.data(), k, b.data(), n, 0, c.data(), n);
    CHECK(s3.cycles == s1.cycles);
    const Params p;
    const double gflops = 2.0 * m * n * k / s1.seconds(p) / 1e9;
    CHECK(gflops > 500);  // 742.4 peak; swGEMM-class efficiency
    CHECK(gflops < 742.4);
  }
}
