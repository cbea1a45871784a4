// A planned collective decomposed into NCCL's data-movement patterns, with no SimGrid type.
// nccl/planner.hpp builds it (one function per algorithm, nccl/algorithms.hpp); sim/ executes it
// (bulk: flows merged per endpoint pair; step: one program per pattern and member).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl/collectives.hpp"
#include "nccl/endpoint_router.hpp"
#include "nccl/nccl_model.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

// How a ring pattern moves data (NCCL prims, src/device/all_reduce.h and friends).
enum class RingKind {
  all_reduce,      // 2(n-1) steps per loop, every edge busy each step
  reduce_scatter,  // n-1 steps per loop
  all_gather,      // n-1 steps per loop
  chain_forward,   // broadcast: order[0] -> order[1] -> ... -> order[n-1], pipelined chunks
  chain_reduce,    // reduce: order[0] -> ... -> order[n-1] (the root), pipelined chunks
};

struct RingPattern {
  RingKind kind = RingKind::all_reduce;
  std::vector<Endpoint> order;  // members in ring order (chain order for chain kinds)
  double payload = 0;           // bytes of the collective this ring carries
  // Step granularity (set by the planner): loops (all_reduce/reduce_scatter/all_gather) or
  // chunks (chains), and the payload rate cap of each edge (bytes/s, <= 0 = none).
  int chunks = 1;
  double edge_rate_Bps = 0;
};

// Reduce up to the root then broadcast down (NCCL Tree all-reduce, split thread model).
struct TreePattern {
  std::vector<Endpoint> nodes;
  std::vector<int> parent;  // index into nodes, -1 for the root
  double payload = 0;
  int chunks = 1;            // step granularity, as for RingPattern
  double edge_rate_Bps = 0;  // per edge and direction
};

// NVLS inside one node: GPUs <-> the node's NVSwitch (multimem loads/stores).
enum class NvlsKind { all_reduce, reduce_scatter, all_gather };
struct NvlsPattern {
  NvlsKind kind = NvlsKind::all_reduce;
  Endpoint nvswitch = 0;
  std::vector<Endpoint> gpus;
  double payload = 0;  // the node's share of the collective's bytes
  int chunks = 1;
  double up_rate_Bps = 0;    // GPU -> NVSwitch payload rate cap
  double down_rate_Bps = 0;  // NVSwitch -> GPU
  double up_bytes = 0;       // per GPU, whole collective
  double down_bytes = 0;
};

// Point-to-point flows (all-to-all, send/recv): no steps.
struct DirectFlow {
  Endpoint src = 0;
  Endpoint dst = 0;
  double payload = 0;
};

// Phases run one after the other in step granularity; each has a share of the bandwidth time.
struct Phase {
  std::vector<RingPattern> rings;
  std::vector<TreePattern> trees;
  std::vector<NvlsPattern> nvls;
  std::vector<DirectFlow> direct;
  double bw_time_s = 0;  // the phase's share of the model's bandwidth time
  double alpha_s = 0;    // the phase's share of the latency, paid at its start (step granularity)
  std::string name;
};

// One flow of the bulk granularity: everything a collective sends from src to dst.
struct BulkFlow {
  Endpoint src = 0;
  Endpoint dst = 0;
  double payload = 0;  // bytes of data (wire bytes = payload / wire_efficiency)
};

struct Decomposition {
  CollectivePlan plan;
  std::vector<Phase> phases;
  // true: the phases are parts of one pipelined algorithm (NCCL's NVLS + tree/ring across
  // nodes) and run at the same time, each over the whole bandwidth time; false: one after the
  // other (the hierarchical all-reduce), each over its own share.
  bool pipelined_phases = false;
  // Step granularity: bytes per ring step per channel (NCCL chunkSize) times the channels a
  // pattern carries is derived per pattern from these.
  double chunk_bytes_per_channel = 0;  // NCCL chunkSize for the chosen protocol
  int channels_per_pattern = 1;        // channels mapped onto each ring / tree
  // Bulk granularity: flows merged per (src, dst), in a deterministic order, and the time the
  // bandwidth part takes at the model's rates (flows are capped at payload / bulk_bw_time_s).
  std::vector<BulkFlow> bulk_flows;
  double bulk_bw_time_s = 0;
};

}  // namespace clustersim::nccl
