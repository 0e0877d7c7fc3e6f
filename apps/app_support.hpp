#pragma once
// What every taihu app does on start-up: parse `--config-file=`, flags and
// `key=value` overrides, set up logging, and pick the BLAS kernel and threads.

#include <optional>
#include <functional>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace taihu::app {

struct CommandLine {
  std::optional<std::string> config_file;
  std::vector<std::string> overrides;            // "section.key=value"
  std::vector<std::pair<std::string, std::string>> flags;  // --name[=value] the app knows
  bool help = false;
  bool version = false;  // --version

  std::optional<std::string> flag(const std::string& name) const;
  bool has_flag(const std::string& name) const { return flag(name).has_value(); }
};

// Splits argv; `known_flags` are app options, everything else with '=' is a
// config override. Throws ConfigError for unknown flags.
CommandLine parse_command_line(int argc, char** argv, const std::vector<std::string>& known_flags);

// Reads the config file (or an empty one) and applies the overrides.
config::Document load_config(const CommandLine& command_line);

// spdlog to stderr; level from "--log-level" (default info).
void setup_logging(const std::string& level);

// Applies [blas] kernel and threads; may re-execute the process once so that
// OpenBLAS loads the chosen kernel.
void setup_blas(const config::Document& doc, int argc, char** argv);

// Raises the soft limit on open descriptors to the hard one (as Go's runtime
// does): a process with many peers needs more than the common default of
// 1,024, and its listeners cap strangers themselves (transport/listener.hpp).
void raise_descriptor_limit();

// Runs an app's body (after raise_descriptor_limit) and turns what it throws
// into a logged message and an exit code: 3 for a NaN/Inf loss
// (NumericError), 2 for bad input or a failed run (taihu::Error), 1 for
// anything else.
int run_app(const std::function<int()>& body);

}  // namespace taihu::app
