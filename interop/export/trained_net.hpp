#pragma once
// A net config with a checkpoint's parameters: what the exporters read. The
// config says what the parameters mean (which layer, which role), the
// checkpoint holds their values; they must agree on every parameter's name
// and shape, else a ConfigError names the first that differs.

#include <cstdint>
#include <filesystem>
#include <memory>

#include "core/net/net.hpp"

namespace taihu::interop {

std::unique_ptr<Net> load_trained_net(const std::filesystem::path& net_config, const std::filesystem::path& checkpoint,
                                      int64_t batch = 1);

}  // namespace taihu::interop
