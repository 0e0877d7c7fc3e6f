// The LMDB reader: any bytes as a database's data.mdb open, list and read or
// are a DataError, never a signal (lmdb_database.hpp: a file cut short or
// damaged is checked, or its faults caught); the keys list in order. Each
// record read, and the input itself, is parsed as a Caffe Datum (raw or an
// encoded image) or is a DataError; so is the input as a mean file (a
// BlobProto, the same records' format). Images of more than 2^22 pixels are
// not decoded (fuzz_image_size.hpp).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/data/caffe_datum.hpp"
#include "core/data/lmdb_database.hpp"
#include "fuzz_image_size.hpp"
#include "fuzz_support.hpp"

namespace {

void parse_record(std::span<const std::uint8_t> record) {
  using namespace taihu;
  fuzz::expect_clean([&] { (void)parse_datum_header(record); });
  if (fuzz::declares_large_image(record)) return;
  fuzz::expect_clean([&] { (void)parse_datum(record, 3); });
  fuzz::expect_clean([&] { (void)parse_datum(record, 1, 8); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  static const fuzz::Scratch scratch;
  static const std::filesystem::path folder = [] {
    std::filesystem::create_directories(scratch.dir() / "db");
    return scratch.dir() / "db";
  }();
  scratch.write("db/data.mdb", fuzz::text_of(data, size));
  fuzz::expect_clean([&] {
    const LmdbReader reader(folder);
    for (std::int64_t i = 0; i < std::min<std::int64_t>(reader.size(), 16); ++i) {
      if (i > 0 && !(reader.key(i - 1) < reader.key(i))) {
        std::fprintf(stderr, "fuzz_lmdb: keys %lld and %lld are listed out of order\n", static_cast<long long>(i - 1),
                     static_cast<long long>(i));
        std::abort();
      }
      fuzz::expect_clean([&] { reader.read(i, parse_record); });
    }
  });
  parse_record(std::span(data, size));
  fuzz::expect_clean([&] {
    const MeanImage mean = read_mean_file(scratch.write("mean.binaryproto", fuzz::text_of(data, size)));
    if (mean.channels <= 0 || mean.height <= 0 || mean.width <= 0 ||
        mean.values.size() != std::size_t(mean.channels) * std::size_t(mean.height) * std::size_t(mean.width)) {
      std::fprintf(stderr, "fuzz_lmdb: a mean file of %d x %d x %d holds %zu values\n", mean.channels, mean.height,
                   mean.width, mean.values.size());
      std::abort();
    }
  });
  return 0;
}
