#pragma once
// Whole-file reads for the data readers. Gzip files are recognised by their
// magic bytes (not the name) and inflated on the fly; other files are read
// as they are.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace taihu {

// The file's (decompressed) contents. Throws DataError if it cannot be opened
// or its gzip stream is corrupted or cut short.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// The file's bytes as they are (no gzip detection), with one open: the read
// of every image file of a data set. Throws DataError saying what failed;
// the message does not repeat the path, which callers name.
std::vector<uint8_t> read_raw_file_bytes(const std::filesystem::path& path);

}  // namespace taihu
