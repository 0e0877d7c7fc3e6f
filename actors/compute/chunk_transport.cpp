#include "actors/compute/chunk_transport.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "actors/chunk_link/arena_allocator.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "transport/data_plane.hpp"
#include "transport/mpi_transport.hpp"
#include "transport/shared_arena.hpp"
#include "transport/tls_relay.hpp"

namespace taihu::compute {
namespace {

OpenedChunkLink open_over_mpi(int node, int nodes, std::vector<int> rank_node,
                              std::function<void(int, const std::string&)> on_lost) {
  OpenedChunkLink opened;
  opened.link = std::make_shared<transport::ChunkLink>(
      node, std::move(rank_node),
      [node, nodes](transport::FrameSink* sink) {
        return std::make_unique<transport::MpiTransport>(node, nodes, sink);
      },
      std::move(on_lost));
  opened.description = fmt::format("chunks go over MPI ({}, MPI rank {} of {}; not encrypted)",
                                   transport::mpi_library_version(), node, nodes);
  return opened;
}

OpenedChunkLink open_data_plane(const config::Section& cluster, const NodeOptions& options, int node,
                                std::vector<int> rank_node, std::function<void(int, const std::string&)> on_lost,
                                const std::string& label) {
  // The coordinator checked [cluster] (ClusterSettings::read); its defaults hold here too.
  const ClusterSettings defaults;
  const bool same_host_copy = cluster.get_or<bool>("same_host_copy", defaults.same_host_copy);
  const transport::TlsMode tls = read_tls_mode(cluster, defaults.tls);
  OpenedChunkLink opened;
  // With tls = always nothing is read in place: every byte goes through TLS.
  if (same_host_copy && tls != transport::TlsMode::always) {
    try {
      opened.allocator = std::make_shared<transport::ArenaAllocator>(transport::SharedArena::install());
    } catch (const std::exception& e) {
      spdlog::warn("{}: no shared arena ({}); peers on this host read through the kernel", label, e.what());
    }
  }
  transport::DataPlaneOptions plane;
  plane.node = node;
  plane.secret = options.secret;
  plane.listen_address = options.data_listen;
  if (!same_host_copy) plane.remote_read_min_bytes = 0;
  plane.tls = tls;
  plane.certificates = options.certificates;
  plane.poll_budget = std::chrono::microseconds(cluster.get_or<int>("poll_us", defaults.poll_us));
  opened.link =
      std::make_shared<transport::ChunkLink>(plane, std::move(rank_node), std::move(on_lost), opened.allocator);
  opened.host = options.data_advertise.empty() ? options.data_listen : options.data_advertise;
  opened.port = opened.link->port();
  opened.description =
      fmt::format("data plane on {}:{}{} (tls = {}{})", options.data_listen, opened.port,
                  opened.host == options.data_listen ? "" : fmt::format(", reached at {}", opened.host),
                  transport::tls_mode_name(tls), plane.certificates.given() ? ", certificates" : "");
  return opened;
}

}  // namespace

OpenedChunkLink open_chunk_link(const config::Section& cluster, const NodeOptions& options, int node, int nodes,
                                std::vector<int> rank_node,
                                std::function<void(int node, const std::string& reason)> on_lost,
                                const std::string& label) {
  if (std::ranges::all_of(rank_node, [node](int n) { return n == node; })) {
    OpenedChunkLink none;
    none.description = "every rank is here: no chunk leaves this process";
    return none;
  }
  switch (read_chunk_transport(cluster)) {
    case ChunkTransportKind::mpi:
      return open_over_mpi(node, nodes, std::move(rank_node), std::move(on_lost));
    case ChunkTransportKind::taihu:
      break;
  }
  return open_data_plane(cluster, options, node, std::move(rank_node), std::move(on_lost), label);
}

}  // namespace taihu::compute
