// Building blocks of NCCL's data movement: the group of a collective as NCCL's algorithms see
// it, ring orders per rail, NCCL's double binary trees, and NVLS patterns through each node's
// NVSwitch. The algorithms (nccl/algorithms.hpp) assemble phases from these. No SimGrid type.
#pragma once

#include <vector>

#include "nccl/decomposition.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

// The members of a collective grouped by node.
struct GroupShape {
  int n = 0;                              // members
  std::vector<int> nodes;                 // distinct nodes, in order of first appearance
  std::vector<std::vector<int>> members;  // per node: GPUs in ascending order
  int ppn_max = 0;                        // most members on one node
  bool uniform = true;                    // every node holds the same number of members
  int model_nodes = 0;                    // NCCL's model is evaluated for model_ranks ranks
  int model_ranks = 0;                    // on model_nodes nodes (ppn_max per node)
};
GroupShape analyse_group(const topologies::ClusterGraph& graph, const std::vector<int>& gpus);

// ncclGetBtree (src/graph/trees.cc): binary tree over ranks 0..n-1 where a rank's parent and
// children follow from its lowest set bit. Returns the parent of each rank (-1 for the root).
std::vector<int> nccl_btree(int n);
// ncclGetDtree (trees.cc): the second tree mirrors the first for an even count (rank r plays
// n-1-r) and shifts it by one for an odd count, so that no rank is interior in both.
std::vector<int> nccl_dtree_second(int n);
// Edges on the longest path from a vertex to the root.
int tree_depth(const std::vector<int>& parent);

// Ring `rail` over the group: nodes in order of first appearance, members of a node ascending,
// rotated by the rail so the ring enters each node at its rail-th member and leaves from the one
// before it: its node-to-node hops then land on that rail (with PXN on the sending side).
std::vector<int> ring_order(const GroupShape& group, int rail);

// `count` rings of `kind` (one per rail), each carrying payload / count bytes. Chains are
// rotated to start (broadcast) or end (reduce) at `root_gpu`.
void add_rings(Phase& phase, const GroupShape& group, RingKind kind, double payload, int count,
               int root_gpu);

// Trees over nodes: two trees (ncclGetDtree) per rail, each node an intra-node chain from its
// head (the member at the rail's index); payload split evenly over the trees.
void add_trees(Phase& phase, double payload, int rails,
               const std::vector<std::vector<int>>& members);

// One NVLS pattern per node of the group, through the node's NVSwitch (endpoint num_gpus + node).
void add_nvls(Phase& phase, const GroupShape& group, int num_gpus, NvlsKind kind,
              double payload_per_node);

}  // namespace clustersim::nccl
