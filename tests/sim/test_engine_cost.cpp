// What a collective costs the engine rather than what it simulates: actors reused by bulk
// collectives, collectives timed by the engine's own max-min sharing while no flow is posted to
// SimGrid (against the same collectives as flows, and against hand formulas), and the states a
// long simulation keeps. Every simulation runs in a child process (sim/README.md).
#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "sim_test_support.hpp"

using namespace clustersim;
using namespace clustersim::nccl;
using namespace clustersim::sim;
using namespace clustersim::sim::testing;

namespace {

// Sixteen nodes of one GPU behind its own 50 GB/s NIC: an all-to-all of S bytes per rank sends
// (n-1)/n S out of every NIC, so it takes T = (n-1)/n S / 50 GB/s on an idle fabric.
struct SixteenNics {
  static constexpr int n = 16;
  const double S = 256 * MiB;
  const double B = 50e9;
  const double T = (n - 1.0) / n * S / B;
  const topologies::ClusterGraph graph = topologies::ClusterGraph::build(
      test_cluster({.nodes = n, .gpus_per_node = 1, .gpudirect_rdma = true}), n);

  using Body = std::function<void(Simulation&, std::vector<double>&)>;

  // In a child process, a simulation with the analytic sharing on or off: `before` sets it up,
  // `driver` runs as an actor on GPU 0, `after` reads it once it has ended; what they put in
  // `out`.
  std::vector<double> simulate(bool analytic, const Body& driver, const Body& after = {},
                               const Body& before = {}) const {
    return run_isolated_numbers([&] {
      SimulationOptions o;
      o.analytic_sharing = analytic;
      Simulation sim(graph, o);
      std::vector<double> out;
      if (before) before(sim, out);
      sim.spawn(0, "driver", [&] { driver(sim, out); });
      sim.run();
      if (after) after(sim, out);
      return out;
    });
  }

  CollectiveRequest all_to_all(double bytes) const {
    CollectiveRequest r;
    r.op = CollectiveOp::all_to_all;
    r.gpus = gpu_range(0, n);
    r.bytes = bytes;
    return r;
  }
};

}  // namespace

TEST_CASE(
    "Bulk collectives reuse the engine's actors: none per collective once each endpoint has one",
    "[sim][speed]") {
  // SixteenNics: an all-to-all takes T on an idle fabric, and two at once on the same GPUs
  // share every NIC and both take 2T. The engine creates its actors on
  // an endpoint's first use, as many as it has collectives at once, and none afterwards.
  const SixteenNics c;
  const int n = c.n;
  const double T = c.T;
  const auto& graph = c.graph;
  const CollectiveRequest a2a = c.all_to_all(c.S);
  const auto v = run_isolated_numbers([&] {
    SimulationOptions o;
    o.analytic_sharing = false;  // the flows' own machinery, even for a lone collective
    Simulation sim(graph, o);
    std::vector<double> out;
    const auto actors = [&] { out.push_back(static_cast<double>(sim.totals().actors)); };
    sim.spawn(0, "driver", [&] {
      for (int i = 0; i < 3; ++i) {
        out.push_back(sim.collective(a2a).time_s());
        actors();
      }
      auto h1 = sim.start_collective(a2a);
      auto h2 = sim.start_collective(a2a);
      out.push_back(sim.wait(h1).time_s());
      out.push_back(sim.wait(h2).time_s());
      actors();
      out.push_back(sim.collective(a2a).time_s());
      actors();
    });
    sim.run();
    return out;
  });
  REQUIRE(v.size() == 11);
  for (int i : {0, 2, 4, 9}) CHECK(v[static_cast<std::size_t>(i)] == Approx(T).epsilon(0.01));
  CHECK(v[6] == Approx(2 * T).epsilon(0.01));
  CHECK(v[7] == Approx(2 * T).epsilon(0.01));
  // The driver and one actor per endpoint (each sends), the same after three collectives (an
  // actor per endpoint and collective would be 1 + 3n), one more per endpoint for the second
  // of two at once, and none for the last one.
  CHECK(v[1] == 1 + n);
  CHECK(v[5] == 1 + n);
  CHECK(v[8] == 1 + 2 * n);
  CHECK(v[10] == 1 + 2 * n);
}

TEST_CASE("Collectives shared analytically end when their flows would", "[sim][speed]") {
  // The all-to-all of the test above: T alone. A second one started at T/2 shares every NIC:
  // the first sends its other half at half rate and ends at T/2 + T; the second has sent a half
  // by then and ends at 2T. Shared by the engine's own max-min computation, the end times are
  // those of SimGrid's flows, and no actor runs a flow.
  const SixteenNics c;
  const int n = c.n;
  const double T = c.T;
  const CollectiveRequest a2a = c.all_to_all(c.S);
  const auto run = [&](bool analytic) {
    return c.simulate(
        analytic,
        [&](Simulation& sim, std::vector<double>& out) {
          out.push_back(sim.collective(a2a).time_s());
          out.push_back(static_cast<double>(sim.totals().actors));
          const double t0 = sim.now();
          auto first = sim.start_collective(a2a);
          sim.sleep_for(T / 2);
          auto second = sim.start_collective(a2a);
          out.push_back(sim.wait(first).end_s - t0);
          out.push_back(sim.wait(second).end_s - t0);
        },
        [](Simulation& sim, std::vector<double>& out) {
          out.push_back(static_cast<double>(sim.totals().flows));
          double bytes = 0;
          for (const auto& l : sim.link_usage().links) bytes += l.bytes_up + l.bytes_down;
          out.push_back(bytes);
        });
  };
  const auto alone = run(true);
  const auto flows = run(false);
  REQUIRE(alone.size() == 6);
  REQUIRE(flows.size() == 6);
  CHECK(alone[0] == Approx(T).epsilon(0.01));
  CHECK(alone[1] == 1);  // the driver only
  CHECK(flows[1] == 1 + n);
  CHECK(alone[2] == Approx(1.5 * T).epsilon(0.01));
  CHECK(alone[3] == Approx(2 * T).epsilon(0.01));
  for (std::size_t i : {0, 2, 3}) CHECK(alone[i] == Approx(flows[i]).epsilon(1e-9));
  CHECK(alone[4] == flows[4]);                         // flows counted either way
  CHECK(alone[5] == Approx(flows[5]).epsilon(1e-12));  // and every byte on its links
}

