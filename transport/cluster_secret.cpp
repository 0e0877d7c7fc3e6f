#include "transport/cluster_secret.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/common/check.hpp"
#include "transport/crypto.hpp"
#include "transport/net_error.hpp"

namespace taihu::transport {

void check_private_file(const std::filesystem::path& path, const std::string& what) {
  const std::string name = path.string();
  struct stat st {};
  require<NetError>(::stat(path.c_str(), &st) == 0, "cannot read the {} '{}': {}", what, name, std::strerror(errno));
  require<NetError>(!S_ISDIR(st.st_mode), "the {} '{}' is a directory; name the file in it", what, name);
  require<NetError>(S_ISREG(st.st_mode), "the {} '{}' is not a regular file", what, name);
  require<NetError>((st.st_mode & 0077) == 0,
                    "the {} '{}' may be read or written by others (mode {:04o}); a secret must be "
                    "readable by its owner only: chmod 600 '{}'",
                    what, name, st.st_mode & 07777, name);
  require<NetError>(st.st_uid == ::geteuid() || ::geteuid() == 0,
                    "the {} '{}' belongs to another user (uid {}); a secret must be this user's own", what, name,
                    st.st_uid);
}

std::string read_secret_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  check_private_file(path, "cluster secret file");
  std::ifstream in(path, std::ios::binary);
  require<NetError>(static_cast<bool>(in), "cannot read the cluster secret file '{}': {}", name, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  require<NetError>(!secret.empty(), "the cluster secret file '{}' is empty (e.g. head -c 32 /dev/urandom | base64 > {})",
                    name, name);
  if (secret.size() < 16)
    spdlog::warn("the cluster secret in '{}' has {} bytes; 16 or more random bytes resist guessing "
                 "(head -c 32 /dev/urandom | base64)",
                 name, secret.size());
  return secret;
}

std::string random_secret() {
  std::array<std::uint8_t, 32> bytes;
  random_bytes(bytes);
  std::string out;
  out.reserve(2 * bytes.size());
  for (const std::uint8_t b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace taihu::transport
