#pragma once
// A file written whole or not at all: the bytes go to a temporary file beside
// it (NAME.tmp.PID), which is then renamed into place, so a reader, a crash or
// a kill never sees half of it. Throws Error naming the file.

#include <filesystem>
#include <string_view>

namespace taihu {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace taihu
