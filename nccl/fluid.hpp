// The analytic time of a set of flows: max-min fair sharing (progressive filling) with
// completion events, the same sharing SimGrid's CM02 model computes. Used to cost a collective
// without simulating it (contention_free requests, chain pacing, bulk collectives while no flow
// is posted to SimGrid: sim/README.md). No SimGrid type.
#pragma once

#include <cstddef>
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

// Max-min fair sharing of flows that come and go, as SimGrid's CM02 model shares its links:
// progressive filling with rate caps, rates recomputed by share() whenever flows were added or
// have ended. Flows are numbered in the order they were added.
class FluidNetwork {
 public:
  // capacity(link): each direction's capacity in bytes/s.
  explicit FluidNetwork(std::function<double(int link)> capacity);

  // Drops every flow; the links seen so far and their capacities stay (the capacity function
  // must give the same as before). The next flow added is number 0.
  void clear();
  // Adds a flow (inactive at once if it has no bytes); returns its number.
  std::size_t add(const FluidFlow& flow);
  // The max-min rates of the active flows. Max-min sharing splits over the connected
  // components of the flows (two flows connect when they cross a common resource), so only the
  // components that flows joined or left since the last call are shared again; every other flow
  // keeps its rate.
  void share();
  // Seconds until the next active flow ends at the current rates (+infinity if none moves).
  double next_end() const;
  // Runs the current rates for dt seconds; the flows that end are appended to `ended`.
  void run(double dt, std::vector<std::size_t>* ended = nullptr);

  bool active(std::size_t f) const { return is_active_[f] != 0; }
  // Wire bytes flow f still has to send (0 once it has ended).
  double remaining(std::size_t f) const { return remaining_[f]; }
  std::size_t size() const { return wire_.size(); }
  std::size_t active_count() const { return active_.size(); }

 private:
  std::function<double(int link)> capacity_;
  std::vector<int> resource_of_;             // 2 x link + direction -> resource, -1 where none yet
  std::vector<double> cap_;                  // per resource, bytes/s
  std::vector<std::vector<int>> resources_;  // per flow
  std::vector<double> wire_, rate_cap_, remaining_, rate_;
  std::vector<char> is_active_;
  std::vector<std::size_t> active_;  // active flows, in the order they were added
  // Progressive filling over `open` (whole components: every active user of their resources).
  void fill(std::vector<std::size_t> open);
  // The active flows connected to the changes since the last share(): the flows added and those
  // on the resources of the flows that ended.
  std::vector<std::size_t> changed_components();

  // Scratch for share().
  std::vector<double> left_;
  std::vector<int> users_;
  // Incremental sharing: the flows on each resource (ended ones dropped when next met), the
  // changes since the last share(), and visit marks for the component search.
  std::vector<std::vector<std::size_t>> flows_on_;
  std::vector<std::size_t> added_;
  std::vector<int> freed_;  // resources of flows that ended
  std::vector<unsigned> flow_seen_, resource_seen_;
  unsigned visit_ = 0;
};

// Returns when the last flow ends, all starting at 0 (+infinity if some flow can never move).
// capacity(link) gives each direction's capacity in bytes/s.
double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity);

}  // namespace clustersim::nccl
