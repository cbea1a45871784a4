// The SimGrid engine: collectives as flows against closed forms, max-min sharing, granularities,
// NCCL settings, faults, statistics, and a published nccl-tests table. Every simulation runs in
// a child process (SimGrid 3.32: one engine per process, sim/README.md); the parent checks the
// numbers the child sends back. Expected values come from hand formulas over the test cluster's
// link speeds, NCCL's latency table, or the published table; never from earlier runs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim_test_support.hpp"
#include "validation/calibration.hpp"

using namespace clustersim;
using namespace clustersim::nccl;
using namespace clustersim::sim;
using namespace clustersim::sim::testing;

namespace {

double ring_bw_term(double bytes, int n, double bw_Bps) {
  return 2.0 * (n - 1) / n * bytes / bw_Bps;
}

}  // namespace

TEST_CASE("An uncontended ring all-reduce takes the alpha-beta closed form within 1%",
          "[sim][ring]") {
  // One GPU per node, GPU -> PCIe (20 GB/s) -> host -> PCIe -> NIC (50 GB/s): PCIe is the
  // bottleneck by construction, below NCCL's own ring bandwidth for a 50 GB/s NIC.
  const auto spec = test_cluster({.nodes = 8, .gpus_per_node = 1, .pcie_GBps = 20});
  const auto graph = topologies::ClusterGraph::build(spec, 8);
  const double B = 20e9;
  const int n = GENERATE(2, 4, 8);
  const std::vector<double> sizes = {1 * MiB, 64 * MiB, 1 * GiB};
  const auto times = run_isolated_numbers([&] {
    SimulationOptions o;
    o.nccl = ring_simple();
    std::vector<CollectiveRequest> rs;
    for (double s : sizes) rs.push_back(allreduce(gpu_range(0, n), s));
    std::vector<double> t;
    for (const auto& r : simulate_collectives(graph, rs, o)) t.push_back(r.time_s());
    return t;
  });
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double L = ring_simple_latency_s(graph, n, n, sizes[i]);
    // ring_allreduce_alpha_beta_s: 2(n-1)/n * S / B + 2(n-1) * alpha, alpha = L / (2(n-1)).
    const double expected = ring_allreduce_alpha_beta_s(sizes[i], n, B, L / (2.0 * (n - 1)));
    INFO("n=" << n << " bytes=" << sizes[i] << " expected " << expected << " got " << times[i]);
    CHECK(times[i] == Approx(expected).epsilon(0.01));
  }
}

TEST_CASE("Bus bandwidth approaches the bottleneck link at large sizes and never exceeds it",
          "[sim][ring]") {
  const auto spec = test_cluster({.nodes = 8, .gpus_per_node = 1, .pcie_GBps = 20});
  const auto graph = topologies::ClusterGraph::build(spec, 8);
  const double B = 20e9;
  std::vector<double> sizes;
  for (double s = 64 * KiB; s <= 4 * GiB; s *= 8) sizes.push_back(s);
  const auto busbw = run_isolated_numbers([&] {
    SimulationOptions o;
    o.nccl = ring_simple();
    std::vector<CollectiveRequest> rs;
    for (double s : sizes) rs.push_back(allreduce(gpu_range(0, 8), s));
    std::vector<double> b;
    for (const auto& r : simulate_collectives(graph, rs, o)) b.push_back(r.bus_bw_Bps());
    return b;
  });
  for (double b : busbw) CHECK(b <= B * (1 + 1e-9));
  CHECK(busbw.back() >= 0.99 * B);
  for (std::size_t i = 1; i < busbw.size(); ++i) CHECK(busbw[i] >= busbw[i - 1]);
}

