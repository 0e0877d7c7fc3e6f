#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/trainer.hpp"
#include "support/mlp_net.hpp"
#include "support/temp_dir.hpp"

using namespace taihu;
using taihu::testing::TempDir;

namespace {

const std::string mlp_text = taihu::testing::mlp_net({.dropout = true, .accuracy = true});

std::string app_config(const TempDir& dir, const std::string& extra = "", int epochs = 2) {
  return "net = mlp.ini\nepochs = " + std::to_string(epochs) + "\nbatch_size = 16\ntest_batch_size = 50\nseed = 3\ndisplay = 5\n" + extra +
         "\n[data]\nsource = synthetic\nshape = 1 6 6\nclasses = 4\ntrain_size = 320\ntest_size = 120\n"
         "prefetch = 2\n"
         "[solver]\ntype = sgd\nbase_lr = 0.05\nmomentum = 0.9\n"
         "[output]\ndir = " +
         dir.path().string() + "/out\ncheckpoint = run.ckpt\n";
}

config::Document load(const TempDir& dir, const std::string& text, const std::string& name = "app.ini") {
  dir.write("mlp.ini", mlp_text);
  return config::Document::parse_file(dir.write(name, text));
}

std::vector<std::vector<float>> params_of(Trainer& trainer) {
  std::vector<std::vector<float>> out;
  for (const Param* p : trainer.net().params())
    out.emplace_back(p->blob->data().ptr(), p->blob->data().ptr() + p->blob->count());
  return out;
}

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
    const auto path = dir / "c.ckpt";
    save_checkpoint(c, path);
    const Checkpoint back = load_checkpoint(path);
    CHECK(back.iteration == 7);
    CHECK(back.params[0].values == std::vector<float>{1, 2, 3, 4});
    CHECK(back.rngs[0].second[3] == 4);
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

  TEST_CASE("training on synthetic data learns and writes report, metrics and checkpoint") {
    TempDir dir;
    Trainer trainer(load(dir, app_config(dir)), Progress::Mode::quiet);
    const TrainReport report = trainer.run();
    CHECK(report.epochs == 2);
    CHECK(report.iterations == 2 * (320 / 16));
    CHECK(report.history.size() == 2);
    CHECK(report.test_accuracy > 0.6);  // chance is 0.25
    CHECK(report.history[1].train_loss < report.history[0].train_loss);
    CHECK(report.images_per_second > 0);
    const std::string json = report.to_json();
    for (const char* key : {"\"epochs\"", "\"train_loss\"", "\"test_accuracy\"", "\"images_per_second\""})
      CHECK_MESSAGE(json.find(key) != std::string::npos, key);
    CHECK(std::filesystem::exists(dir / "out/run.ckpt"));
    const std::string metrics = read_file(dir / "out/metrics.jsonl");
    CHECK(metrics.find("\"type\": \"test\"") != std::string::npos);
    CHECK(metrics.find("\"accuracy\"") != std::string::npos);
  }

  TEST_CASE("resuming from a checkpoint continues bit-exactly") {
    TempDir dir;
    Trainer straight(load(dir, app_config(dir)), Progress::Mode::quiet);
    straight.run();
    const auto expected = params_of(straight);

    // Keep every checkpoint; iteration 7 is in the middle of epoch 1.
    TempDir dir2;
    {
      Trainer first(load(dir2, app_config(dir2, "", 1) + "checkpoint_every = 7\nkeep_all = true\n"),
                    Progress::Mode::quiet);
      first.run();
    }
    for (const char* name : {"run-iter7.ckpt", "run-iter20.ckpt"}) {
      CAPTURE(name);
      REQUIRE(std::filesystem::exists(dir2 / ("out/" + std::string(name))));
      Trainer resumed(load(dir2, app_config(dir2)), Progress::Mode::quiet);
      resumed.resume(dir2 / ("out/" + std::string(name)));
      resumed.run();
      CHECK(params_of(resumed) == expected);
    }
    // A checkpoint from another net is refused with a clear message.
    std::string other = app_config(dir2);
    Trainer wrong_seed(load(dir2, other.replace(other.find("seed = 3"), 8, "seed = 4"), "other.ini"),
                       Progress::Mode::quiet);
    CHECK_THROWS_WITH_AS(wrong_seed.resume(dir2 / "out/run-iter7.ckpt"), doctest::Contains("seed"), Error);
  }

  TEST_CASE("a NaN loss stops training with a clear error and keeps the last checkpoint") {
    TempDir dir;
    {
      Trainer ok(load(dir, app_config(dir, "")), Progress::Mode::quiet);
      ok.run();
    }
    const std::string before = read_file(dir / "out/run.ckpt");
    std::string text = app_config(dir, "");
    text.replace(text.find("base_lr = 0.05"), 14, "base_lr = 1e30");
    Trainer bad(load(dir, text, "bad.ini"), Progress::Mode::quiet);
    CHECK_THROWS_WITH_AS(bad.run(), doctest::Contains("loss became"), NumericError);
    CHECK(read_file(dir / "out/run.ckpt") == before);
  }
}
