// The simulated network and clock without actors (actors/sim/): exactness
// against the α-β-γ cost model, traffic per link against the schedules,
// contention, config errors. The same runs through the shard actors are in
// tests/actors/test_sim_actors.cpp.

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "collectives/sparse_allgather.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/cost_model.hpp"
#include "core/config/config.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using namespace taihu::simulator;
using namespace taihu::collectives;

namespace {

// sw26010.md §7.2's worked example: p = 8 in 2 supernodes of q = 4;
// β2 = 4·β1 (¼ bandwidth across), the same α on both classes.
constexpr double alpha = 2e-6, bw1 = 12e9, bw2 = 3e9, gamma_rate = 10e9;
Topology example_topology() { return Topology(8, 4, Placement::block, Link{alpha, bw1}, Link{alpha, bw2}, gamma_rate); }

std::unique_ptr<Network> tree(const std::string& text, int ranks) {
  const auto doc = config::Document::parse(text, "net.ini");
  return Network::from_config(doc.section("network"), ranks);
}

}  // namespace

TEST_SUITE("sim") {
  TEST_CASE("sw26010 §7 example, no contention: simulated times are the cost model's, bit for bit") {
    const Topology topology = example_topology();
    auto network = Network::from_topology(topology, Contention::none);
    const std::size_t n = 8 * 4096;  // floats; n bytes a multiple of 4·P
    const double bytes = 4.0 * n;

    const Schedule original = rabenseifner_allreduce(8, n);
    const Schedule aware = topology_aware_allreduce(topology, n);
    const Timing t_original = time_without_actors(original, *network);
    network->reset();
    const Timing t_aware = time_without_actors(aware, *network);

    CHECK(t_original.seconds == predict(original, topology).seconds);
    CHECK(t_aware.seconds == predict(aware, topology).seconds);
    CHECK(t_original.seconds == doctest::Approx(rabenseifner_block_formula(topology, bytes)).epsilon(1e-12));
    CHECK(t_aware.seconds == doctest::Approx(topology_aware_formula(topology, bytes)).epsilon(1e-12));
    // The table's totals: 6α + (7/8)nγ + (3/4)nβ1 + nβ2 and 6α + (7/8)nγ + (3/2)nβ1 + (1/4)nβ2.
    const double g = bytes / gamma_rate, b1 = bytes / bw1, b2 = bytes / bw2;
    CHECK(t_original.seconds == doctest::Approx(6 * alpha + 7.0 / 8 * g + 3.0 / 4 * b1 + b2).epsilon(1e-12));
    CHECK(t_aware.seconds == doctest::Approx(6 * alpha + 7.0 / 8 * g + 3.0 / 2 * b1 + 1.0 / 4 * b2).epsilon(1e-12));
    CHECK(t_aware.seconds < t_original.seconds);

    network->reset();
    const Schedule ring = ring_allreduce(8, n);
    CHECK(time_without_actors(ring, *network).seconds == predict(ring, topology).seconds);
    CHECK(predict(ring, topology).seconds == doctest::Approx(ring_formula(topology, bytes)).epsilon(1e-12));
    for (Algorithm a : {Algorithm::hierarchical, Algorithm::ring, Algorithm::rabenseifner}) {
      network->reset();
      const Schedule s = make_allreduce(a, topology, n);
      CHECK(time_without_actors(s, *network).seconds == predict(s, topology).seconds);
    }
  }

  TEST_CASE("traffic on every link equals the schedule's count, per algorithm") {
    // Two levels: groups of 4 nodes under a tapered top switch; 6 and 8 ranks.
    for (int p : {6, 8}) {
      for (const char* placement : {"block", "round_robin"}) {
        auto network = tree(std::string("[network]\nmodel = tree\ngroup_sizes = 4\nnode_bandwidth = 10e9\ntaper = 2\n") +
                                "latency = 1e-6 3e-6\nplacement = " + placement + "\n",
                            p);
        const Topology& topology = network->topology();
        const std::size_t n = 1000;
        std::vector<Schedule> schedules;
        for (Algorithm a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware, Algorithm::hierarchical}) {
          schedules.push_back(make_allreduce(a, topology, n));
        }
        schedules.push_back(sparse_allgather(packed_sizes(p, 100000, 0.01)));
        for (const Schedule& s : schedules) {
          CAPTURE(p);
          CAPTURE(placement);
          CAPTURE(name(s.algorithm));
          network->reset();
          time_without_actors(s, *network);
          std::vector<double> group_up(4, 0), group_down(4, 0);
          for (int r = 0; r < p; ++r) {
            const int node = network->node_of(r);
            CHECK(network->usage(network->find_link("node" + std::to_string(node) + ".up")).bytes ==
                  4.0 * static_cast<double>(s.elements_sent(r)));
            CHECK(network->usage(network->find_link("node" + std::to_string(node) + ".down")).bytes ==
                  4.0 * static_cast<double>(s.elements_received(r)));
            for (const Step& step : s.steps[static_cast<std::size_t>(r)]) {
              if (!step.sends()) continue;
              const int from = node / 4, to = network->node_of(step.send_to) / 4;
              if (from != to) {
                group_up[static_cast<std::size_t>(from)] += 4.0 * static_cast<double>(step.send.length);
                group_down[static_cast<std::size_t>(to)] += 4.0 * static_cast<double>(step.send.length);
              }
            }
          }
          for (int g = 0; g < 2; ++g) {
            const std::string base = "level1.group" + std::to_string(g);
            CHECK(network->usage(network->find_link(base + ".up")).bytes == group_up[static_cast<std::size_t>(g)]);
            CHECK(network->usage(network->find_link(base + ".down")).bytes == group_down[static_cast<std::size_t>(g)]);
          }
        }
      }
    }
    // The closed forms: ring sends 2(P-1)/P·n per rank, recursive doubling (total - own).
    const auto ring = ring_allreduce(8, 800);
    for (int r = 0; r < 8; ++r) CHECK(ring.elements_sent(r) == 2 * 7 * 100);
    const auto sizes = packed_sizes(8, 10000, 0.01);
    const auto doubling = recursive_doubling_allgatherv(sizes);
    std::size_t total = 0;
    for (auto c : sizes) total += c;
    for (int r = 0; r < 8; ++r) {
      CHECK(doubling.elements_received(r) == total - sizes[static_cast<std::size_t>(r)]);
      std::size_t sent = 0;  // step i sends the 2^i blocks of r's aligned group
      for (int d = 1; d < 8; d *= 2) {
        for (int q = r & ~(d - 1); q < (r & ~(d - 1)) + d; ++q) sent += sizes[static_cast<std::size_t>(q)];
      }
      CHECK(doubling.elements_sent(r) == sent);
    }
  }

  TEST_CASE("contention: two messages sharing a link take longer than one") {
    auto network = Network::from_topology(Topology::uniform(4, Link{1e-6, 10e9}), Contention::fifo);
    const double bytes = 1e6;
    const double lone = network->transmit(0, 2, bytes, 0.0);
    CHECK(lone == 0.0 + (1e-6 + bytes / 10e9));
    network->reset();
    const double first = network->transmit(0, 2, bytes, 0.0);
    const double second = network->transmit(1, 2, bytes, 0.0);  // shares node2.in
    CHECK(first == lone);
    CHECK(second == doctest::Approx(1e-6 + 2 * bytes / 10e9));
    // Disjoint links do not interfere.
    CHECK(network->transmit(3, 0, bytes, 0.0) == lone);
    // Without contention, both take the lone time.
    network->reset();
    network->set_contention(Contention::none);
    network->transmit(0, 2, bytes, 0.0);
    CHECK(network->transmit(1, 2, bytes, 0.0) == lone);

    // Through a 4:1 tapered uplink: 4 flows from one group to the other share
    // it (each alone at node speed); 1 flow does not.
    auto tapered = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 8e9\ntaper = 4\nlatency = 0\n", 8);
    double last = 0;
    for (int r = 0; r < 4; ++r) last = std::max(last, tapered->transmit(r, r + 4, bytes, 0.0));
    CHECK(last == doctest::Approx(4 * bytes / 8e9));
    tapered->reset();
    CHECK(tapered->transmit(0, 4, bytes, 0.0) == doctest::Approx(bytes / 8e9));

    // A whole collective: a ring over round-robin placed ranks sends every
    // step's messages across the tapered uplinks at once.
    auto fifo = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 8e9\ntaper = 4\nplacement = round_robin\n", 16);
    const auto s = make_allreduce(Algorithm::ring, fifo->topology(), 1 << 16);
    const double contended = time_without_actors(s, *fifo).seconds;
    fifo->reset();
    fifo->set_contention(Contention::none);
    const double free = time_without_actors(s, *fifo).seconds;
    CHECK(contended > free);
  }

  TEST_CASE("placement and routes of the tree and dragonfly models") {
    auto rr = tree("[network]\ngroup_sizes = 4 16\nnode_bandwidth = 1e9\nlatency = 1 2 3\nplacement = round_robin\n", 8);
    CHECK(rr->node_of(0) == 0);
    CHECK(rr->node_of(1) == 4);  // dealt over the 2 groups used
    CHECK(rr->node_of(2) == 1);
    CHECK(rr->topology().same_group(0, 2));
    CHECK(!rr->topology().same_group(0, 1));
    CHECK(rr->route_between(0, 2).latency == 1);
    CHECK(rr->route_between(0, 1).latency == 2);
    CHECK(rr->route_between(0, 1).hops == 4);

    auto fly = tree("[network]\nmodel = dragonfly\nnodes_per_router = 2\nrouters_per_group = 3\ngroups = 4\n"
                    "node_bandwidth = 10e9\nlocal_bandwidth = 5e9\nglobal_bandwidth = 4e9\nlatency = 1e-6\n"
                    "hop_latency = 1e-7\n",
                    24);
    CHECK(fly->route_between(0, 1).hops == 2);   // same router
    CHECK(fly->route_between(0, 2).hops == 3);   // local hop
    CHECK(fly->route_between(0, 23).hops >= 3);  // global hop
    CHECK(fly->topology().groups() == 4);
    // The global link's traffic is what crosses between its two groups.
    const auto s = ring_allreduce(24, 2400);
    time_without_actors(s, *fly);
    double crossing = 0;
    for (int r = 0; r < 24; ++r) {
      for (const Step& step : s.steps[static_cast<std::size_t>(r)]) {
        if (step.sends() && r / 6 == 0 && step.send_to / 6 == 1) crossing += 4.0 * step.send.length;
      }
    }
    CHECK(fly->usage(fly->find_link("global0-1")).bytes == crossing);

    // model = classes reads sync::Topology's keys and times as the cost model does.
    auto classes = tree("[network]\nmodel = classes\ngroup_size = 4\nplacement = round_robin\nintra_latency = 2e-6\n"
                        "intra_bandwidth = 12e9\ninter_bandwidth = 3e9\nreduce_rate = 10e9\ncontention = none\n",
                        8);
    const Topology t(8, 4, Placement::round_robin, Link{2e-6, 12e9}, Link{2e-6, 3e9}, 10e9);
    CHECK(classes->topology().same_group(0, 2));
    const auto aware = topology_aware_allreduce(classes->topology(), 8 * 512);
    CHECK(time_without_actors(aware, *classes).seconds == predict(aware, t).seconds);
  }

  TEST_CASE("random placement: distinct nodes drawn from the machine by the seed; the collectives see their groups") {
    const std::string machine = "[network]\ngroup_sizes = 4\nnodes = 64\nnode_bandwidth = 1e9\nlatency = 1 2\n"
                                "placement = random\n";
    auto a = tree(machine, 12);
    auto again = tree(machine, 12);
    auto other = tree(machine + "placement_seed = 7\n", 12);
    std::set<int> nodes;
    bool same = true, differs = false, beyond_block = false;
    for (int r = 0; r < 12; ++r) {
      nodes.insert(a->node_of(r));
      same = same && a->node_of(r) == again->node_of(r);
      differs = differs || a->node_of(r) != other->node_of(r);
      beyond_block = beyond_block || a->node_of(r) >= 12;
      CHECK(a->node_of(r) < 64);
    }
    CHECK(nodes.size() == 12);  // no node twice
    CHECK(same);                // a seed is one draw, on every platform (our own generator)
    CHECK(differs);
    CHECK(beyond_block);
    // Groups are the level-1 groups of the nodes drawn; routes follow them.
    for (int r = 0; r < 12; ++r) {
      for (int q = 0; q < 12; ++q) {
        const bool together = a->node_of(r) / 4 == a->node_of(q) / 4;
        CHECK(a->topology().same_group(r, q) == together);
        if (r != q) CHECK(a->route_between(r, q).latency == (together ? 1 : 2));
      }
    }
    CHECK(a->topology().placement() == Placement::random);
    // Every allreduce still sums: the topology-aware order over uneven groups included.
    for (Algorithm alg : {Algorithm::topology_aware, Algorithm::hierarchical, Algorithm::reduce_broadcast}) {
      CHECK(time_without_actors(make_allreduce(alg, a->topology(), 1200), *a).seconds > 0);
    }
  }

  TEST_CASE("reductions of small messages run at small_reduce_rate") {
    auto net = tree("[network]\ngroup_sizes = 2\nnode_bandwidth = 1e9\nreduce_rate = 4e9\n"
                    "small_reduce_bytes = 1000\nsmall_reduce_rate = 1e9\n",
                    2);
    CHECK(net->reduce_time(999) == 999 / 1e9);
    CHECK(net->reduce_time(1000) == 1000 / 4e9);
    CHECK(net->reduce(0, 500, 1.0) == 1.0 + 500 / 1e9);
    // A ring of 2 ranks reduces one chunk each: 400 B (small) against 4000 B (not).
    auto time = [&](std::size_t floats) { return time_without_actors(ring_allreduce(2, floats), *net).seconds; };
    const double transfer = 1e-6;  // the default latency, once per step
    CHECK(time(200) == doctest::Approx(2 * (transfer + 400 / 1e9) + 400 / 1e9));
    CHECK(time(2000) == doctest::Approx(2 * (transfer + 4000 / 1e9) + 4000 / 4e9));
  }

  TEST_CASE("the engine times only the sends an executor makes, and checks them against the steps") {
    auto network = Network::from_topology(Topology::uniform(2, Link{1e-6, 1e9}), Contention::none);
    const Schedule s = ring_allreduce(2, 100);  // rank r sends chunk r, then receives the other back
    std::vector<std::pair<int, int>> delivered;  // (to, from)
    Engine engine(*network, s.steps, {}, {nullptr, [&](int to, const Sent& m) { delivered.emplace_back(to, m.from); }});
    CHECK(engine.run() == 0);  // rank 0's first step waits for its executor's send
    const Step& first = s.steps[0][0];
    engine.offer(Sent{0, first.send_to, first.send_seq, first.send.offset, first.send.length, 7});
    CHECK(engine.run() == 1);
    CHECK(engine.now() == 0.0);
    const Step& other = s.steps[1][0];
    engine.offer(Sent{1, other.send_to, other.send_seq, other.send.offset, other.send.length, 8});
    CHECK(engine.run() == 0);  // second step: both messages were delivered at 1e-6 + 200 B / 1 GB/s
    CHECK(engine.now() == 0.0 + (1e-6 + 200 / 1e9));
    CHECK(delivered == std::vector<std::pair<int, int>>{{0, 1}, {1, 0}});
    // A send that is not the step's: the wrong range.
    const Step& second = s.steps[0][1];
    engine.offer(Sent{0, second.send_to, second.send_seq, second.send.offset + 1, second.send.length, 9});
    CHECK_THROWS_AS(engine.run(), Error);
  }

  TEST_CASE("network config errors name the file, line and key") {
    auto message = [](const std::string& text) {
      return taihu::testing::error_message<ConfigError>([&] { tree(text, 8); });
    };
    auto m = message("[network]\nmodel = tree\ngroup_sizes = 4 6\nnode_bandwidth = 1e9\n");
    CHECK(m.find("net.ini:3") != std::string::npos);
    CHECK(m.find("group_sizes") != std::string::npos);
    m = message("[network]\ngroup_sizes = 4\nnode_bandwidth = -1\n");
    CHECK(m.find("net.ini:3") != std::string::npos);
    CHECK(m.find("node_bandwidth") != std::string::npos);
    m = message("[network]\ngroup_sizes = 4\nnode_bandwidth = 1e9\nlatency = 1 2 3\n");
    CHECK(m.find("latency") != std::string::npos);
    m = message("[network]\nmodel = torus\n");
    CHECK(m.find("model") != std::string::npos);
    m = message("[network]\nmodel = dragonfly\nnodes_per_router = 1\nrouters_per_group = 2\ngroups = 1\n"
                "node_bandwidth = 1\nlocal_bandwidth = 1\nglobal_bandwidth = 1\n");
    CHECK(m.find("groups") != std::string::npos);
  }

  TEST_CASE("token-bucket links: a rested link passes its bucket at the peak rate, then the rate") {
    // Two nodes, 100 MB/s shaped, a 1 MB bucket over a 1 GB/s wire, no latency.
    auto network = tree("[network]\ngroup_sizes = 2\nnode_bandwidth = 1e8\nnode_burst = 1e6\n"
                        "node_peak_bandwidth = 1e9\nlatency = 0\n",
                        2);
    CHECK(network->link_burst(network->find_link("node0.up")) == 1e6);
    // Within what the bucket carries: at the peak, through both shapers at once.
    CHECK(network->transmit(0, 1, 5e5, 0.0) == doctest::Approx(5e5 / 1e9));
    network->reset();
    // 10 MB: the bucket drains in 1e6 / (1e9 - 1e8) s at the peak, the rest goes at the rate.
    const double drain = 1e6 / (1e9 - 1e8);
    const double first = network->transmit(0, 1, 1e7, 0.0);
    CHECK(first == doctest::Approx(drain + (1e7 - drain * 1e9) / 1e8));
    CHECK(first < 1e7 / 1e8);
    // Right after it the bucket is empty: the rate alone.
    CHECK(network->transmit(0, 1, 1e6, first) == doctest::Approx(first + 1e6 / 1e8));
    // After burst / rate = 10 ms of rest it is full again.
    const double later = first + 1e6 / 1e8 + 0.01;
    CHECK(network->transmit(0, 1, 5e5, later) == doctest::Approx(later + 5e5 / 1e9));
    // Training: links that rested 5 ms since the last collective hold half a bucket.
    network->set_idle_before(0.005);
    network->reset();
    const double half = 5e5 / (1e9 - 1e8);
    CHECK(network->transmit(0, 1, 1e6, 0.0) == doctest::Approx(half + (1e6 - half * 1e9) / 1e8));
    // A ring allreduce that fits in the buckets beats the shaped rate's time.
    auto ring = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 1e8\nnode_burst = 1e6\n"
                     "node_peak_bandwidth = 1e9\nlatency = 0\n",
                     4);
    const auto s = make_allreduce(Algorithm::ring, ring->topology(), 1 << 16);  // 256 KiB
    CHECK(time_without_actors(s, *ring).seconds == doctest::Approx(6 * 65536.0 / 1e9));
  }

  TEST_CASE("host CPUs: nodes of one host share its cores for protocol work and reductions") {
    // 4 nodes on one host; the links are fast, the stack costs 1 ns per byte at the sender.
    const std::string base = "[network]\ngroup_sizes = 4\nnode_bandwidth = 1e12\nlatency = 0\nhost_nodes = 4\n"
                             "send_cpu_rate = 1e9\n";
    auto one = tree(base + "host_cores = 1\n", 4);
    CHECK(one->models_cpu());
    CHECK(one->transmit(0, 1, 1e6, 0.0) == doctest::Approx(1e-3));
    CHECK(one->transmit(2, 3, 1e6, 0.0) == doctest::Approx(2e-3));  // waits for the one core
    auto two = tree(base + "host_cores = 2\n", 4);
    CHECK(two->transmit(0, 1, 1e6, 0.0) == doctest::Approx(1e-3));
    CHECK(two->transmit(2, 3, 1e6, 0.0) == doctest::Approx(1e-3));
    CHECK(two->transmit(1, 2, 1e6, 0.0) == doctest::Approx(2e-3));
    // Half of each core (other work on the machine): every job takes twice as long.
    auto half = tree(base + "host_cores = 2\nhost_core_share = 0.5\n", 4);
    CHECK(half->transmit(0, 1, 1e6, 0.0) == doctest::Approx(2e-3));
    // TLS adds its cost per byte at both ends: 1 ns at the sender + 1 ns, 1 ns at the receiver.
    auto tls = tree(base + "host_cores = 1\nreceive_cpu_rate = 0\ntls = on\ntls_cpu_rate = 1e9\n", 4);
    CHECK(tls->transmit(0, 1, 1e6, 0.0) == doctest::Approx(3e-3));  // 2 ms, then the receiver's 1 ms
    // One host per node: no sharing.
    auto apart = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 1e12\nlatency = 0\nhost_cores = 1\n"
                      "send_cpu_rate = 1e9\n",
                      4);
    CHECK(apart->transmit(0, 1, 1e6, 0.0) == doctest::Approx(1e-3));
    CHECK(apart->transmit(2, 3, 1e6, 0.0) == doctest::Approx(1e-3));
    // A reduction booked ahead (at its receive's arrival) leaves the core free before it.
    auto r = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 1e12\nlatency = 0\nhost_nodes = 4\n"
                  "host_cores = 1\nsend_cpu_rate = 1e9\nreduce_rate = 1e9\n",
                  4);
    CHECK(r->reduce(0, 1e6, 0.005) == doctest::Approx(0.006));
    CHECK(r->transmit(1, 2, 1e6, 0.0) == doctest::Approx(1e-3));    // fits before it
    CHECK(r->transmit(2, 3, 4.5e6, 0.0) == doctest::Approx(0.0105));  // does not: after it
    // Without host CPUs a reduction costs γ·b on the rank's clock, as before.
    auto plain = tree("[network]\ngroup_sizes = 4\nnode_bandwidth = 1e9\nreduce_rate = 1e9\n", 4);
    CHECK(!plain->models_cpu());
    CHECK(plain->reduce(0, 1e6, 0.5) == 0.5 + 1e6 / 1e9);
  }

  TEST_CASE("bucket and host-CPU config errors name the key") {
    auto message = [](const std::string& text) {
      return taihu::testing::error_message<ConfigError>([&] { tree("[network]\ngroup_sizes = 4\n" + text, 4); });
    };
    CHECK(message("node_bandwidth = 1e9\nnode_burst = 1e5\n").find("node_peak_bandwidth") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nnode_burst = 1e5\nnode_peak_bandwidth = 1e8\n").find("node_peak_bandwidth") !=
          std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nnode_burst = 1e5\nnode_peak_bandwidth = 1e10\ncontention = none\n")
              .find("node_burst") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nsend_cpu_rate = 1e9\n").find("send_cpu_rate") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nhost_cores = 2\ntls = on\n").find("tls") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nhost_cores = 2\nhost_core_share = 1.5\n").find("host_core_share") !=
          std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nhost_cores = 2\ncontention = none\n").find("host_cores") !=
          std::string::npos);
    // Random placement needs the machine, which must hold the ranks.
    CHECK(message("node_bandwidth = 1e9\nplacement = random\n").find("nodes") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nplacement = random\nnodes = 3\n").find("net.ini:5") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nplacement_seed = 3\n").find("placement_seed") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nsmall_reduce_bytes = 10\n").find("small_reduce_rate") != std::string::npos);
    CHECK(message("node_bandwidth = 1e9\nsmall_reduce_rate = 1e9\n").find("small_reduce_rate") != std::string::npos);
    const auto classes = taihu::testing::error_message<ConfigError>(
        [&] { tree("[network]\nmodel = classes\nplacement = random\n", 4); });
    CHECK(classes.find("placement") != std::string::npos);
  }
}