TEST_CASE("Analytically shared collectives hand over to flows with what each has left",
          "[sim][speed]") {
  // Six all-to-alls of different sizes started T/5 apart on 16 single-GPU nodes: the pool
  // shares the first four; the fifth is simulated at step granularity, whose flows start from
  // actors, so the four post their flows with what each has left, and everything after, the
  // sixth and a transfer at 3T, runs as flows. Every end time is the one of flows from the start,
  // to SimGrid's own precision: it updates simulated times to a numerical precision of 1e-9 s (its
  // precision/timing setting); the two differ by a few 1e-10 s here.
  const SixteenNics c;
  const double S = c.S;
  const double T = c.T;
  const auto run = [&](bool analytic) {
    return c.simulate(analytic, [&](Simulation& sim, std::vector<double>& out) {
      std::vector<CollectiveHandle> hs;
      for (int i = 0; i < 6; ++i) {
        CollectiveRequest a2a = c.all_to_all(S * (1 + 0.25 * i));
        if (i == 4) a2a.granularity = Granularity::step;
        hs.push_back(sim.start_collective(a2a));
        sim.sleep_for(T / 5);
      }
      for (const auto& h : hs) out.push_back(sim.wait(h).end_s);
      sim.sleep_until(3 * T);
      out.push_back(sim.wait(sim.start_send(0, 1, S)).end_s);
    });
  };
  const auto shared = run(true);
  const auto flows = run(false);
  REQUIRE(shared.size() == flows.size());
  for (std::size_t i = 0; i < shared.size(); ++i) {
    INFO("collective " << i);
    CHECK(shared[i] == Approx(flows[i]).epsilon(0).margin(5e-9));
  }
}

TEST_CASE("A link fault ends the analytic sharing when it happens, not before", "[sim][speed]") {
  // An all-to-all alone (T), then one during which node 3's NIC drops to half its bandwidth
  // at T/2, then a link fault scheduled long after the last: the first is shared analytically;
  // the second hands over to flows at the fault; the end times are those of flows throughout.
  const SixteenNics c;
  const double T = c.T;
  const CollectiveRequest a2a = c.all_to_all(c.S);
  const auto run = [&](bool analytic) {
    return c.simulate(
        analytic,
        [&](Simulation& sim, std::vector<double>& out) {
          out.push_back(sim.collective(a2a).time_s());
          out.push_back(static_cast<double>(sim.totals().analytic));
          const double t0 = sim.now();
          sim.set_link_bandwidth_factor("node3/nic0-leaf", 0.5, t0 + T / 2);
          out.push_back(sim.collective(a2a).end_s - t0);
        },
        {},
        [](Simulation& sim, std::vector<double>&) {
          sim.set_link_down("node5/nic0-leaf", 1000.0, 1001.0);
        });
  };
  const auto shared = run(true);
  const auto flows = run(false);
  REQUIRE(shared.size() == 3);
  REQUIRE(flows.size() == 3);
  CHECK(shared[1] == 1);  // the first, before any fault
  CHECK(flows[1] == 0);
  CHECK(shared[0] == Approx(T).epsilon(0.01));
  // Node 3 sends and receives the second half of its bytes at half rate: T/2 + T.
  CHECK(shared[2] == Approx(1.5 * T).epsilon(0.01));
  for (std::size_t i : {0, 2}) CHECK(shared[i] == Approx(flows[i]).epsilon(0).margin(5e-9));
}

TEST_CASE("A finished transfer's state is released once no handle holds it", "[sim]") {
  // 1000 transfers one after the other, each handle dropped after its wait: all are counted,
  // none is kept, so a long step holds only what is in flight.
  const auto spec = test_cluster({.nodes = 2, .gpus_per_node = 1});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const auto v = run_isolated_numbers([&] {
    Simulation sim(graph, SimulationOptions{});
    double most_alive = 0;
    sim.spawn(0, "sender", [&] {
      for (int i = 0; i < 1000; ++i) {
        const CollectiveHandle h = sim.start_send(0, 1, 1 * MiB);
        most_alive = std::max(most_alive, static_cast<double>(sim.live_collectives()));
        sim.wait(h);
      }
    });
    sim.run();
    return std::vector<double>{static_cast<double>(sim.totals().collectives), most_alive,
                               static_cast<double>(sim.live_collectives())};
  });
  CHECK(v[0] == 1000);
  // The one in flight, and the one before it until the engine reaps the helper actor that ran
  // its flow (a kept state would make this 1000).
  CHECK(v[1] <= 2);
  CHECK(v[2] == 0);
}
