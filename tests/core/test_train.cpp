#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "core/common/error.hpp"
#include "core/train/checkpoint.hpp"
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
}
