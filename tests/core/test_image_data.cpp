// Stored image data: folder and list indexes, LMDB databases, Caffe's Datum
// and mean files, ImageDataset (decoding, skipping bad samples), the
// [data] keys of source = images and lmdb, and taihu-convert imageset's writer.

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/caffe_datum.hpp"
#include "core/data/dataset.hpp"
#include "core/data/image_codec.hpp"
#include "core/data/image_dataset.hpp"
#include "core/data/image_index.hpp"
#include "core/data/imageset_writer.hpp"
#include "core/data/lmdb_database.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/log_capture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace taihu;
using taihu::testing::error_message;
using taihu::testing::LogCapture;
using taihu::testing::TempDir;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A grey or RGB image whose pixels encode (seed, y, x, c), so that any mix-up shows.
Image pattern(int height, int width, int channels, int seed) {
  Image image{height, width, channels, {}};
  image.pixels.resize(static_cast<size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        image.pixels[(static_cast<size_t>(y) * width + x) * channels + c] =
            static_cast<uint8_t>((seed * 37 + y * 11 + x * 5 + c * 70) % 256);
  return image;
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

// train/<class>/<i>.png: `per_class` grey 6x5 images in each of `classes`.
void write_png_folder(const fs::path& dir, const std::vector<std::string>& classes, int per_class, int channels = 1) {
  int seed = 0;
  for (const auto& name : classes)
    for (int i = 0; i < per_class; ++i)
      write_bytes(dir / name / (std::to_string(i) + ".png"), encode_png(pattern(6, 5, channels, seed++)));
}

// The paths of an index's files relative to `folder`, as listed (links not resolved).
std::vector<std::string> relative_names(const ImageIndex& index, const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& file : index.files) names.push_back(file.lexically_relative(folder).string());
  return names;
}

// A config file in `folder` (relative paths resolve against it).
config::Document data_doc(const fs::path& folder, const std::string& body) {
  std::ofstream(folder / "test.ini") << "[data]\n" << body;
  return config::Document::parse_file(folder / "test.ini");
}

}  // namespace

