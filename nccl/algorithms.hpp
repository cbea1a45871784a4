// One function per NCCL algorithm: how the chosen algorithm moves a collective's data, as phases
// of ring, tree, NVLS and point-to-point patterns (nccl/decomposition.hpp). The planner
// (nccl/planner.hpp) fixes the plan (algorithm, protocol, channels, latency, bandwidth time)
// first and picks the function with decomposition_for(). No SimGrid type.
//
//   ring, pat     NCCL's rings, one per rail used (PAT is simulated with ring data movement)
//   tree          two binary trees over nodes (ncclGetDtree) per rail, intra-node chains
//   nvls          one node: GPU <-> NVSwitch multimem; several nodes: as nvls_tree, ring across
//   nvls_tree     NVLS reduce-scatter, the shard all-reduced across nodes rail by rail (tree),
//                 NVLS all-gather, pipelined
//   hierarchical  intra-node ring reduce-scatter, inter-node ring all-reduce per rail,
//                 intra-node all-gather, one after the other (not an NCCL algorithm)
//   direct        point-to-point flows (all-to-all, send/recv)
#pragma once

#include <functional>
#include <utility>

#include "nccl/collectives.hpp"
#include "nccl/decomposition.hpp"
#include "nccl/nccl_model.hpp"
#include "nccl/patterns.hpp"

namespace clustersim::nccl {

// What an algorithm's decomposition needs besides the plan it extends.
struct AlgorithmContext {
  const CollectiveRequest& request;
  const GroupShape& group;
  int num_gpus = 0;    // endpoints from num_gpus on are NVSwitches
  int rails_used = 1;  // rings / tree pairs the channels are spread over
  // NCCL's Ring model of a sub-communicator of `ranks` ranks on `nodes` nodes, under the
  // request's channel and protocol overrides (the parts of the hierarchical all-reduce).
  std::function<const NcclModel&(int ranks, int nodes)> ring_model;
};

// Each fills d.phases (and the plan fields its algorithm owns) from d.plan and returns the
// number of distinct paths (rings / trees) the channels are spread over.
using DecomposeFn = int (*)(const AlgorithmContext& context, Decomposition& d);
int decompose_ring(const AlgorithmContext& context, Decomposition& d);
int decompose_pat(const AlgorithmContext& context, Decomposition& d);
int decompose_tree(const AlgorithmContext& context, Decomposition& d);
int decompose_nvls(const AlgorithmContext& context, Decomposition& d);
int decompose_nvls_tree(const AlgorithmContext& context, Decomposition& d);
// Throws std::invalid_argument unless an all_reduce over the same number of GPUs per node.
int decompose_hierarchical(const AlgorithmContext& context, Decomposition& d);
int decompose_direct(const AlgorithmContext& context, Decomposition& d);

// The function for an algorithm.
DecomposeFn decomposition_for(Algorithm algorithm);

// Latency and bandwidth term (seconds) of the model's time at `bytes`, separated numerically:
// time(b) is alpha + b / bw(b) where bw only changes at powers of two (tree correction) and at
// the ring plateau threshold, so a small relative probe on the same side gives the slope.
// {-1, -1} when the model has no time for the pair.
std::pair<double, double> split_model_time(const NcclModel& m, CollectiveOp op, NcclAlgo a,
                                           NcclProto p, double bytes);

}  // namespace clustersim::nccl