TEST_CASE(
    "Two all-reduces sharing NICs each slow down as max-min sharing predicts, and on disjoint "
    "rails they do not",
    "[sim][contention]") {
  const double S = 1 * GiB;
  const int nodes = 4;
  SECTION("one NIC per node shared by both rings: each gets half of 50 GB/s") {
    const auto spec = test_cluster({.nodes = nodes, .gpus_per_node = 2});
    const auto graph = topologies::ClusterGraph::build(spec, 8);
    const auto t = run_isolated_numbers([&] {
      SimulationOptions o;
      o.nccl = ring_simple();
      Simulation sim(graph, o);
      std::vector<double> out(3);
      sim.spawn(0, "driver", [&] {
        out[0] = sim.collective(allreduce(gpu_range(0, nodes, 2), S)).time_s();  // alone
        auto a = sim.start_collective(allreduce(gpu_range(0, nodes, 2), S));
        auto b = sim.start_collective(allreduce(gpu_range(1, nodes, 2), S));
        out[1] = sim.wait(a).time_s();
        out[2] = sim.wait(b).time_s();
      });
      sim.run();
      return out;
    });
    const double L = ring_simple_latency_s(graph, nodes, nodes, S);
    // Max-min: the two rings' flows through each NIC direction get 25 GB/s each.
    const double shared = L + ring_bw_term(S, nodes, 25e9);
    CHECK(t[1] == Approx(shared).epsilon(0.01));
    CHECK(t[2] == Approx(shared).epsilon(0.01));
    CHECK(t[1] > 1.9 * (t[0] - L) + L * 0.99);  // alone at least twice as fast (bandwidth part)
  }
  SECTION("rail-optimized: one NIC per GPU, the two rings use different rails") {
    const auto spec = test_cluster({.nodes = nodes,
                                    .gpus_per_node = 2,
                                    .nics_per_node = 2,
                                    .rail_optimized = true,
                                    .gpudirect_rdma = true});
    const auto graph = topologies::ClusterGraph::build(spec, 8);
    const auto t = run_isolated_numbers([&] {
      SimulationOptions o;
      o.nccl = ring_simple();
      Simulation sim(graph, o);
      std::vector<double> out(3);
      sim.spawn(0, "driver", [&] {
        out[0] = sim.collective(allreduce(gpu_range(0, nodes, 2), S)).time_s();
        auto a = sim.start_collective(allreduce(gpu_range(0, nodes, 2), S));
        auto b = sim.start_collective(allreduce(gpu_range(1, nodes, 2), S));
        out[1] = sim.wait(a).time_s();
        out[2] = sim.wait(b).time_s();
      });
      sim.run();
      return out;
    });
    CHECK(t[1] == Approx(t[0]).epsilon(1e-6));
    CHECK(t[2] == Approx(t[0]).epsilon(1e-6));
  }
}

TEST_CASE(
    "Bulk and step granularities agree within 3% when nothing competes (broadcast and "
    "reduce chains: within a factor 2, see sim/README.md)",
    "[sim][slow]") {
  const auto spec = load_cluster_preset("h800-128x8-rail");
  const auto graph = topologies::ClusterGraph::build(spec, 32);
  std::vector<CollectiveRequest> rs;
  auto add = [&](CollectiveOp op, std::vector<int> gpus, double bytes,
                 std::optional<Algorithm> algo = std::nullopt) {
    CollectiveRequest r;
    r.op = op;
    r.gpus = std::move(gpus);
    r.bytes = bytes;
    r.algorithm = algo;
    rs.push_back(r);
  };
  for (double s : {256 * KiB, 16 * MiB, 256 * MiB}) {
    add(CollectiveOp::all_reduce, gpu_range(0, 32), s);  // NCCL's choice
    add(CollectiveOp::all_reduce, gpu_range(0, 32), s, Algorithm::ring);
    add(CollectiveOp::all_reduce, gpu_range(0, 32), s, Algorithm::tree);
    add(CollectiveOp::all_reduce, gpu_range(0, 8), s, Algorithm::nvls);
    add(CollectiveOp::all_reduce, gpu_range(0, 32), s, Algorithm::hierarchical);
    add(CollectiveOp::all_reduce, gpu_range(0, 4, 8), s);  // one GPU per node
    add(CollectiveOp::all_gather, gpu_range(0, 16), s);
    add(CollectiveOp::reduce_scatter, gpu_range(0, 16), s);
    add(CollectiveOp::broadcast, gpu_range(0, 16), s);
    add(CollectiveOp::reduce, gpu_range(0, 16), s);
    add(CollectiveOp::all_to_all, gpu_range(0, 16), s);
  }
  auto run = [&](Granularity g) {
    return run_isolated_numbers([&] {
      SimulationOptions o;
      o.granularity = g;
      std::vector<double> t;
      for (const auto& r : simulate_collectives(graph, rs, o)) t.push_back(r.time_s());
      return t;
    });
  };
  const auto bulk = run(Granularity::bulk);
  const auto step = run(Granularity::step);
  REQUIRE(bulk.size() == rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) {
    INFO("request " << i << " op " << to_string(rs[i].op) << " bytes " << rs[i].bytes << " bulk "
                    << bulk[i] << " step " << step[i]);
    const bool chain = rs[i].op == CollectiveOp::broadcast || rs[i].op == CollectiveOp::reduce;
    if (chain) {
      // A chain's chunk pipeline has a fill that bulk flows only estimate (sim/README.md).
      CHECK(step[i] <= 2 * bulk[i]);
      CHECK(bulk[i] <= 2 * step[i]);
    } else {
      CHECK(std::abs(step[i] - bulk[i]) <= 0.03 * bulk[i]);
    }
  }
}

