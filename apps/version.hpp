#pragma once
// What `--version` prints: the app, taihu's version and git revision, how it
// was built, and the libraries and protocol versions it runs with (what to
// compare when two hosts' binaries disagree).

#include <string>
#include <string_view>

namespace taihu::app {

std::string version_text(std::string_view app);

}  // namespace taihu::app
