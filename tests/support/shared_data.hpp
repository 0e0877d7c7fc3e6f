#pragma once
// Where tests find the project's shared data (SST trees, PTB text): the
// TAIHU_DATA_DIR environment variable, else ../shared/data beside the
// repository (or beside a git worktree one level deeper). Tests that need it
// skip with a message when it is absent.

#include <cstdlib>
#include <filesystem>

namespace taihu::testing {

inline std::filesystem::path shared_data_dir() {
  if (const char* env = std::getenv("TAIHU_DATA_DIR")) return env;
  const std::filesystem::path root(TAIHU_SOURCE_DIR);
  for (const auto& candidate : {root / ".." / "shared" / "data", root / ".." / ".." / "shared" / "data"})
    if (std::filesystem::exists(candidate)) return candidate;
  return root / ".." / "shared" / "data";
}

}  // namespace taihu::testing
