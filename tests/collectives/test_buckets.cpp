// Fusion buckets (collectives/buckets.hpp) and the data-parallel split of
// batches (BatchOptions::shard_count): plain C++, in the core test binary.

#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "collectives/buckets.hpp"
#include "core/config/config.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/synthetic.hpp"
#include "core/net/net.hpp"
#include "support/mlp_net.hpp"

using namespace taihu;

namespace {

const std::string mlp = taihu::testing::mlp_net({.dropout = false, .accuracy = false});

std::unique_ptr<Net> make_mlp() {
  auto doc = std::make_shared<config::Document>(config::Document::parse(mlp, "mlp"));
  return std::make_unique<Net>(doc, 4, 1);
}

}  // namespace

TEST_SUITE("buckets") {
  TEST_CASE("params are bucketed in backward order, layers never split, within the byte limit") {
    auto net = make_mlp();
    const std::size_t ip1 = 0, ip2 = 2;  // layer indices
    REQUIRE(net->layer(ip1).name() == "ip1");
    REQUIRE(net->layer(ip2).name() == "ip2");

    SUBCASE("0 bytes: one bucket, complete after the first layer") {
      collectives::Buckets b(*net, 0);
      REQUIRE(b.size() == 1);
      CHECK(b[0].elements == 864 + 24 + 96 + 4);
      CHECK(b[0].first_stage == ip1);
      CHECK(b.ready_after(ip1) == std::vector<std::uint32_t>{0});
      CHECK(b.ready_after(ip2).empty());
      // Backward order: ip2's bias, ip2's weight, ip1's bias, ip1's weight.
      CHECK(b[0].slices[0].param->name == "ip2/bias");
      CHECK(b[0].slices[1].param->name == "ip2/weight");
      CHECK(b[0].slices[2].param->name == "ip1/bias");
      CHECK(b[0].slices[3].param->name == "ip1/weight");
      CHECK(b[0].slices[3].offset == 4 + 96 + 24);
    }
    SUBCASE("500 bytes: ip2 alone (ready after ip2's backward); ip1 is too big to join it") {
      collectives::Buckets b(*net, 500);
      REQUIRE(b.size() == 2);
      CHECK(b[0].elements == 4 + 96);
      CHECK(b[0].first_stage == ip2);
      CHECK(b[1].elements == 24 + 864);
      CHECK(b[1].first_stage == ip1);
      CHECK(b.ready_after(ip2) == std::vector<std::uint32_t>{0});
      CHECK(b.ready_after(ip1) == std::vector<std::uint32_t>{1});
      CHECK(b.total_elements() == 988);
    }
    SUBCASE("4000 bytes: both layers fit in one bucket") {
      collectives::Buckets b(*net, 4000);
      REQUIRE(b.size() == 1);
      CHECK(b[0].elements == 988);
    }
  }

  TEST_CASE("pack copies diffs into the bucket layout and unpack writes them back scaled") {
    auto net = make_mlp();
    collectives::Buckets b(*net, 500);
    for (Param* p : net->learnable_params()) {
      float* d = p->blob->diff().ptr();
      for (int64_t i = 0; i < p->blob->count(); ++i) d[i] = static_cast<float>(p->name.size() * 1000 + i);
    }
    for (std::size_t k = 0; k < b.size(); ++k) {
      std::vector<float> buffer(b[k].elements);
      b.pack(k, buffer.data());
      for (const auto& s : b[k].slices)
        for (std::size_t i = 0; i < s.count; ++i) CHECK(buffer[s.offset + i] == s.param->blob->diff()[i]);
      for (auto& v : buffer) v *= 3.0f;
      b.unpack(k, buffer.data(), 0.5f);
      for (const auto& s : b[k].slices)
        for (std::size_t i = 0; i < s.count; ++i)
          CHECK(s.param->blob->diff()[static_cast<int64_t>(i)] ==
                static_cast<float>(s.param->name.size() * 1000 + i) * 1.5f);
    }
  }

  TEST_CASE("N shards of a batch of N*b are the rows of the unsharded batch, in order") {
    auto data = std::make_shared<SyntheticDataset>(Shape{1, 2, 2}, 3, 50, Split::train, 7);
    for (int parts : {1, 2, 3, 4}) {
      CAPTURE(parts);
      BatchOptions whole;
      whole.batch_size = 10;
      whole.seed = 5;
      whole.drop_last = true;
      BatchSource all(data, whole);
      std::vector<std::unique_ptr<BatchSource>> shards;
      for (int r = 0; r < parts; ++r) {
        BatchOptions o = whole;
        o.shard_count = parts;
        o.shard_index = r;
        o.prefetch = r % 2;  // the same with and without a prefetch thread
        shards.push_back(std::make_unique<BatchSource>(data, o));
      }
      Tensor d, l, sd, sl;
      for (int batch = 0; batch < 2 * 5; ++batch) {  // two epochs
        if (!all.next(d, l)) REQUIRE(all.next(d, l));
        int64_t row = 0;
        for (int r = 0; r < parts; ++r) {
          if (!shards[static_cast<std::size_t>(r)]->next(sd, sl)) REQUIRE(shards[static_cast<std::size_t>(r)]->next(sd, sl));
          const int64_t n = sd.shape()[0];
          CHECK(n == 10 / parts + (r < 10 % parts ? 1 : 0));
          for (int64_t i = 0; i < n; ++i) {
            CHECK(sl[i] == l[row + i]);
            for (int64_t k = 0; k < 4; ++k) CHECK(sd[i * 4 + k] == d[(row + i) * 4 + k]);
          }
          row += n;
        }
        CHECK(row == 10);
      }
    }
  }
}
