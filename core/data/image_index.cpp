#include "core/data/image_index.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>

#include "core/common/check.hpp"

namespace taihu {

namespace fs = std::filesystem;

bool has_image_extension(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

namespace {

// Every image under `folder`, sorted by path; counts the other files.
std::vector<fs::path> images_under(const fs::path& folder, int64_t& not_images) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (has_image_extension(it->path()))
      files.push_back(it->path());
    else
      ++not_images;
  }
  require<DataError>(!ec, "cannot list '{}': {}", folder.string(), ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

void log_left_out(const ImageIndex& index, const fs::path& where) {
  if (index.not_images > 0)
    spdlog::warn("{}: {} file(s) without an image extension (.jpg, .jpeg, .png) left out", where.string(),
                 index.not_images);
  if (index.bad_lines > 0)
    spdlog::warn("{}: {} line(s) left out (malformed, or a label out of range)", where.string(), index.bad_lines);
}

}  // namespace

std::vector<std::string> image_folder_classes(const fs::path& folder) {
  std::error_code ec;
  require<DataError>(fs::is_directory(folder, ec), "image folder '{}' does not exist (or is not a folder)",
                     folder.string());
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder, ec))
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  require<DataError>(!ec, "cannot list '{}': {}", folder.string(), ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

ImageIndex list_image_folder(const fs::path& folder, const std::vector<std::string>& classes) {
  const std::vector<std::string> names = image_folder_classes(folder);
  require<DataError>(!names.empty(),
                     "image folder '{}' has no class folders: put each class's images in a folder of its own "
                     "(e.g. {}/cat/1.jpg), or give a list file of `path label` lines",
                     folder.string(), folder.string());

  ImageIndex index;
  index.classes = classes.empty() ? names : classes;
  for (const auto& name : names) {
    const auto known = std::find(index.classes.begin(), index.classes.end(), name);
    require<DataError>(known != index.classes.end(),
                       "'{}' is a class folder the training data does not have (its classes: {} folders in "
                       "sorted order, the first '{}')",
                       (folder / name).string(), index.classes.size(), index.classes.front());
    const auto label = static_cast<int32_t>(known - index.classes.begin());
    const auto files = images_under(folder / name, index.not_images);
    if (files.empty()) {
      ++index.empty_classes;
      spdlog::warn("class folder '{}' holds no image (label {} stays assigned to it)", (folder / name).string(),
                   label);
    }
    for (const auto& file : files) {
      index.files.push_back(file);
      index.labels.push_back(label);
    }
  }
  log_left_out(index, folder);
  require<DataError>(index.size() > 0, "image folder '{}' holds no image (.jpg, .jpeg or .png) in its {} class folders",
                     folder.string(), names.size());
  return index;
}

ImageIndex read_image_list(const fs::path& list, const fs::path& root, int classes) {
  std::ifstream in(list);
  require<DataError>(in.good(), "cannot read the image list '{}'", list.string());
  ImageIndex index;
  int32_t max_label = -1;
  std::string line;
  int64_t line_number = 0;
  int64_t logged = 0;
  auto bad = [&](const char* why) {
    ++index.bad_lines;
    if (logged++ < 10) spdlog::warn("{}:{}: {}: '{}'", list.string(), line_number, why, line);
  };
  while (std::getline(in, line)) {
    ++line_number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto space = line.find_last_of(" \t");
    if (space == std::string::npos || space < first) {
      bad("no label");
      continue;
    }
    const std::string_view text(line.data() + space + 1, line.size() - space - 1);
    int64_t label = -1;
    const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), label);
    if (err != std::errc() || end != text.data() + text.size()) {
      bad("the label is not an integer");
      continue;
    }
    if (label < 0 || (classes > 0 && label >= classes) || label > INT32_MAX) {
      bad("label out of range");
      continue;
    }
    std::string path = line.substr(first, space - first);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\t')) path.pop_back();
    index.files.push_back(root / path);
    index.labels.push_back(static_cast<int32_t>(label));
    max_label = std::max(max_label, static_cast<int32_t>(label));
  }
  require<DataError>(!in.bad(), "error reading the image list '{}'", list.string());
  const int count = classes > 0 ? classes : max_label + 1;
  for (int c = 0; c < count; ++c) index.classes.push_back(std::to_string(c));
  log_left_out(index, list);
  require<DataError>(index.size() > 0, "the image list '{}' names no usable image ({} line(s) left out)",
                     list.string(), index.bad_lines);
  return index;
}

}  // namespace taihu
