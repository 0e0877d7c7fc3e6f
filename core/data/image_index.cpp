#include "core/data/image_index.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <fstream>
#include <set>
#include <utility>

#include "core/common/check.hpp"

namespace taihu {

namespace fs = std::filesystem;

bool has_image_extension(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

namespace {

// The walk of a folder of class folders, which enters every folder once (by
// device and inode) however many ways lead to it: a symlink back to an
// ancestor (`ln -s .. up`) would otherwise list the whole tree again and
// again under the class it sits in, and one to another class's folder would
// list that class's images under this one's label. Each class's own tree is
// walked first, the folders reached by symlinks after all of them, so a
// folder's images keep the label of the class it really sits in; a link to
// a folder outside the data is followed. Entries that are neither folders
// nor regular files (FIFOs, sockets, devices, dangling or looping links)
// are left out and counted; a symlink to a regular file is a file.
class FolderWalk {
 public:
  FolderWalk(const fs::path& top, size_t classes) : images_(classes) { enter(top); }

  // Class `slot`'s own tree (nothing if its folder is another class's).
  void walk_class(const fs::path& folder, size_t slot) {
    if (enter(folder)) walk(folder, slot);
    else repeated(folder);
  }

  // The folders reached by symlinks, after every class's own tree.
  void follow_links() {
    while (!linked_.empty()) {
      const auto [link, slot] = linked_.front();
      linked_.pop_front();
      if (enter(link)) walk(link, slot);
      else repeated(link);
    }
  }

  // Class `slot`'s images, sorted by path.
  std::vector<fs::path>& images(size_t slot) { return images_[slot]; }

  int64_t not_images = 0;
  int64_t repeated_folders = 0;
  std::vector<std::string> not_files;  // their paths

 private:
  bool enter(const fs::path& folder) {
    struct stat info {};
    require<DataError>(::stat(folder.c_str(), &info) == 0, "cannot list '{}': {}", folder.string(),
                       std::strerror(errno));
    return entered_.emplace(info.st_dev, info.st_ino).second;
  }

  void repeated(const fs::path& folder) {
    constexpr int64_t logged = 10;
    if (++repeated_folders <= logged) {
      std::error_code ec;
      spdlog::warn("'{}' leads to '{}', a folder listed already (a symlink loop, or a second way to it): left out",
                   folder.string(), fs::canonical(folder, ec).string());
    }
    if (repeated_folders == logged) spdlog::warn("further folders listed already are left out without a warning");
  }

  void walk(const fs::path& folder, size_t slot) {
    std::vector<fs::directory_entry> entries;
    std::error_code ec;
    for (auto it = fs::directory_iterator(folder, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      entries.push_back(*it);
    require<DataError>(!ec, "cannot list '{}': {}", folder.string(), ec.message());
    std::sort(entries.begin(), entries.end());  // the same links are followed first on every run
    for (const auto& entry : entries) {
      const fs::path& path = entry.path();
      fs::file_status status = entry.symlink_status(ec);
      if (!ec && fs::is_symlink(status)) {
        status = fs::status(path, ec);  // dangling or looping: an error
        if (!ec && fs::is_directory(status)) {
          linked_.emplace_back(path, slot);
          continue;
        }
      } else if (!ec && fs::is_directory(status)) {
        if (enter(path)) walk(path, slot);
        else repeated(path);  // a bind mount of a folder above
        continue;
      }
      if (ec || !fs::is_regular_file(status)) {
        not_files.push_back(path.string());
        ec.clear();
      } else if (has_image_extension(path)) {
        images_[slot].push_back(path);
      } else {
        ++not_images;
      }
    }
  }

  std::vector<std::vector<fs::path>> images_;
  std::set<std::pair<dev_t, ino_t>> entered_;
  std::deque<std::pair<fs::path, size_t>> linked_;
};

void log_left_out(const ImageIndex& index, const fs::path& where, const std::vector<std::string>& not_files = {}) {
  if (index.not_images > 0)
    spdlog::warn("{}: {} file(s) without an image extension (.jpg, .jpeg, .png) left out", where.string(),
                 index.not_images);
  if (index.not_files > 0) {
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(not_files.size(), 3); ++i)
      names += fmt::format("{}'{}'", i > 0 ? ", " : "", not_files[i]);
    if (not_files.size() > 3) names += ", ...";
    spdlog::warn("{}: {} entr{} neither a folder nor a regular file (a FIFO, socket or device, a dangling or looping "
                 "symlink) left out: {}",
                 where.string(), index.not_files, index.not_files == 1 ? "y" : "ies", names);
  }
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
  std::vector<int32_t> labels;
  FolderWalk walk(folder, names.size());
  for (size_t slot = 0; slot < names.size(); ++slot) {
    const std::string& name = names[slot];
    const auto known = std::find(index.classes.begin(), index.classes.end(), name);
    require<DataError>(known != index.classes.end(),
                       "'{}' is a class folder the training data does not have (its classes: {} folders in "
                       "sorted order, the first '{}')",
                       (folder / name).string(), index.classes.size(), index.classes.front());
    labels.push_back(static_cast<int32_t>(known - index.classes.begin()));
    walk.walk_class(folder / name, slot);
  }
  walk.follow_links();
  index.not_images = walk.not_images;
  index.repeated_folders = walk.repeated_folders;
  index.not_files = static_cast<int64_t>(walk.not_files.size());
  for (size_t slot = 0; slot < names.size(); ++slot) {
    std::vector<fs::path>& files = walk.images(slot);
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      ++index.empty_classes;
      spdlog::warn("class folder '{}' holds no image (label {} stays assigned to it)", (folder / names[slot]).string(),
                   labels[slot]);
    }
    for (auto& file : files) {
      index.files.push_back(std::move(file));
      index.labels.push_back(labels[slot]);
    }
  }
  log_left_out(index, folder, walk.not_files);
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
