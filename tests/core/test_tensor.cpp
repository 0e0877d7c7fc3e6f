#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "core/common/aligned_allocator.hpp"
#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/tensor/blob.hpp"

using namespace taihu;

TEST_CASE("shape counts and NCHW accessors") {
  Shape s{2, 3, 4, 5};
  CHECK(s.rank() == 4);
  CHECK(s.count() == 120);
  CHECK(s.count(1, 3) == 12);
  CHECK(s.count_from(2) == 20);
  CHECK(s.num() == 2);
  CHECK(s.width() == 5);
  CHECK(Shape{7}.height() == 1);
  CHECK(Shape{}.count() == 1);
  CHECK(s.str() == "2x3x4x5");
  CHECK(s.axis(-1) == 3);
  CHECK_THROWS_AS(s.axis(4), ShapeError);
  CHECK_THROWS_AS(Shape({2, -1}), ShapeError);
}

TEST_CASE("tensor storage is 256-byte aligned and reused on shrinking reshape") {
  Tensor t(Shape{3, 5});
  CHECK(reinterpret_cast<uintptr_t>(t.ptr()) % 256 == 0);
  CHECK(t.count() == 15);
  for (int64_t i = 0; i < t.count(); ++i) CHECK(t[i] == 0.0f);
  t.fill(2.5f);
  const float* before = t.ptr();
  t.reshape(Shape{2, 5});
  CHECK(t.ptr() == before);
  CHECK(t[9] == 2.5f);
  t.reshape(Shape{100, 100});
  CHECK(t.count() == 10000);
  CHECK(reinterpret_cast<uintptr_t>(t.ptr()) % 256 == 0);
  // small, odd and large (mmap'd) sizes: every one on the boundary, whatever malloc has handed out
  std::vector<Tensor> many;
  for (int64_t n : {1, 7, 33, 1000, 4097, 1 << 20, 3 << 20}) {
    many.emplace_back(Shape{n});
    CHECK(reinterpret_cast<uintptr_t>(many.back().ptr()) % 256 == 0);
  }
  AlignedVector<double> v(5);
  CHECK(reinterpret_cast<uintptr_t>(v.data()) % 256 == 0);
}

TEST_CASE("tensor copy checks the element count; share aliases storage") {
  Tensor a(Shape{2, 2}), b(Shape{4}), c(Shape{3});
  a.fill(1.0f);
  b.copy_from(a);
  CHECK(b[3] == 1.0f);
  CHECK_THROWS_AS(c.copy_from(a), ShapeError);
  Tensor view;
  view.share(a);
  view[0] = 9.0f;
  CHECK(a[0] == 9.0f);
  CHECK(view.shares_storage_with(a));
}

TEST_CASE("blob reshapes data and diff together") {
  Blob blob(Shape{2, 3});
  CHECK(blob.diff().shape() == Shape{2, 3});
  blob.reshape(Shape{4, 1, 2});
  CHECK(blob.data().count() == 8);
  CHECK(blob.diff().count() == 8);
}

TEST_CASE("rng is deterministic, uniform in range, and derive_seed separates streams") {
  Rng a(42), b(42), c(43);
  CHECK(a() == b());
  CHECK(a() != c());
  Rng r(1);
  double sum = 0.0;
  for (int i = 0; i < 20000; ++i) {
    const float u = r.uniform();
    CHECK_MESSAGE((u >= 0.0f && u < 1.0f), "uniform out of range");
    sum += u;
  }
  CHECK(sum / 20000 == doctest::Approx(0.5).epsilon(0.02));
  double sq = 0.0;
  for (int i = 0; i < 20000; ++i) {
    const float z = r.normal();
    sq += z * z;
  }
  CHECK(sq / 20000 == doctest::Approx(1.0).epsilon(0.05));
  CHECK(derive_seed(1, "conv1") != derive_seed(1, "conv2"));
  CHECK(derive_seed(1, "conv1") == derive_seed(1, "conv1"));
}
