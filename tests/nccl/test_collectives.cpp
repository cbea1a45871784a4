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

TEST_CASE("Max-min sharing of flows that come and go: what each has left, and when it ends",
          "[nccl]") {
  using topologies::Direction;
  FluidNetwork net([](int) { return 100.0; });
  net.add({{{0, Direction::up}}, 300, 0});
  net.add({{{0, Direction::up}}, 100, 0});
  CHECK(net.remaining(0) == 300);
  CHECK(net.remaining(1) == 100);
  // 50 B/s each until the small one ends at 2 s, then 100 B/s for the big one.
  net.share();
  CHECK(net.next_end() == Approx(2.0));
  net.run(1.0);
  CHECK(net.remaining(0) == Approx(250));
  CHECK(net.remaining(1) == Approx(50));
  std::vector<std::size_t> ended;
  net.run(net.next_end(), &ended);
  CHECK(ended == std::vector<std::size_t>{1});
  CHECK_FALSE(net.active(1));
  net.share();
  net.run(1.0);  // 3 s
  CHECK(net.remaining(0) == Approx(100));
  CHECK(net.remaining(1) == 0);
  // A third 100-byte flow joins at 3 s: 50 B/s each again, both end at 5 s.
  net.add({{{0, Direction::up}}, 100, 0});
  net.share();
  CHECK(net.next_end() == Approx(2.0));
  ended.clear();
  net.run(net.next_end(), &ended);
  CHECK(ended == std::vector<std::size_t>{0, 2});
  CHECK(net.remaining(0) == 0);
  CHECK(net.active_count() == 0);
}

TEST_CASE("Sharing again after flows end or join: the flows connected to the change move",
          "[nccl]") {
  using topologies::Direction;
  // Link 0 carries 100 B/s, link 1 150 B/s, link 2 100 B/s (one direction each).
  FluidNetwork net([](int link) { return link == 1 ? 150.0 : 100.0; });
  net.add({{{0, Direction::up}}, 100, 0});                       // f0
  net.add({{{0, Direction::up}, {1, Direction::up}}, 1000, 0});  // f1, bridges links 0 and 1
  net.add({{{1, Direction::up}}, 1000, 0});                      // f2
  net.add({{{2, Direction::up}}, 1000, 0});                      // f3, alone on link 2
  // Link 0 saturates first: f0 and f1 at 50; f2 takes the rest of link 1, 100; f3 100.
  net.share();
  CHECK(net.next_end() == Approx(2.0));  // f0: 100 B at 50 B/s
  std::vector<std::size_t> ended;
  net.run(net.next_end(), &ended);
  CHECK(ended == std::vector<std::size_t>{0});
  CHECK(net.remaining(1) == Approx(900));
  CHECK(net.remaining(2) == Approx(800));
  CHECK(net.remaining(3) == Approx(800));
  // f0 gone: link 1 binds f1 and f2 at 75 each (f1 reached through the link f0 left); f3 stays
  // at 100.
  net.share();
  net.run(1.0);
  CHECK(net.remaining(1) == Approx(825));
  CHECK(net.remaining(2) == Approx(725));
  CHECK(net.remaining(3) == Approx(700));
  // f4 joins f3 on link 2: 50 each; f1 and f2 keep 75.
  net.add({{{2, Direction::up}}, 1000, 0});
  net.share();
  net.run(1.0);
  CHECK(net.remaining(1) == Approx(750));
  CHECK(net.remaining(2) == Approx(650));
  CHECK(net.remaining(3) == Approx(650));
  CHECK(net.remaining(4) == Approx(950));
}

TEST_CASE("A cleared fluid network starts again from flow 0 and keeps its links' capacities",
          "[nccl]") {
  using topologies::Direction;
  int asked = 0;
  FluidNetwork net([&asked](int link) {
    ++asked;
    return link == 7 ? 50.0 : 100.0;
  });
  net.add({{{0, Direction::up}}, 300, 0});
  net.share();
  net.run(1.0);
  net.clear();
  CHECK(net.size() == 0);
  CHECK(net.active_count() == 0);
  // Link 0 up again, link 0 down, then link 7 (a higher id than any before) both ways: each
  // (link, direction) is asked once in all, link 0 up before the clear and not after it.
  CHECK(net.add({{{0, Direction::up}}, 100, 0}) == 0);
  CHECK(net.add({{{0, Direction::down}, {7, Direction::up}}, 100, 0}) == 1);
  CHECK(net.add({{{7, Direction::down}}, 100, 0}) == 2);
  CHECK(asked == 4);
  CHECK(net.remaining(0) == 100);
  // Nothing of the flow before the clear shares link 0's up direction: 100 B/s, ends at 1 s.
  // The second flow is held to 50 B/s by link 7's up direction; the third has link 7's down
  // direction alone, also 50 B/s.
  net.share();
  CHECK(net.next_end() == Approx(1.0));
  std::vector<std::size_t> ended;
  net.run(1.0, &ended);
  CHECK(ended == std::vector<std::size_t>{0});
  CHECK(net.remaining(1) == Approx(50));
  CHECK(net.remaining(2) == Approx(50));
}
