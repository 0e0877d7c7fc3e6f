// The cluster secret file is refused, with what to do, unless only its owner
// can read it (finding: a file of mode 0644 was accepted with a warning, and
// a directory was reported as "empty").

#include <doctest/doctest.h>

#include <filesystem>

#include "support/error_message.hpp"
#include "support/temp_dir.hpp"
#include "transport/cluster_secret.hpp"
#include "transport/net_error.hpp"

using namespace taihu;
using namespace taihu::transport;
using taihu::testing::error_message;

namespace fs = std::filesystem;

namespace {

fs::path secret_file(const testing::TempDir& dir, const std::string& text, fs::perms perms) {
  const fs::path p = dir.write("secret", text);
  fs::permissions(p, perms);
  return p;
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("a secret only its owner can read is read without its trailing newline") {
    testing::TempDir dir;
    const fs::path p = secret_file(dir, "0123456789abcdef0123\n", fs::perms::owner_read | fs::perms::owner_write);
    CHECK(read_secret_file(p) == "0123456789abcdef0123");
    fs::permissions(p, fs::perms::owner_read);  // 0400 is fine too
    CHECK(read_secret_file(p) == "0123456789abcdef0123");
  }

  TEST_CASE("a secret others may read or write is refused, with the chmod to run") {
    testing::TempDir dir;
    for (const fs::perms extra : {fs::perms::group_read, fs::perms::others_read, fs::perms::others_write}) {
      const fs::path p = secret_file(dir, "0123456789abcdef0123", fs::perms::owner_read | fs::perms::owner_write | extra);
      const std::string message = error_message<NetError>([&] { read_secret_file(p); });
      CAPTURE(message);
      CHECK(message.find("may be read or written by others") != std::string::npos);
      CHECK(message.find("chmod 600 '" + p.string() + "'") != std::string::npos);
    }
    const fs::path p = secret_file(dir, "x", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                                 fs::perms::others_read);
    CHECK(error_message<NetError>([&] { read_secret_file(p); }).find("(mode 0644)") != std::string::npos);
  }

  TEST_CASE("a directory, a missing file and an empty file are named for what they are") {
    testing::TempDir dir;
    fs::create_directory(dir / "folder");
    CHECK(error_message<NetError>([&] { read_secret_file(dir / "folder"); }).find("is a directory") !=
          std::string::npos);
    CHECK(error_message<NetError>([&] { read_secret_file(dir / "missing"); }).find("No such file or directory") !=
          std::string::npos);
    const fs::path empty = secret_file(dir, "\n", fs::perms::owner_read | fs::perms::owner_write);
    CHECK(error_message<NetError>([&] { read_secret_file(empty); }).find("is empty") != std::string::npos);
  }
}