TEST_SUITE("image data") {
  TEST_CASE("a folder of class folders: sorted classes, other files and empty classes counted") {
    TempDir dir;
    write_png_folder(dir / "train", {"b", "a"}, 2);
    fs::create_directories(dir / "train" / "c");
    std::ofstream(dir / "train" / "a" / "notes.txt") << "not an image";
    const ImageIndex index = list_image_folder(dir / "train");
    CHECK(index.classes == std::vector<std::string>{"a", "b", "c"});
    REQUIRE(index.size() == 4);
    CHECK(index.files[0].filename() == "0.png");
    CHECK(index.labels == std::vector<int32_t>{0, 0, 1, 1});
    CHECK(index.not_images == 1);
    CHECK(index.empty_classes == 1);
    // A test split maps its folders by name to the training labels.
    write_png_folder(dir / "test", {"c"}, 1);
    const ImageIndex test = list_image_folder(dir / "test", index.classes);
    CHECK(test.labels == std::vector<int32_t>{2});
    write_png_folder(dir / "odd", {"zebra"}, 1);
    CHECK(contains(error_message<DataError>([&] { list_image_folder(dir / "odd", index.classes); }), "zebra"));
    CHECK(contains(error_message<DataError>([&] { list_image_folder(dir / "missing"); }), "does not exist"));
    fs::create_directories(dir / "flat");
    CHECK(contains(error_message<DataError>([&] { list_image_folder(dir / "flat"); }), "no class folders"));
    fs::create_directories(dir / "hollow" / "x");
    CHECK(contains(error_message<DataError>([&] { list_image_folder(dir / "hollow"); }), "holds no image"));
  }

  TEST_CASE("a list file: paths with spaces, comments, labels out of range left out") {
    TempDir dir;
    const auto list = dir.write("list.txt",
                                "# path label\n"
                                "a/one image.png 1\n"
                                "\n"
                                "b/two.jpg 0\r\n"
                                "b/three.jpg 7\n"
                                "b/four.jpg x\n"
                                "nolabel\n");
    const ImageIndex index = read_image_list(list, "/data", 5);
    REQUIRE(index.size() == 2);
    CHECK(index.files[0] == fs::path("/data/a/one image.png"));
    CHECK(index.labels == std::vector<int32_t>{1, 0});
    CHECK(index.bad_lines == 3);
    CHECK(index.classes.size() == 5);
    CHECK(read_image_list(list, "/data").classes.size() == 8);  // without a limit: 0..7
    const auto empty = dir.write("empty.txt", "# nothing\n");
    CHECK(contains(error_message<DataError>([&] { read_image_list(empty, dir.path()); }), "no usable image"));
    CHECK(contains(error_message<DataError>([&] { read_image_list(dir / "nope.txt", dir.path()); }), "cannot read"));
  }

  TEST_CASE("a folder walk enters no folder twice: symlink loops and second ways are left out and counted") {
    TempDir dir;
    const fs::path train = dir / "train";
    write_png_folder(train, {"a", "b"}, 3);
    write_bytes(train / "a" / "sub" / "3.png", encode_png(pattern(6, 5, 1, 9)));
    const std::vector<std::string> listed = {"a/0.png", "a/1.png", "a/2.png", "a/sub/3.png",
                                             "b/0.png", "b/1.png", "b/2.png"};

    // A link back to the top: every class was listed again inside `a`, under a's label.
    fs::create_directory_symlink("..", train / "a" / "up");
    {
      LogCapture log;
      const ImageIndex index = list_image_folder(train);
      CHECK(index.size() == 7);
      REQUIRE(relative_names(index, train) == listed);
      CHECK(index.labels == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1});
      CHECK(index.repeated_folders == 1);
      CHECK(index.left_out() == 1);
      CHECK(log.lines_with("a/up' leads to") == 1);
    }

    // Links to the class's own folder, to a folder listed already and to the other class: left out,
    // whichever class is walked first; one to a folder outside the data: followed.
    fs::create_directory_symlink(".", train / "a" / "self");
    fs::create_directory_symlink("sub", train / "a" / "sub_again");
    fs::create_directory_symlink("../b", train / "a" / "other_class");
    fs::create_directory_symlink("../a/sub", train / "b" / "into_a");
    write_png_folder(dir / "extra", {"more"}, 2);
    fs::create_directory_symlink(dir / "extra" / "more", train / "b" / "more");
    LogCapture log;
    const ImageIndex index = list_image_folder(train);
    std::vector<std::string> expected = listed;
    expected.insert(expected.end(), {"b/more/0.png", "b/more/1.png"});
    CHECK(relative_names(index, train) == expected);
    CHECK(index.labels == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 1});
    CHECK(index.repeated_folders == 5);  // up, self, sub_again, other_class, into_a
    CHECK(log.lines_with("leads to") == 5);
  }

  TEST_CASE("a folder walk leaves out, counts and names what is neither a folder nor a regular file") {
    TempDir dir;
    const fs::path train = dir / "train";
    write_png_folder(train, {"a", "b"}, 2);
    // A link to an image is an image; whatever their names, these are not.
    fs::create_symlink(train / "a" / "0.png", train / "b" / "copy.png");
    REQUIRE(mkfifo((train / "a" / "pipe.png").c_str(), 0600) == 0);
    fs::create_symlink("nowhere.png", train / "a" / "dangling.png");
    fs::create_symlink("loop.png", train / "a" / "loop.png");
    fs::create_symlink("/dev/zero", train / "b" / "zero.jpg");
    LogCapture log;
    const ImageIndex index = list_image_folder(train);
    CHECK(relative_names(index, train) == std::vector<std::string>{"a/0.png", "a/1.png", "b/0.png", "b/1.png",
                                                                   "b/copy.png"});
    CHECK(index.labels == std::vector<int32_t>{0, 0, 1, 1, 1});
    CHECK(index.not_files == 4);
    CHECK(index.not_images == 0);
    CHECK(log.lines_with("4 entries neither a folder nor a regular file") == 1);
    CHECK(log.lines_with("pipe.png") == 1);

    TransformConfig transform;
    transform.channels = 1;
    const ImageDataset data(image_file_records(index, 1), transform, 2, "train images");
    CHECK(data.size() == 5);
    CHECK(data.left_out() == 4);
  }

  TEST_CASE("LMDB: records written are read back in key order; nothing half-written") {
    TempDir dir;
    {
      LmdbWriter writer(dir / "db");
      for (int i : {3, 1, 2}) {
        const std::string value(static_cast<size_t>(1000 * i), static_cast<char>('a' + i));
        writer.put(fmt::format("key{}", i), std::span(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
      }
      CHECK(contains(error_message<DataError>([&] {
                       const uint8_t byte = 0;
                       writer.put("key1", std::span(&byte, 1));
                     }),
                     "twice"));
      writer.finish();
    }
    CHECK(!fs::exists(dir / "db.tmp"));
    const LmdbReader reader(dir / "db");
    REQUIRE(reader.size() == 3);
    for (int64_t i = 0; i < 3; ++i) {
      CHECK(reader.key(i) == fmt::format("key{}", i + 1));
      reader.read(i, [&](std::span<const uint8_t> bytes) {
        CHECK(bytes.size() == static_cast<size_t>(1000 * (i + 1)));
        CHECK(bytes[0] == 'a' + i + 1);
      });
    }
    CHECK(contains(error_message<DataError>([&] { LmdbWriter again(dir / "db"); }), "exists already"));
    {
      LmdbWriter abandoned(dir / "partial");
      const uint8_t byte = 1;
      abandoned.put("k", std::span(&byte, 1));
    }
    CHECK(!fs::exists(dir / "partial"));
    CHECK(!fs::exists(dir / "partial.tmp"));
    CHECK(contains(error_message<DataError>([&] { LmdbReader missing(dir / "none"); }), "taihu-convert imageset"));
    fs::create_directories(dir / "plain");
    CHECK(contains(error_message<DataError>([&] { LmdbReader plain(dir / "plain"); }), "not an LMDB database"));
    const auto garbage = dir.write("garbage.mdb", std::string(8192, 'x'));
    CHECK(contains(error_message<DataError>([&] { LmdbReader bad(garbage); }), "LMDB"));
  }

  TEST_CASE("Datum: raw records hold Caffe's B, G, R planes; encoded ones the file") {
    const Image rgb = pattern(3, 4, 3, 1);
    const auto record = raw_datum(rgb, 7);
    const DatumHeader header = parse_datum_header(record);
    CHECK(header.label == 7);
    CHECK(!header.encoded);
    CHECK(header.channels == 3);
    CHECK(header.height == 3);
    CHECK(header.width == 4);
    const DatumImage back = parse_datum(record, 3);
    CHECK(back.label == 7);
    CHECK(back.image.pixels == rgb.pixels);
    // The record's first plane is blue: the third channel of the RGB image.
    const std::string as_text(record.begin(), record.end());
    std::string blue;
    for (int p = 0; p < 12; ++p) blue += static_cast<char>(rgb.pixels[static_cast<size_t>(p) * 3 + 2]);
    CHECK(as_text.find(blue) != std::string::npos);

    const auto png = encode_png(rgb);
    const DatumImage decoded = parse_datum(encoded_datum(png, 3), 3);
    CHECK(decoded.label == 3);
    CHECK(decoded.image.pixels == rgb.pixels);
    CHECK(contains(error_message<DataError>([&] { parse_datum(record, 1); }), "3 channel(s)"));
    const std::vector<uint8_t> junk{0xff, 0xff, 0xff, 0xff, 0x0f};
    CHECK(contains(error_message<DataError>([&] { parse_datum(junk, 3); }), "not a Caffe Datum"));
  }

  TEST_CASE("mean files round-trip; a wrong file is an error naming it") {
    TempDir dir;
    MeanImage mean{3, 2, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
    write_mean_file(dir / "mean.binaryproto", mean);
    const MeanImage back = read_mean_file(dir / "mean.binaryproto");
    CHECK(back.channels == 3);
    CHECK(back.height == 2);
    CHECK(back.width == 2);
    CHECK(back.values == mean.values);
    const auto junk = dir.write("junk.binaryproto", "\xff\xff\xff");
    CHECK(contains(error_message<DataError>([&] { read_mean_file(junk); }), "junk.binaryproto"));
    CHECK(contains(error_message<DataError>([&] { read_mean_file(dir / "none"); }), "cannot read"));
  }

  TEST_CASE("images from a folder: samples, labels, corrupt files skipped once and counted") {
    TempDir dir;
    write_png_folder(dir / "train", {"a", "b"}, 3);
    // A truncated PNG and a file that is no image at all.
    auto bytes = encode_png(pattern(6, 5, 1, 99));
    bytes.resize(bytes.size() / 2);
    write_bytes(dir / "train" / "a" / "9_truncated.png", bytes);
    write_bytes(dir / "train" / "b" / "9_text.png", {'h', 'e', 'l', 'l', 'o'});
    TransformConfig transform;
    transform.channels = 1;
    transform.preprocess.scale = 1.0f / 255.0f;
    const ImageDataset data(image_file_records(list_image_folder(dir / "train"), 1), transform, 2, "train images");
    REQUIRE(data.size() == 8);
    CHECK(data.sample_shape() == Shape{1, 6, 5});
    std::vector<float> out(30);
    CHECK(data.read_sample(0, out.data(), 0) == 0);
    const Image first = pattern(6, 5, 1, 0);
    for (int p = 0; p < 30; ++p) CHECK(out[p] == doctest::Approx(first.pixels[p] / 255.0f));
    CHECK(data.read_sample(3, out.data(), 0) == -1);  // a/9_truncated.png
    CHECK(data.read_sample(3, out.data(), 0) == -1);
    CHECK(data.read_sample(7, out.data(), 5) == -1);  // b/9_text.png
    CHECK(data.skipped() == 2);
    CHECK(contains(error_message<DataError>([&] { data.sample(7, out.data()); }), "9_text.png"));

    // Batches keep their size: a bad sample's row takes the next readable one.
    auto shared = std::make_shared<ImageDataset>(image_file_records(list_image_folder(dir / "train"), 1), transform, 2,
                                                 "train images");
    BatchSource source(shared, BatchOptions{.batch_size = 4, .shuffle = false});
    Tensor batch, labels;
    REQUIRE(source.next(batch, labels));
    REQUIRE(source.next(batch, labels));
    CHECK(batch.shape() == Shape{4, 1, 6, 5});
    // Rows of batch 2: positions 4, 5, 6 (b/0..2) and 7 (bad) -> position 0 (a/0).
    CHECK(labels[3] == 0.0f);
    CHECK(batch.ptr()[3 * 30] == doctest::Approx(first.pixels[0] / 255.0f));
    CHECK(shared->skipped() == 2);
  }

  TEST_CASE("LMDB images equal the folder's; labels out of range are skipped") {
    TempDir dir;
    write_png_folder(dir / "train", {"a", "b", "c"}, 2, 3);
    const ImageIndex index = list_image_folder(dir / "train");
    for (bool encoded : {false, true}) {
      CAPTURE(encoded);
      const fs::path db = dir / (encoded ? "encoded" : "raw");
      ImagesetOptions options;
      options.encoded = encoded;
      options.progress = "quiet";
      options.mean_file = encoded ? fs::path() : dir / "mean.binaryproto";
      const ImagesetResult result = write_imageset(index, db, options);
      CHECK(result.written == 6);
      CHECK(result.skipped == 0);
      CHECK(fs::exists(db / "classes.txt"));
      TransformConfig transform;
      transform.preprocess.scale = 1.0f / 255.0f;
      const ImageDataset from_db(lmdb_records(std::make_shared<LmdbReader>(db), 3), transform, 3, "db");
      const ImageDataset from_files(image_file_records(index, 3), transform, 3, "files");
      REQUIRE(from_db.size() == 6);
      std::vector<float> a(90), b(90);
      for (int64_t i = 0; i < 6; ++i) {
        CHECK(from_db.read_sample(i, a.data(), 0) == from_files.read_sample(i, b.data(), 0));
        CHECK(a == b);
      }
      // Two classes only: records of label 2 are out of range.
      const ImageDataset narrow(lmdb_records(std::make_shared<LmdbReader>(db), 3), transform, 2, "db");
      CHECK(narrow.read_sample(5, a.data(), 0) == -1);
      CHECK(narrow.skipped() == 1);
    }
    // The mean image: channel-major B, G, R averages of the six images.
    const MeanImage mean = read_mean_file(dir / "mean.binaryproto");
    REQUIRE(mean.values.size() == 90);
    double expected = 0.0;  // blue of pixel 0
    for (int seed = 0; seed < 6; ++seed) expected += pattern(6, 5, 3, seed).pixels[2];
    CHECK(mean.values[0] == doctest::Approx(expected / 6.0));
  }

  TEST_CASE("imageset: shuffled records, skipped files counted, raw sizes must agree") {
    TempDir dir;
    write_png_folder(dir / "train", {"a", "b"}, 4);
    write_bytes(dir / "train" / "a" / "bad.png", {'x'});
    ImagesetOptions options;
    options.channels = 1;
    options.shuffle = true;
    options.seed = 3;
    options.progress = "quiet";
    const ImagesetResult result = write_imageset(list_image_folder(dir / "train"), dir / "db", options);
    CHECK(result.written == 8);
    CHECK(result.skipped == 1);
    const LmdbReader reader(dir / "db");
    std::multiset<int32_t> labels;
    std::vector<int32_t> in_order;
    for (int64_t i = 0; i < reader.size(); ++i)
      reader.read(i, [&](std::span<const uint8_t> r) {
        labels.insert(parse_datum_header(r).label);
        in_order.push_back(parse_datum_header(r).label);
      });
    CHECK(labels == std::multiset<int32_t>{0, 0, 0, 0, 1, 1, 1, 1});
    CHECK(in_order != std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1});
    // A raw database of images of several sizes: the odd one is skipped; resized, all fit.
    write_bytes(dir / "mixed" / "a" / "big.png", encode_png(pattern(12, 10, 1, 5)));
    write_bytes(dir / "mixed" / "a" / "small.png", encode_png(pattern(6, 5, 1, 6)));
    CHECK(write_imageset(list_image_folder(dir / "mixed"), dir / "mixed_raw", options).skipped == 1);
    options.resize_height = 8;
    options.resize_width = 8;
    const ImagesetResult resized = write_imageset(list_image_folder(dir / "mixed"), dir / "mixed_resized", options);
    CHECK(resized.written == 2);
    CHECK(resized.height == 8);
  }

  TEST_CASE("[data] source = images and lmdb: keys, defaults, and errors naming them") {
    TempDir dir;
    write_png_folder(dir / "train", {"a", "b"}, 3, 3);
    write_png_folder(dir / "test", {"b"}, 2, 3);
    auto doc = data_doc(dir.path(), "source = images\ntrain = train\ntest = test\ncrop = 4\nmirror = true\n");
    const DataConfig config = DataConfig::read(doc, doc.section("data"));
    doc.reject_unused();
    CHECK(config.transform.crop_height == 4);
    CHECK(config.transform.crop_width == 4);
    CHECK(config.transform.mirror);
    CHECK(config.transform.channels == 3);
    const auto train = make_dataset(config, Split::train);
    const auto test = make_dataset(config, Split::test);
    CHECK(train->sample_shape() == Shape{3, 4, 4});
    CHECK(train->num_classes() == 2);
    CHECK(test->size() == 2);
    CHECK(test->label(0) == 1);  // folder "b" keeps the training label

    auto error = [&](const std::string& body) {
      return error_message<ConfigError>([&] {
        auto d = data_doc(dir.path(), body);
        DataConfig::read(d, d.section("data"));
      });
    };
    CHECK(contains(error("source = images\ntest = test\n"), "train"));
    CHECK(contains(error("source = lmdb\ntrain = a\ntest = b\n"), "classes"));
    CHECK(contains(error("source = images\ntrain = a\ntest = b\nchannels = 2\n"), "channels"));
    CHECK(contains(error("source = images\ntrain = a\ntest = b\ncrop = 1 2 3\n"), "crop"));
    CHECK(contains(error("source = images\ntrain = a\ntest = b\nresize = 0\n"), "resize"));
    CHECK(contains(error("source = images\ntrain = a\ntest = b\nmean_file = none.binaryproto\n"), "mean_file"));
    CHECK(contains(error("source = images\ntrain = a\ntest = b\nchannel_order = gbr\n"), "channel_order"));
    MeanImage grey{1, 6, 5, std::vector<float>(30, 1.0f)};
    write_mean_file(dir / "grey.binaryproto", grey);
    CHECK(contains(error("source = images\ntrain = a\ntest = b\nmean_file = grey.binaryproto\n"), "1 channel"));
    // Missing data is a DataError that names the path.
    auto missing = data_doc(dir.path(), "source = images\ntrain = nowhere\ntest = test\n");
    CHECK(contains(error_message<DataError>([&] { make_dataset(missing, missing.section("data"), Split::train); }),
                   "nowhere"));
  }

  TEST_CASE("augmentation follows the seed: repeatable, resumable, different across epochs") {
    TempDir dir;
    write_png_folder(dir / "train", {"a", "b"}, 6, 3);
    TransformConfig transform;
    transform.crop_height = 4;
    transform.crop_width = 3;
    transform.mirror = true;
    auto data = std::make_shared<ImageDataset>(image_file_records(list_image_folder(dir / "train"), 3), transform, 2,
                                               "train");
    const BatchOptions options{.batch_size = 4, .shuffle = true, .augment = true, .seed = 9};
    auto batches = [&](BatchSource& source, int count) {
      std::vector<std::vector<float>> out;
      Tensor d, l;
      while (static_cast<int>(out.size()) < count)
        if (source.next(d, l)) out.emplace_back(d.ptr(), d.ptr() + d.count());
      return out;
    };
    BatchSource a(data, options), b(data, options);
    const auto first = batches(a, 6);
    CHECK(first == batches(b, 6));
    BatchSource resumed(data, options);
    resumed.seek(1, 1);
    const auto tail = batches(resumed, 2);
    CHECK(tail[0] == first[4]);
    CHECK(tail[1] == first[5]);
    // Epoch 1 sees the same images with other crops and flips.
    BatchOptions fixed = options;
    fixed.shuffle = false;
    BatchSource ordered(data, fixed);
    const auto epochs = batches(ordered, 6);
    CHECK(epochs[0] != epochs[3]);
    BatchOptions plain = fixed;
    plain.augment = false;
    BatchSource centred(data, plain);
    const auto views = batches(centred, 6);
    CHECK(views[0] == views[3]);
  }
}
