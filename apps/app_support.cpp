#include "apps/app_support.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/common/flush_to_zero.hpp"
#include "core/layers/convolution.hpp"

#include <sys/resource.h>

namespace taihu::app {

std::optional<std::string> CommandLine::flag(const std::string& name) const {
  for (const auto& [key, value] : flags)
    if (key == name) return value;
  return std::nullopt;
}

CommandLine parse_command_line(int argc, char** argv, const std::vector<std::string>& known_flags) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      cl.help = true;
      continue;
    }
    if (arg == "--version") {
      cl.version = true;
      continue;
    }
    const bool dashed = arg.rfind("--", 0) == 0;
    const std::string body = dashed ? arg.substr(2) : arg;
    const auto eq = body.find('=');
    const std::string name = body.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : body.substr(eq + 1);
    if (name == "config-file") {
      if (eq == std::string::npos) {
        require<ConfigError>(i + 1 < argc, "command line: --config-file needs a path");
        value = argv[++i];
      }
      cl.config_file = value;
    } else if (dashed && std::find(known_flags.begin(), known_flags.end(), name) != known_flags.end()) {
      cl.flags.emplace_back(name, value);
    } else if (eq != std::string::npos) {
      cl.overrides.push_back(body);
    } else {
      raise<ConfigError>("command line: unknown option '{}' (overrides are written key=value)", excerpt(arg));
    }
  }
  return cl;
}

config::Document load_config(const CommandLine& command_line) {
  config::Document doc = command_line.config_file ? config::Document::parse_file(*command_line.config_file)
                                                  : config::Document();
  for (const auto& o : command_line.overrides) doc.apply_override(o);
  return doc;
}

void setup_logging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("taihu");
  logger->set_pattern("[%H:%M:%S.%e] %^%l%$ %v");
  spdlog::set_default_logger(logger);
  const auto parsed = spdlog::level::from_str(level.empty() ? "info" : level);
  spdlog::set_level(parsed);
}

void setup_blas(const config::Document& doc, int argc, char** argv) {
  const config::Section& blas = doc.section("blas");
  blas::KernelRequest request;
  request.kernel = blas.get_or<std::string>("kernel", "auto");
  request.threads = blas.get_or<int>("threads", 0);
  if (request.threads < 0) throw blas.error("threads", "must be 0 (all cores) or positive");
  blas::select_kernel(request, argc, argv);
  if (doc.root().get_or<bool>("flush_to_zero", true)) enable_flush_to_zero();
  ConvolutionLayer::configure(doc.section("conv"));
}

void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

int run_app(const std::function<int()>& body) {
  raise_descriptor_limit();
  try {
    return body();
  } catch (const NumericError& e) {
    spdlog::error("{}", e.what());
    return 3;
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return 1;
  }
}

}  // namespace taihu::app
