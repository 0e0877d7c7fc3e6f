// taihu-node: hosts data-parallel replicas for a coordinator started with
// `taihu-train ... nodes=K` (actors/compute/cluster.hpp).
//
//   taihu-node --coordinator=HOST:PORT --secret-file=PATH [--name=NAME] [--listen=ADDR]
//   taihu-node --config-file=node.ini            # the same keys in [node]
//
// Exit codes: see the usage text below.

#include <spdlog/spdlog.h>

#include <cstdio>

#include "actors/compute/cluster.hpp"
#include "transport/addresses.hpp"
#include "transport/cluster_secret.hpp"
#include "transport/net_error.hpp"
#include "apps/actor_system.hpp"
#include "apps/app_support.hpp"
#include "apps/version.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/common/flush_to_zero.hpp"

using namespace taihu;

namespace {

constexpr const char* usage = R"(usage: taihu-node --coordinator=HOST:PORT --secret-file=PATH [options]

Joins the coordinator that `taihu-train ... nodes=K` started, proves that it
holds the cluster secret, and hosts the replicas the coordinator places on it
until training ends.

options (or the same keys, with underscores, in [node] of --config-file):
  --coordinator=HOST:PORT  the coordinator's control port
  --secret-file=PATH       the cluster secret (the coordinator's [cluster] secret_file)
  --name=NAME              name in logs and reports (default node-PID)
  --listen=ADDR            data-plane address (default: the address this node reaches the
                           coordinator from, 127.0.0.1 for a coordinator on this host); a
                           wildcard (0.0.0.0) listens on all and tells peers that address
  --interface=NAME         listen on this network interface's address (e.g. ib0)
  --processes-on-host=N    node processes sharing this host's cores (default 1): with
                           [blas] threads = 0 each takes its share
  --join-timeout=SECONDS   how long to try reaching the coordinator (default 60)
  --heartbeat=SECONDS      control-plane heartbeat (default 1; same as the coordinator's)
  --dead-after=SECONDS     silence after which the coordinator counts as lost (default 5)
  --certificate=PEM        this node's certificate, for a cluster that uses certificates
  --key=PEM                its private key (a file only you can read)
  --ca-file=PEM            the CA certificates that peers' certificates must chain to
  --config-file=FILE       read the options from [node] of an INI file
  --log-level=LEVEL        trace, debug, info, warn, error
  --version                taihu's version, git revision, build and libraries
  -h, --help               this text

exit codes: 0 training finished; 2 bad input; 4 coordinator unreachable;
5 not admitted (wrong secret, a certificate the coordinator rejects or one that
rejects the coordinator's, another [cluster] tls, cluster full); 6 setup failed;
7 coordinator lost; 8 dropped from the cluster after a failure of its own
(including this process being stopped or starved for longer than dead_after);
9 the run failed elsewhere (the coordinator's reason is logged)
)";

// The node's options: each from its flag, else from [node] of the config file
// (read either way, so that no key counts as unknown). Throws ConfigError
// naming the flag.
compute::NodeOptions read_node_options(const app::CommandLine& cl, const config::Document& doc) {
  const config::Section& node = doc.section("node");
  auto option = [&](const char* flag, const char* key, std::string fallback) {
    std::string from_file = node.get_or<std::string>(key, fallback);  // read either way: no "unknown option"
    if (auto v = cl.flag(flag)) return *v;
    return from_file;
  };
  compute::NodeOptions o;
  const std::string coordinator = option("coordinator", "coordinator", "");
  const auto colon = coordinator.rfind(':');
  if (coordinator.empty() || colon == std::string::npos)
    throw ConfigError("taihu-node: --coordinator=HOST:PORT is required (try --help)");
  o.coordinator_host = coordinator.substr(0, colon);
  const auto port = config::parse_value<int>(coordinator.substr(colon + 1));
  if (!port || *port <= 0 || *port > 65535)
    throw ConfigError("taihu-node: --coordinator=" + coordinator + ": the port must be a number in 1..65535");
  o.coordinator_port = static_cast<std::uint16_t>(*port);
  const std::string secret_file = option("secret-file", "secret_file", "");
  if (secret_file.empty()) throw ConfigError("taihu-node: --secret-file=PATH is required (the cluster secret)");
  try {
    o.secret = transport::read_secret_file(cl.flag("secret-file") ? std::filesystem::path(secret_file)
                                                                  : doc.resolve(secret_file));
  } catch (const transport::NetError& e) {
    throw ConfigError(std::string("taihu-node: ") + e.what());
  }
  o.name = option("name", "name", "");
  o.data_listen = option("listen", "listen", o.data_listen);
  if (const std::string interface = option("interface", "interface", ""); !interface.empty())
    o.data_listen = transport::interface_address(interface);
  auto seconds = [&](const char* flag, const char* key, double fallback) {
    const std::string text = option(flag, key, "");
    if (text.empty()) return fallback;
    const auto v = config::parse_value<double>(text);
    if (!v || !(*v > 0)) throw ConfigError(std::string("taihu-node: --") + flag + " must be a positive number");
    return *v;
  };
  if (const std::string text = option("processes-on-host", "processes_on_host", ""); !text.empty()) {
    const auto n = config::parse_value<int>(text);
    if (!n || *n < 1) throw ConfigError("taihu-node: --processes-on-host must be a positive integer");
    o.processes_on_host = *n;
  }
  o.join_timeout = seconds("join-timeout", "join_timeout", o.join_timeout);
  o.heartbeat = seconds("heartbeat", "heartbeat", o.heartbeat);
  o.dead_after = seconds("dead-after", "dead_after", o.dead_after);
  const auto file = [&](const char* flag, const char* key) {
    const std::string text = option(flag, key, "");
    if (text.empty()) return text;
    return (cl.flag(flag) ? std::filesystem::path(text) : doc.resolve(text)).string();
  };
  o.certificates = {file("certificate", "certificate"), file("key", "key"), file("ca-file", "ca_file")};
  try {
    transport::check_certificates(o.certificates, {"--certificate", "--key", "--ca-file"});
  } catch (const Error& e) {
    throw ConfigError(std::string("taihu-node: ") + e.what());
  }
  // Hidden, for tests: speak another cluster protocol version, or claim another build.
  if (auto v = cl.flag("protocol-version")) o.protocol_version = config::parse_value<int>(*v).value_or(-1);
  o.build = cl.flag("build").value_or(app::build_id());
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  return app::run_app([&]() -> int {
    const auto cl = app::parse_command_line(
        argc, argv,
        {"coordinator", "secret-file", "name", "listen", "join-timeout", "heartbeat", "dead-after", "log-level",
         "protocol-version", "build", "certificate", "interface", "processes-on-host", "key", "ca-file"});
    if (cl.help) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (cl.version) {
      std::fputs(app::version_text("taihu-node").c_str(), stdout);
      return 0;
    }
    app::setup_logging(cl.flag("log-level").value_or("info"));
    const config::Document doc = app::load_config(cl);
    const compute::NodeOptions o = read_node_options(cl, doc);
    doc.reject_unused();

    // BLAS kernel now (it may re-execute this process); threads once the
    // coordinator's config arrives. Flush-to-zero as taihu-train's default,
    // before any thread starts, so that every thread inherits it.
    blas::select_kernel({}, argc, argv);
    enable_flush_to_zero();
    return app::run_node_process(o);
  });
}
