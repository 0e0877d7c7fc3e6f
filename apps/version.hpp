#pragma once
// What `--version` prints: the app, taihu's version and git revision, how it
// was built, and the libraries and protocol versions it runs with (what to
// compare when two hosts' binaries disagree).

#include <string>
#include <string_view>

namespace taihu::app {

std::string version_text(std::string_view app);

// taihu's version and git revision, "0.1.0 (git 1a2b3c4d5e)": what the nodes
// of one cluster must share.
std::string build_id();

}  // namespace taihu::app
