// SimGrid's engine settings (sim::EngineOptions) are given to the engine when it is created, and
// are in force: read back from SimGrid's configuration, and seen in what actors do (the memory
// mappings their stacks make, the OS thread they run on). SimGrid 3.32 picks its context factory
// when the engine is created; a setting made afterwards is read back but silently ignored, which
// only the effect shows. Every simulation runs in a child process (one engine per process).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "sim_test_support.hpp"

using namespace clustersim;
using namespace clustersim::sim;
using namespace clustersim::sim::testing;

namespace {

// Lines of /proc/self/maps: the memory mappings of this process.
double memory_mappings() {
  std::ifstream in("/proc/self/maps");
  std::string line;
  double n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

// In a child: {mappings added by spawning `actors` sleeping actors, settings read back as
// stack KiB, guard (0/1), factory is the requested one (0/1)}.
std::vector<double> spawn_and_count(const EngineOptions& engine, int actors) {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  return run_isolated_numbers([&] {
    SimulationOptions o;
    o.engine = engine;
    Simulation sim(graph, o);
    const double before = memory_mappings();
    for (int i = 0; i < actors; ++i) sim.spawn(i % 2, "sleeper", [&sim] { sim.sleep_for(1); });
    const double added = memory_mappings() - before;
    sim.run();
    const EngineOptions now = sim.platform().engine_settings();
    return std::vector<double>{added, double(now.actor_stack_KiB), now.stack_guard ? 1.0 : 0.0,
                               now.context_factory == engine.context_factory ? 1.0 : 0.0};
  });
}

// In a child: 1 when an actor runs on the process's main thread (a context switched in the
// same OS thread), 0 when it runs on a thread of its own.
double actor_on_main_thread(const std::string& factory) {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  return run_isolated_numbers([&] {
    SimulationOptions o;
    o.engine.context_factory = factory;
    Simulation sim(graph, o);
    double same = -1;
    sim.spawn(0, "probe", [&same] { same = gettid() == getpid() ? 1 : 0; });
    sim.run();
    return std::vector<double>{same};
  })[0];
}

}  // namespace

TEST_CASE("By default actors have no stack guard page, and the default is in force",
          "[sim][engine]") {
  const EngineOptions defaults;
  CHECK_FALSE(defaults.stack_guard);
  const auto args = engine_arguments(NetworkModelOptions{}, defaults);
  CHECK(std::count(args.begin(), args.end(), "--cfg=contexts/guard-size:0") == 1);
  CHECK(std::count(args.begin(), args.end(), "--cfg=contexts/factory:raw") == 1);

  // 64 live actors: a guard page would be one protected mapping each (SimGrid's
  // SwappedContext mprotects the page below every stack); without, the stacks come from the heap.
  const auto off = spawn_and_count(defaults, 64);
  CHECK(off[0] < 16);
  CHECK(off[1] == defaults.actor_stack_KiB);
  CHECK(off[2] == 0);
  CHECK(off[3] == 1);

  EngineOptions guarded;
  guarded.stack_guard = true;
  const auto on = spawn_and_count(guarded, 64);
  CHECK(on[0] >= 64);
  CHECK(on[2] == 1);
}

TEST_CASE("The context factory chosen when the engine is created is the one actors run on",
          "[sim][engine]") {
  // "thread" runs every actor on an OS thread of its own; "raw" (the default) switches contexts
  // in the main thread. Were the factory set after the engine's creation, both would be raw.
  CHECK(actor_on_main_thread("raw") == 1);
  CHECK(actor_on_main_thread("thread") == 0);
}

TEST_CASE("An unknown context factory is refused before SimGrid sees it", "[sim][engine]") {
  const auto spec = test_cluster({.nodes = 1, .gpus_per_node = 2, .gpudirect_rdma = true});
  const auto graph = topologies::ClusterGraph::build(spec, 2);
  const auto v = run_isolated_numbers([&] {
    SimulationOptions o;
    o.engine.context_factory = "fibers";
    try {
      Simulation sim(graph, o);
    } catch (const std::invalid_argument&) {
      return std::vector<double>{1};
    }
    return std::vector<double>{0};
  });
  CHECK(v[0] == 1);
}