TEST_CASE("Under contention the granularities differ and the API reports by how much",
          "[sim][contention]") {
  // Two rings sharing NICs, of different sizes: in bulk the small ring's flows end early and
  // leave the NIC to the big one; in step granularity both progress step by step.
  const auto spec = test_cluster({.nodes = 4, .gpus_per_node = 2});
  const auto graph = topologies::ClusterGraph::build(spec, 8);
  std::vector<CollectiveRequest> rs = {allreduce(gpu_range(0, 4, 2), 256 * MiB),
                                       allreduce(gpu_range(1, 4, 2), 64 * MiB)};
  SimulationOptions o;
  o.nccl = ring_simple();
  const GranularityGap gap = compare_granularities(graph, rs, o);
  REQUIRE(gap.bulk_s.size() == 2);
  REQUIRE(gap.step_s.size() == 2);
  CHECK(gap.max_relative_gap >= 0);
  CHECK(gap.max_relative_gap < 0.5);
  for (std::size_t i = 0; i < 2; ++i) CHECK(gap.bulk_s[i] > 0);
}

// NVLink SHARP needs a Hopper or later GPU and NVSwitch (NCCL's nvls.cc checks compute
// capability 9.0): the A100 cluster's preset says "ampere", the H800's "hopper".
TEST_CASE("NCCL uses NVLink SHARP on Hopper clusters and never on A100 ones", "[sim][nccl]") {
  auto algos = [](const std::string& cluster) {
    const auto spec = load_cluster_preset(cluster);
    const auto graph = topologies::ClusterGraph::build(spec, 64);
    return run_isolated_numbers([&] {
      Simulation sim(graph, SimulationOptions{});
      std::vector<double> a;
      for (double s : {1 * MiB, 64 * MiB, 1 * GiB}) {
        for (int n : {8, 64}) {
          a.push_back(static_cast<double>(sim.plan(allreduce(gpu_range(0, n), s)).algorithm));
        }
      }
      return a;
    });
  };
  auto is_nvls = [](double a) {
    return a == static_cast<double>(Algorithm::nvls) ||
           a == static_cast<double>(Algorithm::nvls_tree);
  };
  const auto hopper = algos("h800-128x8-rail");
  const auto ampere = algos("dgx-a100-sc21");
  CHECK(std::any_of(hopper.begin(), hopper.end(), is_nvls));
  CHECK(std::none_of(ampere.begin(), ampere.end(), is_nvls));
}

TEST_CASE("NCCL_ALGO=Ring forces the ring where NCCL's model would pick another algorithm",
          "[sim][nccl]") {
  const auto spec = load_cluster_preset("h800-128x8-rail");
  const auto graph = topologies::ClusterGraph::build(spec, 1024);
  const std::vector<double> sizes = {8, 64 * KiB, 1 * MiB, 64 * MiB, 1 * GiB};
  auto algos = [&](bool force) {
    return run_isolated_numbers([&] {
      SimulationOptions o;
      if (force) o.nccl.algos = {NcclAlgo::ring};
      Simulation sim(graph, o);
      std::vector<double> a;
      for (double s : sizes) {
        a.push_back(static_cast<double>(sim.plan(allreduce(gpu_range(0, 1024), s)).algorithm));
      }
      return a;
    });
  };
  const auto free_choice = algos(false);
  const auto forced = algos(true);
  bool model_prefers_other = false;
  for (double a : free_choice) model_prefers_other |= a != static_cast<double>(Algorithm::ring);
  CHECK(model_prefers_other);
  for (double a : forced) CHECK(a == static_cast<double>(Algorithm::ring));
}

