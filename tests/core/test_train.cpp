#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <functional>
#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "core/train/loss_check.hpp"
#include "support/temp_dir.hpp"

using namespace taihu;
using taihu::testing::TempDir;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_SUITE("train") {
  TEST_CASE("checkpoints round-trip and detect truncation and corruption") {
    TempDir dir;
    Checkpoint c;
    c.net_name = "n";
    c.iteration = 7;
    c.epoch = 1;
    c.batch = 3;
    c.seed = 9;
    c.params.push_back({"w", {2, 2}, {1, 2, 3, 4}});
    c.rngs.push_back({"l", {1, 2, 3, 4}});
    c.kernel_choices = {{"forward 20x12x12 -> 50/1 k5x5 s1x1 p0x0 d1x1 batch 64", false}, {"weight gradient x", true}};
    const auto path = dir / "c.ckpt";
    save_checkpoint(c, path);
    const Checkpoint back = load_checkpoint(path);
    CHECK(back.iteration == 7);
    CHECK(back.params[0].values == std::vector<float>{1, 2, 3, 4});
    CHECK(back.rngs[0].second[3] == 4);
    CHECK(back.kernel_choices == c.kernel_choices);
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      CHECK_MESSAGE(entry.path().filename() == "c.ckpt", "stray file " << entry.path());

    std::string bytes = read_file(path);
    dir.write("trunc.ckpt", bytes.substr(0, bytes.size() - 5));
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "trunc.ckpt"), doctest::Contains("truncated"), Error);
    bytes[bytes.size() / 2] ^= 0x40;
    dir.write("bad.ckpt", bytes);
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "bad.ckpt"), doctest::Contains("corrupted"), Error);
    dir.write("junk.ckpt", "hello");
    CHECK_THROWS_WITH_AS(load_checkpoint(dir / "junk.ckpt"), doctest::Contains("not a taihu checkpoint"), Error);
  }

  TEST_CASE("a checkpoint of format 1 (before kernel choices) still loads") {
    TempDir dir;
    Checkpoint c;
    c.net_name = "n";
    c.iteration = 5;
    c.params.push_back({"w", {2}, {1, 2}});
    c.rngs.push_back({"l", {1, 2, 3, 4}});
    std::ostringstream payload;
    {
      cereal::PortableBinaryOutputArchive archive(payload);
      c.serialize_format_1(archive);
    }
    save_framed(dir / "old.ckpt", "TAIHUCK1", payload.str());
    const Checkpoint back = load_checkpoint(dir / "old.ckpt");
    CHECK(back.iteration == 5);
    CHECK(back.params[0].values == std::vector<float>{1, 2});
    CHECK(back.rngs[0].second[2] == 3);
    CHECK(back.kernel_choices.empty());
    // A current file is format 2, and its payload is no format-1 payload.
    save_checkpoint(c, dir / "new.ckpt");
    CHECK(read_file(dir / "new.ckpt").substr(0, 8) == "TAIHUCK2");
  }

  TEST_CASE("a checkpoint whose checksum holds but whose tensors do not fit their shapes is refused") {
    // Before: more values than the shape crashed the loader, fewer were
    // half-loaded. Every such file is refused, naming the tensor.
    TempDir dir;
    struct Bad {
      std::vector<int64_t> dims;
      std::vector<float> values;
      const char* says;
    };
    const std::vector<Bad> cases = {
        {{2, 2}, {1, 2, 3, 4, 5}, "holds 5 values, but its shape [2, 2] has 4"},
        {{2, 2}, {1, 2, 3}, "holds 3 values, but its shape [2, 2] has 4"},
        {{-1, 4}, {1, 2, 3, 4}, "has an impossible shape [-1, 4]"},
        {{int64_t{1} << 32, int64_t{1} << 32}, {}, "has an impossible shape"},
    };
    for (const Bad& bad : cases) {
      CAPTURE(bad.says);
      for (bool solver : {false, true}) {
        Checkpoint c;
        c.net_name = "n";
        (solver ? c.solver_state : c.params).push_back({"conv1/w", bad.dims, bad.values});
        const auto path = dir / "made-up.ckpt";
        save_checkpoint(c, path);
        const std::string expected = "is malformed: tensor 'conv1/w' " + std::string(bad.says);
        CHECK_THROWS_WITH_AS(load_checkpoint(path), doctest::Contains(expected.c_str()), Error);
      }
      // Nor is such a tensor ever copied into a model's.
      Tensor target(Shape{2, 2});
      CHECK_THROWS_AS(NamedTensor({"conv1/w", bad.dims, bad.values}).restore_into(target), Error);
    }
  }

  TEST_CASE("a checkpoint whose position is negative or that has bytes after it is refused, naming the file and field") {
    // Before: iteration -5 (or epoch, batch -1) resumed, and bytes after the
    // checkpoint inside a payload whose checksum holds were ignored.
    TempDir dir;
    Checkpoint good;
    good.net_name = "n";
    good.iteration = 7;
    good.epoch = 1;
    good.batch = 3;
    good.params.push_back({"w", {2}, {1, 2}});
    struct Bad {
      std::function<void(Checkpoint&)> edit;
      const char* says;
    };
    const std::vector<Bad> cases = {
        {[](Checkpoint& c) { c.iteration = -5; }, "field 'iteration' is -5"},
        {[](Checkpoint& c) { c.epoch = -1; }, "field 'epoch' is -1"},
        {[](Checkpoint& c) { c.batch = INT64_MIN; }, "field 'batch' is -9223372036854775808"},
        {[](Checkpoint& c) { c.elapsed_seconds = std::nan(""); }, "field 'elapsed_seconds' is nan"},
        {[](Checkpoint& c) { c.epoch_loss_sum = INFINITY; }, "field 'epoch_loss_sum' is inf"},
    };
    const auto path = dir / "made-up.ckpt";
    for (const Bad& bad : cases) {
      CAPTURE(bad.says);
      Checkpoint c = good;
      bad.edit(c);
      save_checkpoint(c, path);
      const std::string expected = "checkpoint '" + path.string() + "' is malformed: " + bad.says;
      CHECK_THROWS_WITH_AS(load_checkpoint(path), doctest::Contains(expected.c_str()), Error);
    }
    // Re-framed with bytes after the checkpoint (the checksum over all of them).
    save_framed(path, "TAIHUCK2", encode_checkpoint(good) + "xyz");
    CHECK_THROWS_WITH_AS(load_checkpoint(path), doctest::Contains("is malformed: 3 bytes follow the checkpoint's"),
                         Error);
    save_checkpoint(good, path);
    CHECK(load_checkpoint(path).batch == 3);

    // A rank's compressor state: the same.
    CompressorCheckpoint compressed;
    compressed.iteration = 7;
    compressed.ranks = 2;
    compressed.buckets = {""};
    save_compressor_checkpoint(compressed, dir / "c.compress-0");
    const std::string payload = load_framed(dir / "c.compress-0", "TAIHUCS1");
    save_framed(dir / "c.compress-1", "TAIHUCS1", payload + "x");
    CHECK_THROWS_WITH_AS(load_compressor_checkpoint(dir / "c.compress-1"),
                         doctest::Contains("c.compress-1' is malformed: 1 bytes follow"), Error);
    compressed.iteration = -5;
    save_compressor_checkpoint(compressed, dir / "c.compress-1");
    CHECK_THROWS_WITH_AS(load_compressor_checkpoint(dir / "c.compress-1"),
                         doctest::Contains("c.compress-1' is malformed: field 'iteration' is -5"), Error);
  }

  TEST_CASE("check_position: a checkpoint's batch must lie within an epoch, its iteration within the run") {
    Checkpoint c;
    c.iteration = 12;
    c.epoch = 1;
    c.batch = 2;
    CHECK_NOTHROW(check_position(c, "'c.ckpt'", 3, 10));
    c.batch = 11;
    CHECK_THROWS_WITH_AS(check_position(c, "'c.ckpt'", 3, 10),
                         "checkpoint 'c.ckpt': field 'batch' is 11 (batches done in epoch 2), but an epoch of this run "
                         "has 10 batches: the checkpoint is not of this configuration (batch_size, workers or the data "
                         "differ)",
                         ConfigError);
    c.batch = 2;
    c.iteration = int64_t{1} << 62;  // trained at a learning rate of 0 (poly) with exit 0
    CHECK_THROWS_WITH_AS(check_position(c, "'c.ckpt'", 3, 10),
                         doctest::Contains("field 'iteration' is 4611686018427387904, more than the 30 iterations"),
                         ConfigError);
    CHECK_NOTHROW(check_position(c, "'c.ckpt'", INT64_MAX, INT64_MAX));  // no overflow
  }

  TEST_CASE("a payload whose container counts claim more than it holds is refused before allocating them (fuzz_checkpoint)") {
    // Cereal resizes a container to the count a payload names before reading
    // an element: a count of 2^44 was a std::bad_alloc where the machine
    // refuses 64 TB, and a count of a few GB was allocated and zeroed. Every
    // 8-byte window of real payloads is overwritten with such a count; the
    // decoders must refuse each one as a made-up count (or accept a changed
    // number), never try the allocation.
    TempDir dir;
    Checkpoint c;
    c.net_name = "lenet";
    c.params.push_back({"conv1/w", {2, 2}, {1, 2, 3, 4}});
    c.solver_state.push_back({"conv1/w/momentum", {1}, {5}});
    c.rngs.push_back({"drop1", {1, 2, 3, 4}});
    c.kernel_choices.push_back({"forward 20x12x12 -> 50/1", true});
    compress::CompressorState state;
    state.residual = {1, 2, 3};
    state.velocity = {4, 5, 6};
    const std::string states = encode_states({state, state});
    CompressorCheckpoint compressed;
    compressed.buckets = {states, ""};
    save_compressor_checkpoint(compressed, dir / "c.compress-0");

    struct Decoder {
      const char* name;
      std::string payload;
      std::function<void(const std::string&)> decode;
      int containers;  // strings and vectors in the payload: each count must be caught
    };
    const std::vector<Decoder> decoders = {
        {"checkpoint", encode_checkpoint(c), [](const std::string& p) { (void)decode_checkpoint(p, "made-up"); }, 13},
        {"compressor checkpoint", load_framed(dir / "c.compress-0", "TAIHUCS1"),
         [](const std::string& p) { (void)decode_compressor_checkpoint(p, "made-up"); }, 3},
        {"compressor state", states, [](const std::string& p) { (void)decode_states(p); }, 5},
    };
    for (const Decoder& d : decoders) {
      CAPTURE(d.name);
      int caught = 0;
      for (std::size_t at = 0; at + 8 <= d.payload.size(); ++at) {
        CAPTURE(at);
        std::string bytes = d.payload;
        const uint64_t count = uint64_t{1} << 44;
        for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>((count >> (8 * i)) & 0xff);
        try {
          d.decode(bytes);
        } catch (const Error& e) {
          const std::string what = e.what();
          CHECK_MESSAGE(what.find("bad_alloc") == std::string::npos, what);
          CHECK_MESSAGE(what.find("length") == std::string::npos, what);
          if (what.find("claims 17592186044416 elements") != std::string::npos) ++caught;
        }
      }
      CHECK(caught == d.containers);
    }
  }

  TEST_CASE("a failed checkpoint write leaves the previous file intact") {
    TempDir dir;
    Checkpoint c;
    c.net_name = "first";
    const auto path = dir / "c.ckpt";
    save_checkpoint(c, path);
    const std::string before = read_file(path);
    // Make the temporary file impossible to create: a folder of that name.
    std::filesystem::create_directories(dir / ("c.ckpt.tmp." + std::to_string(::getpid())));
    c.net_name = "second";
    CHECK_THROWS_AS(save_checkpoint(c, path), Error);
    CHECK(read_file(path) == before);
  }

  TEST_CASE("the loss watch marks intervals sane while their mean stays within twice the lowest loss") {
    LossWatch watch;
    CHECK_FALSE(watch.open_interval_sane());  // no iteration: no evidence
    for (double loss : {2.30, 1.90, 1.50}) watch.add(loss);  // lowest so far: the first, 2.30
    CHECK(watch.open_interval_sane());
    CHECK(watch.close_interval());
    CHECK(watch.last_mean() == doctest::Approx(1.9));
    for (double loss : {0.60, 0.50}) watch.add(loss);
    CHECK(watch.close_interval());
    CHECK(watch.lowest() == doctest::Approx(0.55));
    for (double loss : {0.90, 1.00}) watch.add(loss);  // noisy, within 2 x 0.55
    CHECK(watch.close_interval());
    for (double loss : {3.0, 40.0, 1e6}) watch.add(loss);  // diverging, still finite
    CHECK_FALSE(watch.close_interval());
    CHECK_FALSE(watch.close_interval());  // an empty interval proves nothing
    CHECK(watch.lowest() == doctest::Approx(0.55));  // a diverged interval is no new best
  }

  TEST_CASE("a NaN stop names the checkpoint to resume from: the latest if the loss held after it, else the last sane") {
    CheckpointHistory history;
    history.latest = {"run/m.ckpt", 900, 0.0};
    history.sane = {sane_checkpoint_path("run/m.ckpt"), 600, 0.47};
    CHECK(sane_checkpoint_path("run/m.ckpt") == std::filesystem::path("run/m-sane.ckpt"));
    const std::string diverged = loss_failure(std::nan(""), 949, 1, 10, history, false, "run/m.ckpt");
    CAPTURE(diverged);
    CHECK(diverged.find("loss became NaN at iteration 950 (epoch 2, batch 11); training stopped. The loss diverged "
                        "after the last checkpoint 'run/m.ckpt' (iteration 900). 'run/m-sane.ckpt' (iteration 600) "
                        "is the last checkpoint after which the loss stayed sane (mean 0.47): resume from it") == 0);
    CHECK(loss_failure(INFINITY, 949, 1, 10, history, true, "run/m.ckpt")
              .find("loss became infinite at iteration 950 (epoch 2, batch 11); training stopped. The loss stayed "
                    "sane after the last checkpoint 'run/m.ckpt' (iteration 900): resume from it") == 0);
    CheckpointHistory none;
    none.latest = {"run/m.ckpt", 300, 0.0};
    CHECK(loss_failure(std::nan(""), 310, 0, 310, none, false, "run/m.ckpt").find("start over") != std::string::npos);
    CHECK(loss_failure(1.0, 1, 0, 1, history, false, "run/m.ckpt").empty());
  }
}
