// The groups the replay simulates, and shortcuts 4 and 5 (step/simulate_step.hpp): on a
// rail-optimized fabric the TP ranks' data-parallel groups (and, when every transfer stays on
// its rail, the pipeline transfers) of rails that carry the same traffic are simulated on the
// first rail only.
#include <algorithm>
#include <map>

#include "step/replay.hpp"

namespace clustersim::step {

void Replay::build_groups() {
  // Data-parallel (x context-parallel) groups per stage and TP rank, in rank order.
  dp_groups_.assign(static_cast<std::size_t>(p_), {});
  for (int st = 0; st < p_; ++st) {
    for (int t = 0; t < tp_; ++t) {
      std::vector<std::pair<int, int>> members;  // (rank, gpu)
      for (int d = 0; d < dp_; ++d) {
        for (int c = 0; c < cp_; ++c)
          members.push_back({rank_of(t, c, d, st), gpu_of(t, c, d, st)});
      }
      std::sort(members.begin(), members.end());
      std::vector<int> gpus;
      for (const auto& m : members) gpus.push_back(m.second);
      dp_groups_[static_cast<std::size_t>(st)].push_back(std::move(gpus));
    }
  }
  if (p_ > 1) {
    for (int t = 0; t < tp_; ++t) {
      for (int d = 0; d < dp_; ++d) {
        for (int c = 0; c < cp_; ++c) {
          embedding_groups_.push_back({gpu_of(t, c, d, 0), gpu_of(t, c, d, p_ - 1)});
        }
      }
    }
  }
  for (int c = 0; c < cp_; ++c) {
    for (int t = 0; t < tp_; ++t) pp_ranks_.push_back({t, c});
  }
  build_expert_dp_groups();
  detect_rail_symmetry();
}

// The groups that reduce the routed experts' gradients (Group::expert_dp), per stage.
void Replay::build_expert_dp_groups() {
  expert_dp_groups_.assign(static_cast<std::size_t>(p_), {});
  expert_dp_tp_.assign(static_cast<std::size_t>(p_), {});
  if (!s_.model.moe) return;
  const Parallelism& par = s_.parallelism;
  const int per_stage = par.ep * par.expert_tp();
  const topologies::ExpertGroups g = topologies::place_experts(pl_, par.ep, par.expert_tp());
  for (std::size_t i = 0; i < g.edp_groups.size(); ++i) {
    const auto st = i / static_cast<std::size_t>(per_stage);
    std::vector<int> gpus;
    int tp = pl_.coords(g.edp_groups[i].front()).tp;
    for (int rank : g.edp_groups[i]) {
      gpus.push_back(pl_.gpu_of_rank[static_cast<std::size_t>(rank)]);
      if (pl_.coords(rank).tp != tp) tp = -1;
    }
    expert_dp_groups_[st].push_back(std::move(gpus));
    expert_dp_tp_[st].push_back(tp);
  }
}

// Shortcut 4: on a rail-optimized fabric with GPUDirect (GPU -> own NIC -> rail leaf), a
// data-parallel group whose GPUs all sit at the same local index, one per node, keeps all its
// traffic on that rail's links. Rails share no link; when every rail carries the same groups
// over the same nodes (with TP > GPUs per node several TP ranks' groups share a rail) and no
// link fault tells them apart, they behave identically: simulating the first rail's groups is
// exact, and the other rails' bytes are added to the link statistics.
void Replay::detect_rail_symmetry() {
  rails_.clear();
  first_rail_groups_.clear();
  const auto& g = sim_.graph();
  const ClusterSpec& spec = g.spec();
  if (opt_.exact || !opt_.symmetric_rails || tp_ < 2 || !opt_.faults.links.empty() ||
      !spec.rail_optimized || g.has_hosts()) {
    return;
  }
  // An expert-data-parallel group over several TP ranks may span rails.
  for (const auto& tps : expert_dp_tp_) {
    if (std::find(tps.begin(), tps.end(), -1) != tps.end()) return;
  }
  const int gpn = spec.gpus_per_node;
  std::vector<int> rails;
  std::vector<std::vector<int>> first(static_cast<std::size_t>(p_));
  for (int st = 0; st < p_; ++st) {
    // Per rail (in order of first use): the node lists of its groups, and which TP ranks.
    std::map<int, std::vector<std::vector<int>>> nodes_on_rail;
    std::vector<int> order;
    std::map<int, std::vector<int>> ranks_on_rail;
    for (int t = 0; t < tp_; ++t) {
      const auto& gpus = dp_groups_[static_cast<std::size_t>(st)][static_cast<std::size_t>(t)];
      const int local = gpus.front() % gpn;
      std::vector<int> nodes;
      for (int gpu : gpus) {
        if (gpu % gpn != local) return;
        nodes.push_back(gpu / gpn);
      }
      std::sort(nodes.begin(), nodes.end());
      if (std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end()) return;
      if (!nodes_on_rail.count(local)) order.push_back(local);
      nodes_on_rail[local].push_back(std::move(nodes));
      ranks_on_rail[local].push_back(t);
    }
    for (auto& [rail, lists] : nodes_on_rail) std::sort(lists.begin(), lists.end());
    for (int rail : order) {
      if (nodes_on_rail[rail] != nodes_on_rail[order.front()]) return;
    }
    if (st == 0) rails = order;
    if (order != rails) return;
    first[static_cast<std::size_t>(st)] = ranks_on_rail[order.front()];
  }
  rails_ = rails;
  first_rail_groups_ = std::move(first);
  detect_pipeline_rail_symmetry();
}

// Shortcut 5 (needs shortcut 4): when every pipeline transfer leaves a GPU for the GPU at
// the same local index on another node, it stays on that GPU's rail, and when every rail
// carries transfers between the same node pairs, the rails' pipeline traffic is identical
// too: only the TP/CP ranks on the first rail send (and only its embedding groups reduce),
// the others' bytes go to the statistics.
void Replay::detect_pipeline_rail_symmetry() {
  if (rails_.size() < 2 || p_ < 2 || faults_can_hang()) return;
  const int gpn = sim_.graph().spec().gpus_per_node;
  std::vector<std::pair<int, int>> stage_pairs;  // (from, to) of forward transfers
  for (int st = 0; st + 1 < p_; ++st) {
    stage_pairs.push_back({st, st + 1});
    if (w_.chain.dual) stage_pairs.push_back({st + 1, st});  // the upward chain
  }
  if (w_.vpp > 1) stage_pairs.push_back({p_ - 1, 0});
  if (p_ > 2) stage_pairs.push_back({0, p_ - 1});  // the embedding groups' pairs
  for (int d = 0; d < dp_; ++d) {
    for (const auto& [a, b] : stage_pairs) {
      std::map<int, std::vector<std::pair<int, int>>> node_pairs;  // rail -> (src, dst) nodes
      for (int c = 0; c < cp_; ++c) {
        for (int t = 0; t < tp_; ++t) {
          const int src = gpu_of(t, c, d, a);
          const int dst = gpu_of(t, c, d, b);
          // Same rail at both ends, another node, and the same rail in every replica.
          if (src % gpn != dst % gpn || src / gpn == dst / gpn ||
              src % gpn != gpu_of(t, c, 0, 0) % gpn) {
            return;
          }
          node_pairs[src % gpn].push_back({src / gpn, dst / gpn});
        }
      }
      for (auto& [rail, v] : node_pairs) std::sort(v.begin(), v.end());
      for (const auto& [rail, v] : node_pairs) {
        if (v != node_pairs.begin()->second) return;
      }
    }
  }
  const int rail0 = rails_.front();
  std::vector<std::pair<int, int>> on_rail;
  for (const auto& [t, c] : pp_ranks_) {
    if (gpu_of(t, c, 0, 0) % gpn == rail0) on_rail.push_back({t, c});
  }
  pp_ranks_ = std::move(on_rail);
  std::vector<std::vector<int>> embedding;
  for (auto& g : embedding_groups_) {
    if (g.front() % gpn == rail0) embedding.push_back(std::move(g));
  }
  embedding_groups_ = std::move(embedding);
  pp_one_rail_ = true;
}

}  // namespace clustersim::step