TEST_CASE(
    "The simulated 8-GPU DGX H100 all-reduce is within the stated tolerance of the "
    "published nccl-tests table",
    "[sim][validation]") {
  // NVIDIA/dgxc-benchmarking nccl/README.md @46e4201 (docs/microbenchmarks.md#nccl-tests),
  // out-of-place time (us).
  const std::vector<std::pair<double, double>> published = {{64 * KiB, 19.54}, {1 * MiB, 27.37},
                                                            {16 * MiB, 123.8}, {128 * MiB, 586.4},
                                                            {1 * GiB, 4029.4}, {8 * GiB, 31307}};
  const auto spec = load_cluster_preset("h100-2048x8-rail");
  const auto graph = topologies::ClusterGraph::build(spec, 8);
  const auto t = run_isolated_numbers([&] {
    std::vector<CollectiveRequest> rs;
    for (const auto& [s, us] : published) {
      CollectiveRequest r = allreduce(gpu_range(0, 8), s);
      r.dtype = Dtype::fp32;
      rs.push_back(r);
    }
    std::vector<double> out;
    for (const auto& r : simulate_collectives(graph, rs, SimulationOptions{}))
      out.push_back(r.time_s() * 1e6);
    return out;
  });
  // Tolerance (validation/collectives-gap.md): 35% at every published size, 5% from 1 GiB up.
  for (std::size_t i = 0; i < published.size(); ++i) {
    const double err = std::abs(t[i] - published[i].second) / published[i].second;
    INFO("size " << published[i].first << " simulated " << t[i] << " us, published "
                 << published[i].second << " us");
    CHECK(err <= 0.35);
    if (published[i].first >= 1 * GiB) CHECK(err <= 0.05);
  }
}

