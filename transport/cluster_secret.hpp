#pragma once
// The cluster secret: what every node and the coordinator must hold to be
// admitted on either plane. It is read from a file that, like an ssh private
// key, only its owner may read: a secret others can read is no secret, so
// such a file is refused, not warned about.

#include <filesystem>
#include <string>

namespace taihu::transport {

// Throws NetError naming the path (as `what`) and what to do when the file is
// missing, not a regular file (a directory), readable or writable by group or
// others (chmod 600), or owned by another user: the checks of a secret's or a
// private key's file.
void check_private_file(const std::filesystem::path& path, const std::string& what);

// The file's bytes without a trailing newline. Throws NetError naming the
// path and what to do when it is missing, not a regular file (a directory),
// readable or writable by group or others (chmod 600), owned by another
// user, or empty. Warns when it is shorter than 16 bytes.
std::string read_secret_file(const std::filesystem::path& path);

// A fresh secret of 32 random bytes (RAND_bytes), as 64 hex digits: for
// tests, benchmarks and launchers that make one per run.
std::string random_secret();

}  // namespace taihu::transport
