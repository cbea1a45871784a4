// Tests for the cluster graph. Expected counts are worked out by hand from the presets' numbers
// (restated and checked at the top of each case), never taken from the code's output.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>

#include "input/scenario_loader.hpp"
#include "tests/test_clusters.hpp"
#include "topologies/cluster_graph.hpp"

using namespace clustersim;
using namespace clustersim::topologies;

namespace {

// The hand calculations below assume these preset values.
ClusterSpec seed_rail() {
  ClusterSpec s = load_cluster_preset("h800-128x8-rail");
  REQUIRE(s.nodes == 128);
  REQUIRE(s.gpus_per_node == 8);
  REQUIRE(s.nics_per_node == 8);
  REQUIRE(s.rail_optimized);
  REQUIRE(s.gpudirect_rdma);
  REQUIRE(s.fabric.nodes_per_leaf == 32);
  REQUIRE(s.fabric.oversubscription == 1);
  REQUIRE(s.nic_Bps == Approx(50e9));  // 400 Gb/s
  return s;
}

// A small spec built in code: 8 nodes x 4 GPUs, 4 NICs, 2 nodes per leaf.
ClusterSpec small_rail() {
  return test::test_cluster({.nodes = 8,
                             .gpus_per_node = 4,
                             .nics_per_node = 4,
                             .nic_GBps = 25,
                             .pcie_GBps = 32,
                             .nvlink_GBps = 100,
                             .nvlink_latency_us = 2,
                             .rail_optimized = true,
                             .gpudirect_rdma = true,
                             .nodes_per_leaf = 2});
}

std::set<LinkClass> classes_on(const ClusterGraph& g, const std::vector<Hop>& route) {
  std::set<LinkClass> out;
  for (const Hop& h : route) out.insert(g.link(h.link).cls);
  return out;
}

bool crosses(const ClusterGraph& g, const std::vector<Hop>& route, const std::string& name) {
  return std::any_of(route.begin(), route.end(),
                     [&](const Hop& h) { return g.link(h.link).name == name; });
}

std::size_t count_lines_containing(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE(
    "The seed cluster graph has 1024 GPUs, 128 NVSwitches, 1024 NICs and a two-level fat tree",
    "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 1024);
  CHECK(g.num_gpus() == 1024);
  CHECK(g.num_nodes() == 128);
  CHECK(g.num_nvswitches() == 128);
  CHECK(g.num_nics() == 1024);  // one per GPU
  CHECK(g.num_hosts() == 0);    // GPUDirect RDMA to the GPU's own NIC
  CHECK(g.num_rails() == 8);
  // 128 nodes / 32 per leaf = 4 groups, one leaf per rail and group: 4 x 8 = 32 leaves.
  CHECK(g.num_leaves() == 32);
  // Non-blocking 32-downlink leaf: 32 uplinks, one to each of 32 spines.
  CHECK(g.num_spines() == 32);
  CHECK(g.num_links(LinkClass::nvlink) == 1024);
  CHECK(g.num_links(LinkClass::pcie) == 1024);
  CHECK(g.num_links(LinkClass::nic) == 1024);
  CHECK(g.num_links(LinkClass::leaf_uplink) == 32 * 32);
  CHECK(g.num_links() == 4096);
  CHECK(g.num_vertices() == 1024 + 128 + 1024 + 32 + 32);
}

TEST_CASE("The seed cluster graph passes every structural check", "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 1024);
  const auto checks = check_graph(g);
  CHECK(checks.size() == 4);
  for (const auto& c : checks) {
    INFO(c.name << ": " << (c.problems.empty() ? "" : c.problems.front()));
    CHECK(c.passed);
  }
  CHECK(all_passed(checks));
}

TEST_CASE("Links carry stable unique names and the bandwidths of the spec", "[topologies]") {
  const ClusterSpec spec = seed_rail();
  const ClusterGraph g = ClusterGraph::build(spec, 1024);
  std::set<std::string> names;
  for (const Link& l : g.links()) names.insert(l.name);
  CHECK(names.size() == g.links().size());

  const auto nv = g.find_link("node3/gpu5-nvlink");
  REQUIRE(nv);
  CHECK(g.link(*nv).cls == LinkClass::nvlink);
  CHECK(g.link(*nv).bandwidth_Bps == Approx(spec.nvlink_Bps));
  CHECK(g.vertex(g.link(*nv).a).name == "node3/gpu5");
  CHECK(g.vertex(g.link(*nv).b).name == "node3/nvswitch");

  const auto nic = g.find_link("node3/nic5-leaf");
  REQUIRE(nic);
  CHECK(g.link(*nic).cls == LinkClass::nic);
  CHECK(g.link(*nic).bandwidth_Bps == Approx(50e9));
  // Node 3 is in group 0; rail 5 -> leaf 0 * 8 + 5.
  CHECK(g.vertex(g.link(*nic).b).name == "leaf5");

  const auto up = g.find_link("leaf2-spine1");
  REQUIRE(up);
  CHECK(g.link(*up).cls == LinkClass::leaf_uplink);
  // Leaf uplink capacity = 32 x 50 GB/s over 32 spines = 50 GB/s per link.
  CHECK(g.link(*up).bandwidth_Bps == Approx(50e9));
  CHECK_FALSE(g.find_link("node999/gpu0-nvlink"));
}

TEST_CASE("Oversubscription 2 halves the leaf uplink capacity", "[topologies]") {
  ClusterSpec spec = seed_rail();
  const ClusterGraph full = ClusterGraph::build(spec, 1024);
  spec.fabric.oversubscription = 2;
  const ClusterGraph half = ClusterGraph::build(spec, 1024);

  // Downlinks: 32 nodes x 1 NIC of the rail x 50 GB/s = 1.6 TB/s per leaf, in both cases.
  CHECK(full.leaf_downlink_Bps() == Approx(1.6e12));
  CHECK(half.leaf_downlink_Bps() == Approx(1.6e12));
  CHECK(full.leaf_uplink_Bps() == Approx(1.6e12));
  CHECK(half.leaf_uplink_Bps() == Approx(0.8e12));
  CHECK(half.num_spines() == 16);

  // Sum of the actual uplink links of leaf 0.
  const auto uplink_sum = [](const ClusterGraph& g) {
    double sum = 0;
    for (const Link& l : g.links()) {
      if (l.cls == LinkClass::leaf_uplink && g.vertex(l.a).name == "leaf0") sum += l.bandwidth_Bps;
    }
    return sum;
  };
  CHECK(uplink_sum(full) == Approx(1.6e12));
  CHECK(uplink_sum(half) == Approx(0.8e12));
  // Bisection: 64 nodes x 8 NICs x 50 GB/s = 25.6 TB/s; the uplinks of 2 groups x 8 rails of
  // leaves carry 16 x 1.6 = 25.6 TB/s non-blocking, 12.8 TB/s at 2:1.
  CHECK(full.bisection_Bps() == Approx(25.6e12));
  CHECK(half.bisection_Bps() == Approx(12.8e12));
}

TEST_CASE("Routes inside a node stay on NVLink", "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 1024);
  const int a = 3 * 8 + 1;  // node 3, GPU 1
  const int b = 3 * 8 + 6;  // node 3, GPU 6
  const auto r = g.route(a, b);
  REQUIRE(r.size() == 2);
  CHECK(classes_on(g, r) == std::set<LinkClass>{LinkClass::nvlink});
  CHECK(g.link(r[0].link).name == "node3/gpu1-nvlink");
  CHECK(r[0].dir == Direction::up);
  CHECK(g.link(r[1].link).name == "node3/gpu6-nvlink");
  CHECK(r[1].dir == Direction::down);
  CHECK(g.route(a, a).empty());
  // 3.33 us GPU to GPU through the NVSwitch (preset nvlink_latency_us).
  CHECK(g.route_latency_s(r) == Approx(3.33e-6));
}

TEST_CASE("Routes across nodes on one rail cross the spine only between leaves", "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 1024);
  SECTION("same leaf: GPU -> NIC -> leaf -> NIC -> GPU") {
    const int a = 0 * 8 + 3;  // node 0, GPU 3
    const int b = 1 * 8 + 3;  // node 1, GPU 3: same group 0, same rail 3
    const auto r = g.route(a, b);
    REQUIRE(r.size() == 4);
    CHECK(classes_on(g, r) == std::set<LinkClass>{LinkClass::pcie, LinkClass::nic});
    CHECK(g.link(r[0].link).name == "node0/gpu3-pcie");
    CHECK(g.link(r[1].link).name == "node0/nic3-leaf");
    CHECK(g.link(r[2].link).name == "node1/nic3-leaf");
    CHECK(g.link(r[3].link).name == "node1/gpu3-pcie");
    // Network links carry no latency: NCCL's cost model counts the network's (NET hwLat).
    CHECK(g.route_latency_s(r) == 0);
    // Bottleneck: the 50 GB/s NIC.
    CHECK(g.route_bandwidth_Bps(r) == Approx(50e9));
  }
  SECTION("different leaves: through one spine chosen by ECMP") {
    const int a = 0 * 8 + 3;   // node 0: group 0
    const int b = 40 * 8 + 3;  // node 40: group 1
    const auto r = g.route(a, b);
    REQUIRE(r.size() == 6);
    CHECK(classes_on(g, r).count(LinkClass::leaf_uplink) == 1);
    CHECK(classes_on(g, r).count(LinkClass::nvlink) == 0);
    const int spine = g.ecmp_spine(a, b);
    CHECK(g.link(r[2].link).name == "leaf3-spine" + std::to_string(spine));
    CHECK(g.link(r[3].link).name == "leaf11-spine" + std::to_string(spine));  // group 1, rail 3
    CHECK(r[2].dir == Direction::up);
    CHECK(r[3].dir == Direction::down);
    // No latency on network links here either: NCCL's model has one NET latency per step.
    CHECK(g.route_latency_s(r) == 0);
    // Deterministic: the same pair always takes the same spine.
    CHECK(g.route(a, b) == r);
  }
  SECTION("ECMP spreads pairs over the spines") {
    std::set<int> used;
    for (int a = 0; a < 8 * 32; a += 8) used.insert(g.ecmp_spine(a, a + 8 * 64));
    CHECK(used.size() > 16);
  }
  SECTION("another rail: NVLink to the GPU that owns the rail's NIC first (PXN)") {
    const int a = 0 * 8 + 0;  // node 0, GPU 0
    const int b = 1 * 8 + 5;  // node 1, GPU 5: rail 5
    const auto r = g.route(a, b);
    CHECK(crosses(g, r, "node0/gpu0-nvlink"));
    CHECK(crosses(g, r, "node0/gpu5-nvlink"));
    CHECK(crosses(g, r, "node0/nic5-leaf"));
    CHECK(crosses(g, r, "node1/nic5-leaf"));
    CHECK(classes_on(g, r).count(LinkClass::leaf_uplink) == 0);
  }
}

TEST_CASE("With one NIC per node the route goes GPU -> PCIe -> host -> NIC", "[topologies]") {
  const ClusterSpec spec = load_cluster_preset("h800-128x8-seed-as-written");
  REQUIRE(spec.nics_per_node == 1);
  REQUIRE_FALSE(spec.rail_optimized);
  REQUIRE(spec.fabric.nodes_per_leaf == 32);
  const ClusterGraph g = ClusterGraph::build(spec, 1024);
  CHECK(g.num_nics() == 128);
  CHECK(g.num_hosts() == 128);
  CHECK(g.num_leaves() == 4);  // 128 / 32 nodes per leaf, no rails
  CHECK(g.num_spines() == 32);
  CHECK(g.num_links(LinkClass::pcie) == 1024 + 128);
  CHECK(g.num_links(LinkClass::nic) == 128);
  CHECK(g.num_links(LinkClass::leaf_uplink) == 4 * 32);
  CHECK(all_passed(check_graph(g)));
  // Every GPU of a node shares the node's NIC: 50 GB/s / 8 GPUs.
  CHECK(g.net_Bps_per_gpu() == Approx(50e9 / 8));

  const auto r = g.route(2, 8 + 7);  // node 0 GPU 2 -> node 1 GPU 7
  REQUIRE(r.size() == 6);
  CHECK(g.link(r[0].link).name == "node0/gpu2-pcie");
  CHECK(g.link(r[1].link).name == "node0/nic0-pcie");
  CHECK(g.link(r[2].link).name == "node0/nic0-leaf");
  CHECK(g.link(r[3].link).name == "node1/nic0-leaf");
  CHECK(g.link(r[4].link).name == "node1/nic0-pcie");
  CHECK(g.link(r[5].link).name == "node1/gpu7-pcie");
  // 64 nodes x 1 NIC x 50 GB/s.
  CHECK(g.bisection_Bps() == Approx(3.2e12));
}

TEST_CASE("Only the GPUs the scenario uses are built", "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 64);
  CHECK(g.num_gpus() == 64);
  CHECK(g.num_nodes() == 8);
  CHECK(g.num_nics() == 64);
  CHECK(g.num_leaves() == 8);   // one group, 8 rails
  CHECK(g.num_spines() == 32);  // more than one leaf: spines join the rails
  CHECK(all_passed(check_graph(g)));

  SECTION("a partly filled last node keeps the graph whole") {
    const ClusterGraph p = ClusterGraph::build(small_rail(), 14);  // 3 full nodes + 2 GPUs
    CHECK(p.num_nodes() == 4);
    CHECK(p.num_nics() == 14);
    const auto checks = check_graph(p);
    for (const auto& c : checks) {
      INFO(c.name << ": " << (c.problems.empty() ? "" : c.problems.front()));
      CHECK(c.passed);
    }
    // GPU 0 of node 3 to rail 3 of node 0: node 3 has no GPU 3, so leave on rail 0 and cross
    // rails at the spine.
    const auto r = p.route(12, 3);
    CHECK(crosses(p, r, "node3/nic0-leaf"));
    CHECK(crosses(p, r, "node0/nic3-leaf"));
  }
}

TEST_CASE("Bad cluster specs are rejected naming the parameter", "[topologies]") {
  ClusterSpec s = small_rail();
  CHECK_THROWS_WITH(ClusterGraph::build(s, 0), Catch::Contains("gpus"));
  CHECK_THROWS_WITH(ClusterGraph::build(s, 33), Catch::Contains("gpus"));
  s.fabric.nodes_per_leaf = 0;
  CHECK_THROWS_WITH(ClusterGraph::build(s, 32), Catch::Contains("nodes_per_leaf"));
  s = small_rail();
  s.nics_per_node = 5;
  CHECK_THROWS_WITH(ClusterGraph::build(s, 32), Catch::Contains("nics_per_node"));
  s = small_rail();
  s.fabric.oversubscription = 0;
  CHECK_THROWS_WITH(ClusterGraph::build(s, 32), Catch::Contains("oversubscription"));
}

TEST_CASE("DOT output of the seed cluster holds every GPU and every link", "[topologies]") {
  const ClusterGraph g = ClusterGraph::build(seed_rail(), 1024);
  const std::string dot = to_dot(g);
  CHECK(dot.rfind("graph ", 0) == 0);
  CHECK(count_lines_containing(dot, "kind=\"gpu\"") == 1024);
  CHECK(count_lines_containing(dot, "kind=\"nic\"") == 1024);
  CHECK(count_lines_containing(dot, " -- ") == 4096);
  CHECK(dot.find("label=\"node3/gpu5-nvlink\"") != std::string::npos);
  CHECK(dot.find("label=\"leaf2-spine1\"") != std::string::npos);
}

TEST_CASE("The 16384-GPU cluster builds with the expected counts", "[topologies]") {
  const ClusterSpec spec = load_cluster_preset("h100-2048x8-rail");
  REQUIRE(spec.nodes == 2048);
  REQUIRE(spec.nics_per_node == 8);
  REQUIRE(spec.fabric.nodes_per_leaf == 32);
  REQUIRE(spec.fabric.oversubscription == 1);
  const ClusterGraph g = ClusterGraph::build(spec, 16384);
  CHECK(g.num_gpus() == 16384);
  CHECK(g.num_nvswitches() == 2048);
  CHECK(g.num_nics() == 16384);
  CHECK(g.num_leaves() == 8 * 64);  // 2048 / 32 groups x 8 rails
  CHECK(g.num_spines() == 32);
  CHECK(g.num_links(LinkClass::leaf_uplink) == 512 * 32);
  CHECK(g.num_links() == 3 * 16384 + 512 * 32);
  CHECK(all_passed(check_graph(g)));
}
