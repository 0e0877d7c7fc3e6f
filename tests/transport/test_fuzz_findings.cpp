// Inputs the fuzzers (tests/fuzz/) found, each kept as a regression test of
// the contract they check: bad input is a taihu::Error with a message.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "core/config/config.hpp"
#include "core/data/caffe_datum.hpp"
#include "core/data/image_codec.hpp"
#include "core/data/lmdb_database.hpp"
#include "core/net/net.hpp"
#include "interop/caffe/net_import.hpp"
#include "support/loopback.hpp"
#include "transport/launch_environment.hpp"
#include "transport/status_server.hpp"

using namespace taihu;

TEST_SUITE("fuzz findings") {
  TEST_CASE("a value that starts with '#' dumps to text that reads back the same (fuzz_config)") {
    // "key =#x" is a value: '#' starts a comment only at a line's start or after a blank.
    const auto doc = config::Document::parse("listen =# not a comment\n[s]\nk =;x\n", "a.ini");
    CHECK(doc.root().get<std::string>("listen") == "# not a comment");
    const std::string dumped = doc.dump();
    const auto again = config::Document::parse(dumped, "dumped.ini");
    CHECK(again.root().get<std::string>("listen") == "# not a comment");
    CHECK(again.section("s").get<std::string>("k") == ";x");
    CHECK(again.dump() == dumped);
  }

  TEST_CASE("an input dimension of 0 is a ConfigError at its line (fuzz_net: was a division by zero in conv)") {
    auto doc = std::make_shared<config::Document>(config::Document::parse(
        "[net]\n[input data]\nshape = 0 8 8\n[layer conv1]\ntype = Convolution\nbottom = data\ntop = conv1\n"
        "num_output = 4\nkernel_size = 3\n",
        "zero.ini"));
    CHECK_THROWS_WITH_AS(Net(doc, 2, 1), doctest::Contains("zero.ini:3"), ConfigError);
    CHECK_THROWS_WITH_AS(Net(doc, 2, 1), doctest::Contains("every dimension must be at least 1, not 0"), ConfigError);
  }

  TEST_CASE("a status client that closes without a request frees its slot at once (fuzz_status_request)") {
    // Was: held until the 5 s request timeout, so 32 such clients locked the port for 5 s.
    transport::StatusServer server("127.0.0.1", 0, {{"/metrics", {"text/plain", [] { return std::string("x\n"); }}}});
    const auto start = std::chrono::steady_clock::now();
    const int fd = testing::connect_loopback(server.port());
    REQUIRE(fd >= 0);
    ::shutdown(fd, SHUT_WR);
    CHECK(testing::read_until_closed(fd, std::chrono::seconds(4)));
    ::close(fd);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }

  TEST_CASE("image data that starts with RIFF but is shorter than 12 bytes is a DataError (fuzz_jpeg, fuzz_png)") {
    // Telling WebP apart read bytes 8..11 of it: std::out_of_range, not a DataError.
    for (const std::string text : {"RIFF", "RIFF1234", "RIFF1234WEB"}) {
      CAPTURE(text);
      const std::vector<uint8_t> bytes(text.begin(), text.end());
      CHECK_THROWS_WITH_AS(decode_image(bytes, 3), doctest::Contains("not a JPEG or PNG image"), DataError);
    }
    const std::string webp("RIFF\x10\0\0\0WEBPVP8 ", 16);
    CHECK_THROWS_WITH_AS(decode_image(std::vector<uint8_t>(webp.begin(), webp.end()), 3),
                         doctest::Contains(": a WebP image"), DataError);
  }

  TEST_CASE("a Slurm host list of more hosts than ranks, or of overlong names, is a ConfigError (fuzz_launch_env)") {
    // Nested ranges multiply: this one asked for 10^9 names (gigabytes) before it was counted.
    CHECK_THROWS_WITH_AS(transport::expand_host_list("n[0-999]r[0-999]x[0-999]", "SLURM_JOB_NODELIST"),
                         doctest::Contains("SLURM_JOB_NODELIST='n[0-999]r[0-999]x[0-999]': it names more than 1048576 hosts"),
                         ConfigError);
    CHECK_THROWS_WITH_AS(transport::expand_host_list("a[0-1],n[0-1023]r[0-1023]", "SLURM_JOB_NODELIST"),
                         doctest::Contains("more than 1048576 hosts"), ConfigError);
    CHECK(transport::expand_host_list("n[0-1023]r[0-3]", "SLURM_JOB_NODELIST").size() == 4096);
    // A long prefix times a million numbers was gigabytes too.
    const std::string prefix(250, 'a');
    CHECK_THROWS_WITH_AS(transport::expand_host_list(prefix + "[0-999999]", "SLURM_JOB_NODELIST"),
                         doctest::Contains("makes host names longer than 255 characters"), ConfigError);
    CHECK(transport::expand_host_list(prefix + "[1-2]", "SLURM_JOB_NODELIST").back() == prefix + "2");
  }

  TEST_CASE("an LMDB database whose meta page gives a page size of 0 is a DataError (fuzz_lmdb: was SIGFPE)") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("taihu-fuzz-finding-lmdb-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    {
      LmdbWriter writer(dir / "good");
      const std::vector<uint8_t> value = {1, 2, 3};
      writer.put("a", value);
      writer.finish();
    }
    std::ifstream in(dir / "good" / "data.mdb", std::ios::binary);
    const std::vector<char> good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint32_t page_size = 0;  // the first meta page's: MDB_meta's first database record's first field
    std::memcpy(&page_size, good.data() + 40, 4);
    REQUIRE(page_size >= 4096);
    REQUIRE(good.size() >= 2 * page_size);
    CHECK(LmdbReader(dir / "good").size() == 1);
    // Either meta page: LMDB divides by the page size of the one it picks (the second, the newer).
    for (const auto& damage : {std::pair{0, 0u}, {1, 0u}, {0, 3000u}, {1, 1u << 20}}) {
      const int meta = damage.first;  // not a structured binding: clang < 16 cannot capture those (CAPTURE)
      const uint32_t bad_size = damage.second;
      CAPTURE(meta);
      CAPTURE(bad_size);
      std::vector<char> bytes = good;
      std::memcpy(bytes.data() + meta * page_size + 40, &bad_size, 4);
      const fs::path db = dir / ("bad-" + std::to_string(meta) + "-" + std::to_string(bad_size));
      fs::create_directories(db);
      std::ofstream(db / "data.mdb", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      CHECK_THROWS_WITH_AS(LmdbReader{db}, doctest::Contains(fmt::format("gives a page size of {} bytes", bad_size).c_str()),
                           DataError);
    }
    fs::remove_all(dir);
  }

  TEST_CASE("caffe names that taihu's net config cannot hold are ConfigErrors, not another net (fuzz_prototxt)") {
    const auto import = [](const std::string& prototxt) {
      return caffe::import_net(caffe::parse_net(prototxt, "names.prototxt"));
    };
    const std::string body = "input: \"data\" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2\n";
    // The net's name is a value: it read back without its blanks, cut at a comment, or not at all.
    for (const char* name : {" )maln\\tput:", "trail ", "a\\nb", "a #b", "a\\tb ;c"}) {
      CAPTURE(name);
      CHECK_THROWS_WITH_AS(import(fmt::format("name: \"{}\"\n", name) + body),
                           doctest::Contains("cannot be written to taihu's net config"), ConfigError);
    }
    // Layer and input names are section names: what the config's headers cannot hold never imports.
    CHECK_THROWS_WITH_AS(import("input: \"da ta\" input_dim: 1 input_dim: 1 input_dim: 2 input_dim: 2"),
                         doctest::Contains("input name 'da ta' holds characters"), ConfigError);
    CHECK_THROWS_WITH_AS(import(body + "layer { name: \"r(1)\" type: \"ReLU\" bottom: \"data\" top: \"r\" }"),
                         doctest::Contains("layer name 'r(1)' holds characters"), ConfigError);
    CHECK_THROWS_WITH_AS(import(body + "layer { name: \"r\" type: \"ReLU\" bottom: \"data\" top: \"r+\" }"),
                         doctest::Contains("top blob name 'r+' holds characters"), ConfigError);
    // What imports reads back as itself, a name with a blank inside included.
    const auto imported = import("name: \"My net#1\"\n" + body +
                                 "layer { name: \"inception_3a/1x1\" type: \"ReLU\" bottom: \"data\" top: \"r.1\" }");
    const std::string dumped = imported.description.dump();
    CHECK(config::Document::parse(dumped, "again.ini").dump() == dumped);
    CHECK(imported.description.section("net").get<std::string>("name") == "My net#1");
  }

  TEST_CASE("Caffe records whose sides multiply past int64 are DataErrors (fuzz_lmdb)") {
    // A raw Datum of 3 x (2^31 - 1) x (2^31 - 1) pixels holding 3 bytes: the
    // size check's product overflowed (undefined; UBSan's report in the checking build).
    const std::vector<uint8_t> datum = {0x08, 3,    0x10, 0xff, 0xff, 0xff, 0xff, 0x07, 0x18, 0xff,
                                        0xff, 0xff, 0xff, 0x07, 0x22, 3,    'a',  'b',  'c'};
    CHECK_THROWS_WITH_AS(parse_datum(datum, 3), doctest::Contains("a raw record of 3 bytes for 3 x 2147483647 x 2147483647"),
                         DataError);
    // A mean file of 1 x 2^30 x 2^30 x 2^30 and no values: the product wrapped
    // to 0 values, and the file read as an image of 2^30 x 2^30 x 2^30 holding none.
    const std::vector<uint8_t> varint30 = {0x80, 0x80, 0x80, 0x80, 0x04};
    std::string shape = {0x08, 0x01};  // BlobShape: dims, one varint each (unpacked)
    for (int i = 0; i < 3; ++i) {
      shape += '\x08';
      shape.append(varint30.begin(), varint30.end());
    }
    const std::string blob = "\x3a" + std::string(1, static_cast<char>(shape.size())) + shape;
    const auto file = std::filesystem::temp_directory_path() / ("taihu-fuzz-finding-mean-" + std::to_string(::getpid()));
    std::ofstream(file, std::ios::binary) << blob;
    CHECK_THROWS_WITH_AS(read_mean_file(file),
                         doctest::Contains("declares a blob of 1073741824 x 1073741824 x 1073741824 values"), DataError);
    std::filesystem::remove(file);
  }
}
