// The analytic uncontended time of a set of flows: max-min fair sharing (progressive filling)
// with completion events, the same sharing SimGrid's CM02 model computes. Used to cost a
// collective without simulating it (contention_free requests, chain pacing). No SimGrid type.
#pragma once

#include <functional>
#include <vector>

#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

// One flow for the analytic max-min computation: its route as (link, direction) resources.
struct FluidFlow {
  std::vector<topologies::Hop> route;
  double wire_bytes = 0;
  double rate_cap_Bps = 0;  // wire bytes per second; <= 0 = none
};

// Returns when the last flow ends, all starting at 0 (+infinity if some flow can never move).
// capacity(link) gives each direction's capacity in bytes/s.
double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity);

// The wire bytes each flow still has to send after `elapsed_s` seconds of the same sharing, all
// starting at 0 (0 for a flow that has ended).
std::vector<double> fluid_remaining(const std::vector<FluidFlow>& flows,
                                    const std::function<double(int link)>& capacity,
                                    double elapsed_s);

}  // namespace clustersim::nccl
