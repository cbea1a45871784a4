// Collective names, nccl-tests' bus-bandwidth factors and the analytic max-min computation (no
// SimGrid engine needed).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "nccl/collectives.hpp"
#include "nccl/fluid.hpp"

using namespace clustersim;
using namespace clustersim::nccl;

TEST_CASE("Collective names round-trip as nccl-tests and NCCL spell them", "[nccl]") {
  for (const auto& name : collective_op_names()) {
    const auto op = parse_collective_op(name);
    REQUIRE(op);
    CHECK(cli_name(*op) == name);
  }
  CHECK(parse_collective_op("all_reduce") == CollectiveOp::all_reduce);
  CHECK_FALSE(parse_collective_op("allreduc"));
  CHECK(parse_algorithm("hierarchical") == Algorithm::hierarchical);
  CHECK(parse_granularity("step") == Granularity::step);
}

TEST_CASE("Bus bandwidth factors are nccl-tests' (doc/PERFORMANCE.md)", "[nccl]") {
  CHECK(bus_bandwidth_factor(CollectiveOp::all_reduce, 8) == Approx(14.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::all_gather, 8) == Approx(7.0 / 8));
  CHECK(bus_bandwidth_factor(CollectiveOp::reduce_scatter, 4) == Approx(3.0 / 4));
  CHECK(bus_bandwidth_factor(CollectiveOp::all_to_all, 2) == Approx(0.5));
  CHECK(bus_bandwidth_factor(CollectiveOp::broadcast, 8) == 1);
  CHECK(bus_bandwidth_factor(CollectiveOp::send_recv, 2) == 1);
}

TEST_CASE("Max-min sharing: two flows on one link share it, a capped flow leaves the rest",
          "[nccl]") {
  using topologies::Direction;
  const auto cap = [](int) { return 100.0; };
  // Two 100-byte flows on link 0: 50 B/s each, both end at 2 s.
  CHECK(fluid_makespan_s({{{{0, Direction::up}}, 100, 0}, {{{0, Direction::up}}, 100, 0}}, cap) ==
        Approx(2.0));
  // Opposite directions do not share (split duplex): 1 s.
  CHECK(fluid_makespan_s({{{{0, Direction::up}}, 100, 0}, {{{0, Direction::down}}, 100, 0}}, cap) ==
        Approx(1.0));
  // One flow capped at 20 B/s: the other gets 80 B/s, ends at 1.25 s, then nothing changes for
  // the capped one, which ends at 100 / 20 = 5 s.
  CHECK(fluid_makespan_s({{{{0, Direction::up}}, 100, 20}, {{{0, Direction::up}}, 100, 0}}, cap) ==
        Approx(5.0));
  // A 300-byte and a 100-byte flow: 50 each until 2 s, then the big one alone at 100: 2 + 2 s.
  CHECK(fluid_makespan_s({{{{0, Direction::up}}, 300, 0}, {{{0, Direction::up}}, 100, 0}}, cap) ==
        Approx(4.0));
}

TEST_CASE("Max-min sharing: what each flow has left after a given time", "[nccl]") {
  using topologies::Direction;
  const auto cap = [](int) { return 100.0; };
  const std::vector<FluidFlow> flows = {{{{0, Direction::up}}, 300, 0},
                                        {{{0, Direction::up}}, 100, 0}};
  // 50 B/s each until the small one ends at 2 s, then 100 B/s for the big one.
  auto left = fluid_remaining(flows, cap, 1.0);
  CHECK(left[0] == Approx(250));
  CHECK(left[1] == Approx(50));
  left = fluid_remaining(flows, cap, 3.0);
  CHECK(left[0] == Approx(100));
  CHECK(left[1] == 0);
  left = fluid_remaining(flows, cap, 10.0);
  CHECK(left[0] == 0);
  CHECK(left[1] == 0);
  left = fluid_remaining(flows, cap, 0.0);
  CHECK(left[0] == 300);
  CHECK(left[1] == 100);
}
