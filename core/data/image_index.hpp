#pragma once
// The images of a data set and their labels, listed without reading them:
// either a folder of class folders (as torchvision's ImageFolder: the class
// names sorted give labels 0, 1, ...) or a list file of `path label` lines
// (as Caffe's convert_imageset and ImageData layer take). Listing touches
// only directories and the list, so every rank of a large run lists the whole
// set cheaply and then reads only its own share of each epoch.
//
// What cannot be used is counted and logged, not fatal: files that are not
// images by name, entries that are not regular files, folders reached a
// second time through a symlink, empty class folders, list lines whose label
// is out of range. What leaves nothing to read is an error naming the path.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace taihu {

struct ImageIndex {
  std::vector<std::filesystem::path> files;
  std::vector<int32_t> labels;       // one per file
  std::vector<std::string> classes;  // label -> name (folders); list files: "0", "1", ...
  // Left out while listing, and why.
  int64_t not_images = 0;     // files without an image extension (.jpg .jpeg .png, any case)
  int64_t empty_classes = 0;  // class folders without an image
  int64_t bad_lines = 0;      // list lines that are malformed or whose label is out of range
  // Folders: entries that are neither folders nor regular files (FIFOs,
  // sockets, devices, dangling or looping symlinks), and folders reached
  // again through a symlink (a loop, or a second way to a folder), which are
  // not listed twice.
  int64_t not_files = 0;
  int64_t repeated_folders = 0;

  int64_t left_out() const { return not_images + empty_classes + bad_lines + not_files + repeated_folders; }

  int64_t size() const { return static_cast<int64_t>(files.size()); }
};

// A folder of class folders. `classes` empty: the sub-folders' names, sorted;
// given (the training split's, for a test split): names map to those labels,
// and a folder of another name is an error naming it. Files in each class
// folder are sorted by name, recursively; symlinks are followed, but no
// folder is entered twice. Throws DataError if `folder` does not exist, has
// no class folder, or holds no image at all.
ImageIndex list_image_folder(const std::filesystem::path& folder, const std::vector<std::string>& classes = {});

// A list file: one `relative/path.jpg label` per line (the path may contain
// spaces: the label is the last field), relative to `root`; blank lines and
// lines starting with '#' are skipped. `classes` > 0: labels must lie in
// [0, classes); 0: any non-negative label, and the classes are 0..max label.
// Throws DataError if the file cannot be read or lists no usable image.
ImageIndex read_image_list(const std::filesystem::path& list, const std::filesystem::path& root, int classes = 0);

// The class names of a folder of class folders: its sub-folders, sorted.
std::vector<std::string> image_folder_classes(const std::filesystem::path& folder);

// Whether a file name has an image extension.
bool has_image_extension(const std::filesystem::path& file);

}  // namespace taihu
