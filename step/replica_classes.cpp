// Shortcut 1: data-parallel replicas that no fault distinguishes share one replica class (one
// actor per stage stands for all of them); each replica touched by a fault gets its own.
#include <algorithm>
#include <map>
#include <set>

#include "step/replay.hpp"

namespace clustersim::step {

// Replicas touched by a fault get a class of their own; all others share class 0. The faults
// were checked by prepare_step (ranks placed, speed factors in (0, 1]).
void Replay::build_classes() {
  std::map<int, std::vector<std::pair<int, Slowdown>>> slow_by_replica;  // d -> (stage, slow)
  for (const auto& g : opt_.faults.slow_gpus) {
    const auto c = pl_.coords(g.rank);
    slow_by_replica[c.dp].push_back({c.pp, Slowdown{g.speed_factor, g.from_s}});
  }
  std::map<int, std::vector<std::pair<int, double>>> lost_by_replica;
  const int gpn = s_.cluster.gpus_per_node;
  for (const auto& n : opt_.faults.lost_nodes) {
    std::set<int> seen;
    for (int r = 0; r < pl_.num_ranks(); ++r) {
      if (pl_.gpu_of_rank[static_cast<std::size_t>(r)] / gpn != n.node) continue;
      const int d = pl_.coords(r).dp;
      if (seen.insert(d).second) lost_by_replica[d].push_back({n.node, n.at_s});
    }
  }
  std::set<int> special;
  for (const auto& [d, v] : slow_by_replica) special.insert(d);
  for (const auto& [d, v] : lost_by_replica) special.insert(d);
  auto make = [&](std::vector<int> replicas) {
    ClassInfo ci;
    ci.replicas = std::move(replicas);
    ci.slow.assign(static_cast<std::size_t>(p_), {});
    ci.slowest_speed.assign(static_cast<std::size_t>(p_), 1.0);
    for (int d : ci.replicas) {
      if (const auto it = slow_by_replica.find(d); it != slow_by_replica.end()) {
        for (const auto& [st, sl] : it->second) {
          ci.slow[static_cast<std::size_t>(st)].push_back(sl);
          auto& m = ci.slowest_speed[static_cast<std::size_t>(st)];
          m = std::min(m, sl.factor);
        }
      }
      if (const auto it = lost_by_replica.find(d); it != lost_by_replica.end()) {
        for (const auto& l : it->second) ci.lost.push_back(l);
      }
    }
    classes_.push_back(std::move(ci));
  };
  if (opt_.exact) {
    for (int d = 0; d < dp_; ++d) make({d});
    return;
  }
  std::vector<int> healthy;
  for (int d = 0; d < dp_; ++d) {
    if (!special.count(d)) healthy.push_back(d);
  }
  if (!healthy.empty()) make(healthy);
  for (int d : special) make({d});
}

}  // namespace clustersim::step
