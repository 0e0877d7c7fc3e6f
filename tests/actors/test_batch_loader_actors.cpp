// The streaming feed as message flow (actors/feed/): batch loader and decoder
// actors yield exactly BatchSource's batches (the same BatchPlan), whatever
// the decoders, slots and shards; they stop reading when the consumer takes
// nothing, report reading errors in order, and go away cleanly mid-batch.

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "actors/feed/batch_loader.hpp"
#include "actors/feed/decoder_pool.hpp"
#include "core/data/batch_source.hpp"
#include "support/actor_fixture.hpp"
#include "support/error_message.hpp"
#include "support/eventually.hpp"
#include "support/finishes_within.hpp"

namespace taihu {
namespace {

using namespace std::chrono_literals;
using testing::finishes_within;

// Sample i holds i plus a pattern and, augmented, a trace of its draw; its
// label is i % 5. Samples at i % 13 == 5 are unreadable (-1, as a corrupt
// file), so batches take substitutes. Optionally throws at one index (a
// DataError, or another exception), or takes time per sample; counts reads.
class PatternDataset final : public Dataset {
 public:
  struct Options {
    int64_t size = 70;
    int64_t fail_at = -1;
    bool data_error = true;
    std::chrono::microseconds per_sample{0};
  };
  explicit PatternDataset(Options options) : options_(options) {}

  int64_t size() const override { return options_.size; }
  Shape sample_shape() const override { return Shape{2, 3}; }
  int num_classes() const override { return 5; }
  int label(int64_t index) const override { return static_cast<int>(index % 5); }
  void sample(int64_t index, float* out) const override { read_sample(index, out, 0); }
  int read_sample(int64_t index, float* out, uint64_t draw) const override {
    reads_.fetch_add(1);
    if (index == options_.fail_at) {
      const std::string message = fmt::format("sample {} is broken", index);
      if (options_.data_error) throw DataError(message);
      throw std::runtime_error(message);
    }
    if (options_.per_sample.count() > 0) std::this_thread::sleep_for(options_.per_sample);
    if (index % 13 == 5) return -1;
    for (int j = 0; j < 6; ++j)
      out[j] = static_cast<float>(index) + 0.125f * static_cast<float>(j) + static_cast<float>(draw % 1024) / 1024.0f;
    return label(index);
  }

  int64_t reads() const { return reads_.load(); }