TEST_CASE(
    "A collective across a down link hangs until the link comes back, and a degraded link "
    "slows it by its factor",
    "[sim][faults]") {
  const auto spec = test_cluster({.nodes = 4, .gpus_per_node = 1, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 4);
  const double S = 1 * GiB;
  const auto t = run_isolated_numbers([&] {
    SimulationOptions o;
    o.nccl = ring_simple();
    Simulation sim(graph, o);
    std::vector<double> out(5, -1);
    sim.spawn(0, "driver", [&] {
      out[0] = sim.collective(allreduce(gpu_range(0, 4), S)).time_s();
      // Down from now for 1 s: the collective must not complete within 0.5 s.
      const double t0 = sim.now();
      sim.set_link_down("node2/nic0-leaf", t0, t0 + 1.0);
      auto h = sim.start_collective(allreduce(gpu_range(0, 4), S));
      out[1] = sim.wait_for(h, 0.5) ? 1 : 0;
      out[2] = sim.wait(h).end_s - t0;  // completes after the link is back at t0 + 1
      // Half bandwidth on one NIC: the ring runs at its slowest edge.
      const double t1 = sim.now();
      sim.set_link_bandwidth_factor("node1/nic0-leaf", 0.5, t1);
      out[3] = sim.collective(allreduce(gpu_range(0, 4), S)).time_s();
      out[4] = sim.platform().link_bandwidth_factor(*graph.find_link("node1/nic0-leaf"));
    });
    sim.run();
    return out;
  });
  const double L = ring_simple_latency_s(graph, 4, 4, S);
  CHECK(t[1] == 0);
  CHECK(t[2] >= 1.0);
  CHECK(t[2] <= 1.0 + t[0]);
  CHECK(t[3] == Approx(L + ring_bw_term(S, 4, 25e9)).epsilon(0.01));
  CHECK(t[4] == 0.5);
}

TEST_CASE("Link statistics count each ring edge's bytes on the NICs and nothing on NVLink",
          "[sim][stats]") {
  const auto spec = test_cluster({.nodes = 4, .gpus_per_node = 1, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 4);
  const double S = 256 * MiB;
  const auto v = run_isolated_numbers([&] {
    SimulationOptions o;
    o.nccl = ring_simple();
    Simulation sim(graph, o);
    sim.spawn(0, "driver", [&] { sim.collective(allreduce(gpu_range(0, 4), S)); });
    sim.run();
    const LinkUsageReport rep = sim.link_usage();
    std::vector<double> out;
    for (const auto& c : rep.classes) out.push_back(c.bytes);
    out.push_back(rep.classes[static_cast<int>(topologies::LinkClass::nic)].utilisation);
    return out;
  });
  // Each of the 4 NICs sends and receives 2(n-1)/n * S (Simple: wire bytes = payload).
  const double per_direction = 2.0 * 3 / 4 * S;
  CHECK(v[static_cast<int>(topologies::LinkClass::nvlink)] == 0);
  CHECK(v[static_cast<int>(topologies::LinkClass::nic)] == Approx(4 * 2 * per_direction));
  CHECK(v[4] > 0.5);
  CHECK(v[4] <= 1.0);
}

TEST_CASE(
    "The analytic uncontended time equals the simulated bulk time, and a contention-free "
    "request takes it",
    "[sim]") {
  const auto spec = load_cluster_preset("h800-128x8-rail");
  const auto graph = topologies::ClusterGraph::build(spec, 64);
  const auto v = run_isolated_numbers([&] {
    Simulation sim(graph, SimulationOptions{});
    std::vector<double> out;
    sim.spawn(0, "driver", [&] {
      for (const auto& g : {gpu_range(0, 8), gpu_range(0, 64), gpu_range(3, 8, 8)}) {
        CollectiveRequest r = allreduce(g, 96 * MiB);
        out.push_back(sim.uncontended_time_s(r));
        out.push_back(sim.collective(r).time_s());
        r.contention_free = true;
        out.push_back(sim.collective(r).time_s());
      }
    });
    sim.run();
    return out;
  });
  for (std::size_t i = 0; i < v.size(); i += 3) {
    CHECK(v[i + 1] == Approx(v[i]).epsilon(1e-4));
    CHECK(v[i + 2] == Approx(v[i]).epsilon(1e-9));
  }
}

TEST_CASE("join_collective starts the collective when the last member joins", "[sim]") {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 4, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 4);
  const auto v = run_isolated_numbers([&] {
    Simulation sim(graph, SimulationOptions{});
    std::vector<double> out(8, -1);
    const CollectiveRequest r = allreduce(gpu_range(0, 4), 16 * MiB);
    for (int m = 0; m < 4; ++m) {
      sim.spawn(m, "rank" + std::to_string(m), [&, m] {
        sim.sleep_for(0.001 * m);  // rank 3 arrives last, at 3 ms
        const auto h = sim.join_collective("tp0", m, r);
        const auto& res = sim.wait(h);
        out[static_cast<std::size_t>(2 * m)] = res.start_s;
        out[static_cast<std::size_t>(2 * m + 1)] = sim.now() - res.end_s;
      });
    }
    sim.run();
    return out;
  });
  for (int m = 0; m < 4; ++m) {
    CHECK(v[static_cast<std::size_t>(2 * m)] == Approx(0.003));
    CHECK(v[static_cast<std::size_t>(2 * m + 1)] == Approx(0).margin(1e-12));
  }
}

TEST_CASE(
    "NCCL_NET_GDR_LEVEL below the GPU-NIC distance stages network traffic through host "
    "memory",
    "[sim][nccl]") {
  const auto spec = test_cluster({.nodes = 2,
                                  .gpus_per_node = 2,
                                  .nics_per_node = 2,
                                  .rail_optimized = true,
                                  .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 4);
  auto run = [&](bool loc) {
    return run_isolated_numbers([&] {
      SimulationOptions o;
      o.nccl = ring_simple();
      if (loc) o.nccl.net_gdr_level = PathLevel::loc;
      Simulation sim(graph, o);
      const CollectiveRequest r = allreduce({0, 2}, 64 * MiB);
      std::vector<double> out;
      out.push_back(sim.plan(r).gpudirect_rdma ? 1 : 0);
      out.push_back(sim.graph().has_hosts() ? 1 : 0);
      sim.spawn(0, "driver", [&] { sim.collective(r); });
      sim.run();
      double host_nic_bytes = 0;
      for (const auto& l : sim.link_usage().links) {
        if (l.name.find("/nic") != std::string::npos && l.name.find("-pcie") != std::string::npos) {
          host_nic_bytes += l.bytes_up + l.bytes_down;
        }
      }
      out.push_back(host_nic_bytes);
      return out;
    });
  };
  const auto direct = run(false);
  const auto staged = run(true);
  CHECK(direct[0] == 1);
  CHECK(direct[1] == 0);
  CHECK(direct[2] == 0);
  CHECK(staged[0] == 0);
  CHECK(staged[1] == 1);
  CHECK(staged[2] > 0);
}

TEST_CASE("A process runs one SimGrid engine: a second Simulation is refused", "[sim]") {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const auto v = run_isolated_numbers([&] {
    { Simulation first(graph, SimulationOptions{}); }
    try {
      Simulation second(graph, SimulationOptions{});
    } catch (const std::logic_error&) {
      return std::vector<double>{1};
    }
    return std::vector<double>{0};
  });
  CHECK(v[0] == 1);
}

TEST_CASE("The network model's bandwidth factor scales what one flow gets of its bottleneck",
          "[sim][network]") {
  // SimGrid CM02 with network/bandwidth-factor 0.5: a flow alone on a 20 GB/s path gets 10 GB/s.
  const auto spec = test_cluster({.nodes = 2, .gpus_per_node = 1, .pcie_GBps = 20});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const double S = 1 * GiB;
  const auto t = run_isolated_numbers([&] {
    SimulationOptions o;
    o.nccl = ring_simple();
    o.network.bandwidth_factor = 0.5;
    std::vector<double> out;
    for (const auto& r : simulate_collectives(graph, {allreduce({0, 1}, S)}, o))
      out.push_back(r.time_s());
    return out;
  });
  const double L = ring_simple_latency_s(graph, 2, 2, S);
  CHECK(t[0] == Approx(L + ring_bw_term(S, 2, 10e9)).epsilon(0.01));
}

TEST_CASE("A cluster's network calibration sets the time of the collectives it measured",
          "[sim][calibration]") {
  // The calibration file says all-reduce over 8 GPUs of one node runs at alpha = 30 us and
  // 40 GB/s bus bandwidth from 1 MiB up (and 8 us / 10 GB/s below): an uncontended all-reduce
  // of that size must take alpha + S * 2 (n-1)/n / busbw, whatever NCCL's model says, as long
  // as the links (200 GB/s NVLink here) are faster. Other collectives keep NCCL's model.
  validation::Calibration cal;
  cal.name = "test";
  validation::NetworkCalibration e;
  e.link_class = "intra_node";
  e.op = validation::NcclTestsOp::all_reduce;
  e.nranks = 8;
  e.nodes = 1;
  e.source = "synthetic";
  e.regimes = {{0, 1 * MiB, 8.0, 10.0, 1, 4}, {1 * MiB, 8 * GiB, 30.0, 40.0, 1, 4}};
  e.peak_busbw_GBps = 40;
  cal.network.push_back(e);
  const auto path = std::filesystem::temp_directory_path() / "clustersim-test-net-calib.json";
  validation::write_calibration(path.string(), cal);

  auto spec = test_cluster(
      {.nodes = 1, .gpus_per_node = 8, .rail_optimized = true, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 8);
  spec.calibration = path.string();
  // The file the cluster names, read as the tool reads it, is handed to the engine.
  const std::vector<NetworkCalibration> network = validation::load_network_calibration(spec);
  REQUIRE(network.size() == 1);
  const std::vector<double> sizes = {256 * KiB, 64 * MiB, 1 * GiB};
  auto run = [&](const std::vector<NetworkCalibration>& calibration) {
    return run_isolated_numbers([&] {
      std::vector<CollectiveRequest> rs;
      for (double s : sizes) rs.push_back(allreduce(gpu_range(0, 8), s));
      CollectiveRequest ag = allreduce(gpu_range(0, 8), 64 * MiB);
      ag.op = CollectiveOp::all_gather;
      rs.push_back(ag);
      SimulationOptions o;
      o.network_calibration = calibration;
      std::vector<double> t;
      for (const auto& r : simulate_collectives(graph, rs, o)) t.push_back(r.time_s());
      return t;
    });
  };
  const auto with = run(network);
  const auto without = run({});
  std::filesystem::remove(path);
  const double factor = 2.0 * 7 / 8;
  const double expected[] = {8e-6 + 256 * KiB * factor / 10e9, 30e-6 + 64 * MiB * factor / 40e9,
                             30e-6 + 1 * GiB * factor / 40e9};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("bytes " << sizes[i] << ": calibrated " << with[i] << " s, NCCL model " << without[i]);
    CHECK(with[i] == Approx(expected[i]).epsilon(0.01));
    CHECK(without[i] != Approx(expected[i]).epsilon(0.05));
  }
  CHECK(with[3] == Approx(without[3]).epsilon(1e-9));  // all-gather: not in the file
}

namespace {

// Runs a simulation set up by `setup` in a child process and returns the message of the
// runtime_error it ends with ("" when it ends normally).
std::string isolated_error(const std::function<void(Simulation&)>& setup,
                           const topologies::ClusterGraph& graph) {
  try {
    run_isolated_numbers([&] {
      Simulation sim(graph, SimulationOptions{});
      setup(sim);
      sim.run();
      return std::vector<double>{};
    });
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("A simulation that deadlocks is an error, not a result", "[sim]") {
  // Rank 0 waits for an all-reduce that rank 1 never joins: SimGrid finds nothing left to do
  // and would return as if the run had ended at t = 0.
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .pcie_GBps = 20});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const std::string message = isolated_error(
      [&](Simulation& sim) {
        sim.spawn(0, "rank0", [&] {
          auto h = sim.join_collective("lonely", 0, allreduce({0, 1}, 1 * MiB));
          sim.wait(h);
        });
      },
      graph);
  CHECK(message.find("the simulation deadlocked") != std::string::npos);
}

TEST_CASE("A compute time that is not finite is an error, not an abort inside SimGrid", "[sim]") {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .pcie_GBps = 20});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const std::string message = isolated_error(
      [&](Simulation& sim) {
        sim.spawn(0, "rank0", [&] { sim.compute(0, std::numeric_limits<double>::infinity()); });
      },
      graph);
  CHECK(message.find("a compute time of inf s on GPU 0") != std::string::npos);
}

TEST_CASE(
    "An all-to-all on an idle fabric takes the alpha-beta closed form, a shared NIC halves it",
    "[sim][alltoall][moe]") {
  // One GPU per node behind its own 50 GB/s NIC (GPUDirect, PCIe 64 GB/s): an all-to-all of S
  // bytes per rank (nccl-tests' size: the whole send buffer) sends (n-1)/n S out of every NIC
  // and receives as much, so the bandwidth term is (n-1)/n S / 50 GB/s; at 1 GiB NCCL's
  // per-peer latency (microseconds) is under 0.1 % of it.
  const double S = 1 * GiB;
  const double B = 50e9;
  const int n = 8;
  const auto alone = topologies::ClusterGraph::build(
      test_cluster({.nodes = n, .gpus_per_node = 1, .gpudirect_rdma = true}), n);
  CollectiveRequest a2a;
  a2a.op = CollectiveOp::all_to_all;
  a2a.gpus = gpu_range(0, n);
  a2a.bytes = S;
  const auto t = run_isolated_numbers([&] {
    std::vector<double> out;
    for (const auto& r : simulate_collectives(alone, {a2a}, SimulationOptions{})) {
      out.push_back(r.time_s());
    }
    return out;
  });
  REQUIRE(t.size() == 1);
  CHECK(t[0] == Approx((n - 1.0) / n * S / B).epsilon(0.01));

  // Two GPUs per node sharing the node's one NIC: two all-to-alls at once, one among the
  // first GPUs of the 8 nodes and one among the second, share every NIC: together they move
  // what one NIC carries, so each takes twice the dedicated-NIC time above.
  const auto shared = topologies::ClusterGraph::build(
      test_cluster({.nodes = n, .gpus_per_node = 2, .gpudirect_rdma = true}), 2 * n);
  const auto v = run_isolated_numbers([&] {
    Simulation sim(shared, SimulationOptions{});
    std::vector<double> out;
    sim.spawn(0, "driver", [&] {
      CollectiveRequest first = a2a;
      first.gpus = gpu_range(0, n, 2);
      CollectiveRequest second = a2a;
      second.gpus = gpu_range(1, n, 2);
      auto h1 = sim.start_collective(first);
      auto h2 = sim.start_collective(second);
      out.push_back(sim.wait(h1).time_s());
      out.push_back(sim.wait(h2).time_s());
    });
    sim.run();
    return out;
  });
  REQUIRE(v.size() == 2);
  CHECK(v[0] == Approx(2 * (n - 1.0) / n * S / B).epsilon(0.01));
  CHECK(v[1] == Approx(2 * (n - 1.0) / n * S / B).epsilon(0.01));
}
