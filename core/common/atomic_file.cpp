#include "core/common/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <system_error>

#include "core/common/error.hpp"

namespace taihu {

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path temp = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw Error(fmt::format("cannot write '{}'", temp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw Error(fmt::format("cannot move '{}' into place: {}", path.string(), ec.message()));
  }
}

}  // namespace taihu