 private:
  Options options_;
  mutable std::atomic<int64_t> reads_{0};
};

std::shared_ptr<PatternDataset> pattern(PatternDataset::Options options = {}) {
  return std::make_shared<PatternDataset>(options);
}

// One answer of next(): a batch, or the end of an epoch.
struct Batch {
  bool end = false;
  std::vector<float> data, labels;
  std::vector<int64_t> shape;
  friend bool operator==(const Batch&, const Batch&) = default;
};

Batch next_of(BatchFeed& feed) {
  Tensor data, labels;
  if (!feed.next(data, labels)) return Batch{true, {}, {}, {}};
  return {false, std::vector<float>(data.span().begin(), data.span().end()),
          std::vector<float>(labels.span().begin(), labels.span().end()), data.shape().dims()};
}

std::vector<Batch> read(BatchFeed& feed, int calls) {
  std::vector<Batch> out;
  for (int i = 0; i < calls; ++i) out.push_back(next_of(feed));
  return out;
}

// `epochs` whole epochs: every batch and each epoch's end.
std::vector<Batch> drain(BatchFeed& feed, int epochs) {
  return read(feed, epochs * static_cast<int>(feed.batches_per_epoch() + 1));
}

BatchOptions synchronous(BatchOptions options) {
  options.prefetch = 0;
  return options;
}

}  // namespace

TEST_SUITE("batch loader actors") {
  TEST_CASE_FIXTURE(testing::ActorFixture, "equal to BatchSource for any decoders, slots and shards") {
    const auto data = pattern();
    for (const bool augment : {false, true})
      for (const int shards : {1, 3})
        for (int shard = 0; shard < shards; ++shard) {
          // 70 samples of 24: 3 batches (the last of 22), or 2 with drop_last.
          const BatchOptions base{.batch_size = 24, .shuffle = true, .augment = augment, .drop_last = augment,
                                  .seed = 9, .shard_count = shards, .shard_index = shard};
          BatchSource source(data, synchronous(base));
          const auto expected = drain(source, 3);
          for (const int decoders : {1, 3})
            for (const int prefetch : {1, 4}) {
              CAPTURE(augment);
              CAPTURE(shard);
              CAPTURE(shards);
              CAPTURE(decoders);
              CAPTURE(prefetch);
              BatchOptions options = base;
              options.decoders = decoders;
              options.prefetch = prefetch;
              const auto feed = feed::make_actor_batch_feed(system, data, options);
              CHECK(feed->batches_per_epoch() == source.batches_per_epoch());
              CHECK(drain(*feed, 3) == expected);
              CHECK(feed->epoch() == 3);
              // The feed alone uses the pool: it was made with this feed's figure.
              CHECK(feed::DecoderPool::of(system, 7)->size() == static_cast<size_t>(decoders));
            }
        }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "seek drops what is prepared and goes on as a seeked BatchSource") {
    const auto data = pattern();
    // 9 batches an epoch (the last of 6); 3 decoders, 2 chunks per batch.
    const BatchOptions options{.batch_size = 8, .shuffle = true, .augment = true, .prefetch = 4, .decoders = 3,
                               .seed = 3};
    BatchSource source(data, synchronous(options));
    const auto feed = feed::make_actor_batch_feed(system, data, options);
    CHECK(read(*feed, 3) == read(source, 3));
    // Mid-stream, with every slot busy or ready: on across the epoch's end.
    source.seek(1, 4);
    feed->seek(1, 4);
    CHECK(feed->epoch() == 1);
    CHECK(feed->batch_index() == 4);
    CHECK(read(*feed, 12) == read(source, 12));
    // Seeks in a row, to an epoch's end: false, then the next epoch.
    feed->seek(2, 2);
    source.seek(0, 9);
    feed->seek(0, 9);
    CHECK(read(*feed, 3) == read(source, 3));
    CHECK(feed->epoch() == 1);
    // Back to the start.
    source.seek(0, 0);
    feed->seek(0, 0);
    CHECK(drain(*feed, 2) == drain(source, 2));
    CHECK(testing::error_message<DataError>([&] { feed->seek(0, 10); }) ==
          "cannot seek to batch 10 of epoch 1: an epoch has batches 0..9");
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "a consumer that takes nothing stops the reading; taking resumes it") {
    // In order, 4 a batch; sample 5 is unreadable, so batch 1 reads 5 samples
    // (the substitute too), batches 0, 2 and 3 read 4.
    const auto data = pattern({.size = 400});
    const auto feed = feed::make_actor_batch_feed(
        system, data, BatchOptions{.batch_size = 4, .shuffle = false, .prefetch = 2, .decoders = 2});
    auto reads_stay_at = [&](int64_t reads) {
      const bool reached = testing::eventually([&] { return data->reads() >= reads; });
      std::this_thread::sleep_for(40ms);  // time enough to read on, if it did
      return reached && data->reads() == reads;
    };
    CHECK(reads_stay_at(0));  // nothing before the first next()
    Tensor x, y;
    REQUIRE(feed->next(x, y));
    // Batch 0 taken, both slots hold batches 1 and 2: 13 samples read, no more.
    CHECK(reads_stay_at(4 + 5 + 4));
    REQUIRE(feed->next(x, y));
    CHECK(reads_stay_at(4 + 5 + 4 + 4));  // batch 1's slot took batch 3
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "reading errors come back after the batches completed before them") {
    SUBCASE("a DataError, with its message") {
      // Batch 2 (samples 16..23) holds the broken one; 4 slots run ahead of it.
      const auto data = pattern({.size = 60, .fail_at = 21});
      const BatchOptions options{.batch_size = 8, .shuffle = false, .prefetch = 4, .decoders = 3};
      BatchSource source(data, synchronous(options));
      const auto feed = feed::make_actor_batch_feed(system, data, options);
      CHECK(read(*feed, 2) == read(source, 2));
      Tensor x, y;
      CHECK(testing::error_message<DataError>([&] { feed->next(x, y); }) == "sample 21 is broken");
      CHECK(feed->batch_index() == 2);
      CHECK(testing::error_message<DataError>([&] { feed->next(x, y); }) == "sample 21 is broken");
      // Skipping the broken batch recovers.
      feed->seek(0, 3);
      source.seek(0, 3);
      CHECK(read(*feed, 5) == read(source, 5));
    }
    SUBCASE("any other exception, as an Error") {
      const auto data = pattern({.size = 60, .fail_at = 2, .data_error = false});
      const auto feed =
          feed::make_actor_batch_feed(system, data, BatchOptions{.batch_size = 8, .shuffle = false, .prefetch = 2});
      Tensor x, y;
      std::string message;
      bool data_error = false;
      try {
        feed->next(x, y);
      } catch (const DataError&) {
        data_error = true;
      } catch (const Error& e) {
        message = e.what();
      }
      CHECK_FALSE(data_error);
      CHECK(message == "sample 2 is broken");
    }
  }

  TEST_CASE("dead decoders fail next() instead of hanging it") {
    const auto data = pattern();
    CHECK(finishes_within(5s, [data] {
      testing::ActorTestConfig config;
      caf::actor_system system{config};
      const auto feed = feed::make_actor_batch_feed(system, data, BatchOptions{.batch_size = 8, .decoders = 2});
      {
        caf::scoped_actor self{system};
        const auto& decoders = feed::DecoderPool::of(system, 0)->decoders()->actors();
        for (const auto& d : decoders) self->send_exit(d, caf::exit_reason::kill);
        self->wait_for(decoders);
      }
      Tensor x, y;
      const std::string message = testing::error_message([&] { feed->next(x, y); });
      CHECK(message.find("a batch decoder failed") != std::string::npos);
    }));
  }

  TEST_CASE("destroying a feed mid-batch waits for nothing, and the system shuts down") {
    // 2 decoders on chunks of 8 samples of 3 ms each.
    const auto slow = pattern({.size = 200, .per_sample = 3ms});
    int64_t at_destruction = 0;
    CHECK(finishes_within(5s, [slow, &at_destruction] {
      testing::ActorTestConfig config;
      caf::actor_system system{config};
      auto never_used = feed::make_actor_batch_feed(system, slow, BatchOptions{.batch_size = 16, .prefetch = 2});
      auto feed = feed::make_actor_batch_feed(system, slow,
                                              BatchOptions{.batch_size = 16, .prefetch = 3, .decoders = 2});
      Tensor x, y;
      REQUIRE(feed->next(x, y));
      const auto start = std::chrono::steady_clock::now();
      feed.reset();  // decoders are on batches 1..3 now
      never_used.reset();
      at_destruction = slow->reads();
      CHECK(std::chrono::steady_clock::now() - start < 8 * 3ms);  // not even one chunk
    }));
    // The system waited for the decoders, which finished only their chunk.
    CHECK(slow->reads() <= at_destruction + 2 * 8);
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "two feeds share the process's decoders, each reading its own batches") {
    const auto train_data = pattern({.size = 70});
    const auto test_data = pattern({.size = 30});
    const BatchOptions train_options{.batch_size = 12, .shuffle = true, .augment = true, .drop_last = true,
                                     .prefetch = 3, .decoders = 2, .seed = 5, .shard_count = 2, .shard_index = 1};
    const BatchOptions test_options{.batch_size = 8, .shuffle = false, .prefetch = 2, .decoders = 5};
    BatchSource train_source(train_data, synchronous(train_options));
    BatchSource test_source(test_data, synchronous(test_options));
    const auto train = feed::make_actor_batch_feed(system, train_data, train_options);
    const auto test = feed::make_actor_batch_feed(system, test_data, test_options);
    CHECK(feed::DecoderPool::of(system, 0)->size() == 2);  // the first feed's figure
    // Interleaved, as a replica trains and evaluates.
    for (int round = 0; round < 3; ++round) {
      CHECK(read(*train, 4) == read(train_source, 4));
      test->seek(0, 0);
      test_source.seek(0, 0);
      CHECK(drain(*test, 1) == drain(test_source, 1));
    }
  }

  TEST_CASE_FIXTURE(testing::ActorFixture, "wait_seconds: the time next() waited for batches not ready") {
    SUBCASE("slow decoders: the consumer waits") {
      const auto slow = pattern({.size = 100, .per_sample = 1ms});
      const auto feed = feed::make_actor_batch_feed(system, slow,
                                                    BatchOptions{.batch_size = 8, .prefetch = 1, .decoders = 1});
      read(*feed, 4);
      // Each batch: 8 samples of at least 1 ms, read after the last was taken.
      CHECK(feed->wait_seconds() > 0.02);
    }
    SUBCASE("a slow consumer: batches are ready when it comes") {
      const auto data = pattern({.size = 100});
      const auto feed = feed::make_actor_batch_feed(system, data,
                                                    BatchOptions{.batch_size = 8, .prefetch = 2, .decoders = 1});
      read(*feed, 1);  // the first batch is waited for
      const double first = feed->wait_seconds();
      for (int i = 0; i < 3; ++i) {
        std::this_thread::sleep_for(30ms);
        read(*feed, 1);
      }
      CHECK(feed->wait_seconds() - first < 0.01);
    }
  }
}

}  // namespace taihu
