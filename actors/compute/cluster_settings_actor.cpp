#include "actors/compute/cluster.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/net_error.hpp"
#include "transport/mpi_transport.hpp"

namespace taihu::compute {

ClusterSettings ClusterSettings::read(const config::Document& doc) {
  ClusterSettings s;
  const config::Section& root = doc.root();
  s.nodes = root.get_or<int>("nodes", 0);
  if (s.nodes < 0) throw root.error("nodes", "must not be negative");
  s.elastic = root.get_or<bool>("elastic", false);
  if (s.elastic && s.nodes == 0) throw root.error("elastic", "applies to remote nodes (nodes > 0) only");
  if (s.nodes == 0) {
    doc.section("cluster").mark_all_used();  // the same config also runs in one process
    return s;
  }
  const config::Section& c = doc.section("cluster");
  s.listen = c.get_or<std::string>("listen", s.listen);
  const int port = c.get_or<int>("port", 0);
  if (port < 0 || port > 65535) throw c.error("port", "must be in 0..65535");
  s.port = static_cast<std::uint16_t>(port);
  s.port_file = c.get_or<std::string>("port_file", "");
  const std::string secret_file = c.get_or<std::string>("secret_file", "");
  if (secret_file.empty())
    throw c.error("secret_file", "nodes > 0 needs a cluster secret: [cluster] secret_file = PATH (a file only you can read)");
  try {
    s.secret = transport::read_secret_file(doc.resolve(secret_file));
  } catch (const transport::NetError& e) {
    throw c.error("secret_file", e.what());
  }
  s.join_timeout = c.get_or<double>("join_timeout", s.join_timeout);
  s.heartbeat = c.get_or<double>("heartbeat", s.heartbeat);
  s.dead_after = c.get_or<double>("dead_after", s.dead_after);
  s.same_host_copy = c.get_or<bool>("same_host_copy", s.same_host_copy);
  s.poll_us = c.get_or<int>("poll_us", s.poll_us);
  if (s.poll_us < 0 || s.poll_us > 1000000) throw c.error("poll_us", "must be in 0..1000000 (microseconds)");
  s.tls = read_tls_mode(c, s.tls);
  s.transport = read_chunk_transport(c);
  if (s.transport == ChunkTransportKind::mpi && s.elastic)
    throw c.error("transport", "mpi cannot be elastic: MPI ends the job when a rank is lost (elastic = false)");
  const auto path = [&](const char* key) {
    const std::string text = c.get_or<std::string>(key, "");
    return text.empty() ? text : doc.resolve(text).string();
  };
  s.certificates = {path("certificate"), path("key"), path("ca_file")};
  try {
    transport::check_certificates(s.certificates, {"[cluster] certificate", "[cluster] key", "[cluster] ca_file"});
  } catch (const Error& e) {
    // At the first of the three that the file gives.
    const auto& g = s.certificates;
    const char* where = !g.certificate.empty() ? "certificate" : !g.key.empty() ? "key" : "ca_file";
    throw c.error(where, e.what());
  }
  if (!(s.join_timeout > 0)) throw c.error("join_timeout", "must be positive");
  if (!(s.heartbeat > 0)) throw c.error("heartbeat", "must be positive");
  if (!(s.dead_after > s.heartbeat)) throw c.error("dead_after", "must be longer than heartbeat");
  return s;
}

transport::TlsMode read_tls_mode(const config::Section& cluster, transport::TlsMode fallback) {
  const std::string name = cluster.get_or<std::string>("tls", std::string(transport::tls_mode_name(fallback)));
  if (const auto mode = transport::parse_tls_mode(name)) return *mode;
  throw cluster.error("tls", "must be between_hosts, always or off, not '" + name + "'");
}

ChunkTransportKind read_chunk_transport(const config::Section& cluster) {
  const std::string name = cluster.get_or<std::string>("transport", "taihu");
  if (name == "taihu") return ChunkTransportKind::taihu;
  if (name != "mpi") throw cluster.error("transport", "must be taihu or mpi, not '" + name + "'");
  if (!transport::mpi_built())
    throw cluster.error("transport", "mpi: this build has no MPI (install libopenmpi-dev and rebuild)");
  if (read_tls_mode(cluster, transport::TlsMode::between_hosts) == transport::TlsMode::always)
    throw cluster.error("transport", "mpi does not encrypt, and tls = always asks for every byte in TLS");
  return ChunkTransportKind::mpi;
}


}  // namespace taihu::compute
