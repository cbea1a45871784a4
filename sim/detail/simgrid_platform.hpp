// Internal to sim/: the SimGrid side of Platform. SimGrid's public (s4u) headers are included
// from here; its kernel internals only in simgrid_kernel.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "nccl/planner.hpp"
#include "sim/platform.hpp"

namespace clustersim::sim {

namespace detail {

// A route as both graph hops (for accounting and faults) and SimGrid links (for the model).
struct CachedRoute {
  std::vector<topologies::Hop> hops;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links;
};

// SimGrid kernel internals (sim/simgrid_kernel.cpp), behind plain functions:
// The routing zone of the platform, whose routes come from the cluster graph (owner->route),
// computed on demand and cached: a full zone would hold one explicit route per host pair
// (16384^2 at our largest scale).
simgrid::s4u::NetZone* create_graph_zone(const std::string& name, Platform::Impl* owner);
// The routing id of a host's NetPoint (what GraphZone::get_local_route is asked about).
unsigned long netpoint_id(const simgrid::s4u::Host* host);
// Calls `f` at simulated time `time_s` from the engine itself (no actor needed).
void call_at(double time_s, std::function<void()> f);

}  // namespace detail

struct Platform::Impl {
  topologies::ClusterGraph graph;
  NetworkModelOptions options;
  std::unique_ptr<nccl::EndpointRouter> router;
  simgrid::s4u::Engine* engine = nullptr;
  simgrid::s4u::NetZone* zone = nullptr;                  // detail::create_graph_zone
  std::vector<simgrid::s4u::Host*> hosts;                 // per endpoint
  std::vector<int> endpoint_of_netpoint;                  // NetPoint id -> endpoint (-1: none)
  std::vector<std::array<simgrid::s4u::Link*, 2>> links;  // per graph link: [up, down]
  std::vector<double> factor;                             // per graph link: bandwidth factor now
  std::vector<int> down;                                  // per graph link: > 0 while down
  std::vector<std::array<double, 2>> bytes;               // per graph link: wire bytes [up, down]
  std::unordered_map<std::uint64_t, detail::CachedRoute> routes;
  int num_gpus = 0;
  // GPU hosts carry a ladder of power states so speed can change during the run (SimGrid 3.32
  // forbids changing a sealed CPU's speeds): state i runs at (1 - i / kSpeedSteps) of nominal.
  static constexpr int kSpeedSteps = 100;
  static constexpr double kNominalSpeed = 1e9;  // "flop"/s: one nanosecond of work per flop

  Impl(const topologies::ClusterGraph& g, const NetworkModelOptions& o, bool p2p_nvlink,
       const EngineOptions& engine_options);

  const detail::CachedRoute& route(int src, int dst);
  simgrid::s4u::Host* host(int endpoint) const { return hosts[static_cast<std::size_t>(endpoint)]; }
  // Adds the wire bytes of a completed flow to every link it crossed.
  void account(int src, int dst, double wire_bytes);
  bool route_is_down(int src, int dst);
  // Applies factor and down state to the SimGrid links of one graph link.
  void refresh_link(int link);
};

}  // namespace clustersim::sim
