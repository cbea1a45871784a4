// Placement of global ranks onto GPUs and the process groups of a 4-D parallel layout.
//
// Megatron-LM order (megatron/core/parallel_state.py, RankGenerator with order "tp-cp-ep-dp-pp",
// expert parallelism = 1): tp varies fastest, then cp, then dp, then pp:
//   rank = tp + TP * (cp + CP * (dp + DP * pp)).
// Ranks map onto GPUs in order (rank r runs on GPU r, GPUs numbered node-major), so a TP group
// of size <= gpus_per_node stays inside a node.
#pragma once

#include <vector>

#include "core/scenario.hpp"

namespace clustersim::topologies {

// A rank's coordinates in the layout.
struct RankCoords {
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
};

struct Placement {
  int tp = 1, cp = 1, dp = 1, pp = 1;
  std::vector<int> gpu_of_rank;  // global rank -> global GPU index
  // Groups as lists of global ranks, each sorted ascending, groups in ascending order of
  // their first rank.
  std::vector<std::vector<int>> tp_groups;  // dp*cp*pp groups of tp ranks
  std::vector<std::vector<int>> cp_groups;  // tp*dp*pp groups of cp ranks
  std::vector<std::vector<int>> dp_groups;  // tp*cp*pp groups of dp ranks
  std::vector<std::vector<int>> pp_groups;  // tp*cp*dp groups of pp ranks

  int num_ranks() const { return static_cast<int>(gpu_of_rank.size()); }
  RankCoords coords(int rank) const;
  int rank_of(const RankCoords& c) const;
  // Index into tp_groups / cp_groups / dp_groups / pp_groups of the group holding `rank`.
  int tp_group_of(int rank) const;
  int cp_group_of(int rank) const;
  int dp_group_of(int rank) const;
  int pp_group_of(int rank) const;
};

// Expert parallelism (Megatron-Core parallel_state.py, the expert RankGenerator: order
// "tp-ep-dp-pp" with tp = the expert tensor-parallel size etp and cp = 1). Inside one pipeline
// stage, the stage's tp*cp*dp ranks are renumbered for the MoE layers as
//   local = etp_rank + etp * (ep_rank + ep * edp_rank),   edp = tp*cp*dp / (etp*ep),
// so an EP group holds ep ranks at stride etp and an expert-data-parallel group edp ranks at
// stride etp*ep. With etp = 1 an EP group is ep consecutive ranks (consecutive GPUs: inside one
// NVLink domain when ep fits in it).
struct ExpertGroups {
  int ep = 1, etp = 1, edp = 1;
  std::vector<std::vector<int>> ep_groups;   // pp*etp*edp groups of ep ranks
  std::vector<std::vector<int>> edp_groups;  // pp*etp*ep groups of edp ranks
};

// Throws std::invalid_argument when ep or etp < 1 or etp*ep does not divide tp*cp*dp.
ExpertGroups place_experts(const Placement& placement, int ep, int etp);

// The EP group (ep ranks, ascending) that holds `rank`. Preconditions as place_experts.
std::vector<int> expert_group_of(const Placement& placement, int rank, int ep, int etp);

// Places dp*tp*cp*pp ranks on the first `gpus` GPUs in Megatron order. Throws
// std::invalid_argument naming the parameter when a degree is < 1 or the product != gpus.
Placement place_ranks(const Parallelism& parallelism, int gpus);

}  // namespace clustersim::topologies
