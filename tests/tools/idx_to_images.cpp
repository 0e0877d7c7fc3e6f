// Writes an IDX image set (MNIST, Fashion-MNIST) out as image files, for the
// tests of the image sources: a folder of class folders and a list file of
// `path label` lines in the IDX order (so a run over the list reads the very
// samples, in the very order, that a run over the IDX files reads).
//
//   taihu_idx_to_images IMAGES LABELS OUT_DIR png|jpg [LIMIT]
//
// writes OUT_DIR/<label>/<index>.<ext> and OUT_DIR.txt.

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/data/idx.hpp"
#include "core/data/image_codec.hpp"

int main(int argc, char** argv) {
  using namespace taihu;
  namespace fs = std::filesystem;
  if (argc < 5 || (std::string(argv[4]) != "png" && std::string(argv[4]) != "jpg")) {
    std::fputs("usage: taihu_idx_to_images IMAGES LABELS OUT_DIR png|jpg [LIMIT]\n", stderr);
    return 2;
  }
  try {
    const IdxImages images = read_idx_images(argv[1]);
    const std::vector<uint8_t> labels = read_idx_labels(argv[2]);
    const fs::path out = argv[3];
    const std::string ext = argv[4];
    int64_t count = std::min<int64_t>(images.count, static_cast<int64_t>(labels.size()));
    if (argc > 5) count = std::min<int64_t>(count, std::atoll(argv[5]));
    std::ofstream list(out.string() + ".txt");
    const int64_t pixels = images.rows * images.cols;
    for (int64_t i = 0; i < count; ++i) {
      Image image{static_cast<int>(images.rows), static_cast<int>(images.cols), 1, {}};
      image.pixels.assign(images.pixels.begin() + i * pixels, images.pixels.begin() + (i + 1) * pixels);
      const auto bytes = ext == "png" ? encode_png(image) : encode_jpeg(image, 95);
      const fs::path relative = fs::path(std::to_string(labels[i])) / fmt::format("{:05d}.{}", i, ext);
      fs::create_directories(out / relative.parent_path());
      std::ofstream(out / relative, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      list << (out.filename() / relative).string() << ' ' << int(labels[i]) << '\n';
    }
    return list.flush().good() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "taihu_idx_to_images: %s\n", e.what());
    return 1;
  }
}
