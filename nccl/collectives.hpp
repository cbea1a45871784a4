// NCCL-style collectives as flows: what a collective is (request), how NCCL would run it (plan:
// algorithm, protocol, channels, latency, bandwidth caps, from NCCL's own cost model), and what
// the simulation measured (result). The engine that simulates them is sim/simulation.hpp; the
// decomposition into flows is nccl/planner.hpp (one function per algorithm in
// nccl/algorithms.cpp). No SimGrid type here.
//
// How a plan becomes flows (both granularities):
//   - Data movement follows NCCL's algorithm: ring (NCCL's rings; with several NICs per node one
//     ring per rail so channels spread over the NICs), double binary tree (intra-node chain +
//     inter-node binary trees, src/graph/trees.cc), NVLS (GPU <-> NVSwitch multimem), NVLS-tree
//     and hierarchical (intra-node over NVLink, then across nodes rail by rail, then intra-node),
//     direct point-to-point for all-to-all and send/recv.
//   - Protocols: a flow carries payload / wire_efficiency bytes on the wire (LL: 8-byte lines with
//     4 bytes of data; LL128: 120 of 128 bytes; Simple: 1 — NCCL's line formats, src/include/
//     device.h), and its payload rate is capped at the rate NCCL's cost model gives the chosen
//     (algorithm, protocol, channels) — the per-channel/SM throughput limit. The simulation can be
//     slower than NCCL's model (link bottlenecks, contention), never faster.
//   - Latency: the model's latency of the chosen pair (tuning.cc, incl. the ring plateau factor)
//     is the collective's alpha; links themselves carry none (see sim/platform.hpp).
//   - BULK: one flow per (source GPU, destination GPU) pair of the collective, all started after
//     alpha, the collective ends when its last flow ends. STEP: NCCL's loop structure — chunks of
//     NCCL_BUFFSIZE-derived size, one flow per ring/tree step per edge, data dependencies between
//     steps, alpha spread over the steps of the dependency chain. Uncontended, both give the same
//     time within 3% (tests/sim); under contention STEP couples a ring to its slowest edge.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_settings.hpp"
#include "core/scenario.hpp"
#include "nccl/nccl_model.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

// The operations. NCCL's own enum, so plans and the cost model speak the same names.
using CollectiveOp = NcclCollective;

// Names as nccl-tests binaries and the CLI spell them: allreduce, reducescatter, allgather,
// broadcast, reduce, alltoall, sendrecv.
const char* cli_name(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);
const std::vector<std::string>& collective_op_names();

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor.
// all_reduce 2(n-1)/n; reduce_scatter, all_gather, all_to_all (n-1)/n; broadcast, reduce,
// send_recv 1. n >= 1.
double bus_bandwidth_factor(CollectiveOp op, int n_ranks);

// How the data moves. ring/tree/nvls/nvls_tree/pat are NCCL's algorithms; hierarchical is the
// two-level scheme (intra-node reduce-scatter, inter-node all-reduce per rail, intra-node
// all-gather) that NCCL does not implement but training frameworks do; direct is NCCL's
// point-to-point (all_to_all, send_recv).
enum class Algorithm { ring, tree, nvls, nvls_tree, pat, hierarchical, direct };
const char* to_string(Algorithm a);
std::optional<Algorithm> parse_algorithm(std::string_view name);

// Payload bytes per wire byte of a protocol's line format: LL 0.5, LL128 120/128, Simple 1.
double wire_efficiency(NcclProto proto);

enum class Granularity { bulk, step };
const char* to_string(Granularity g);
std::optional<Granularity> parse_granularity(std::string_view name);

// One collective on one group.
struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::all_reduce;
  // Members in communicator rank order, as global GPU indices of the ClusterGraph (0-based,
  // node-major). Distinct, at least 1 (send_recv: at least 2).
  std::vector<int> gpus;
  // nccl-tests' "size": the whole buffer for all_reduce / broadcast / reduce, the gathered or
  // scattered total (n * count * typesize) for all_gather / reduce_scatter / all_to_all, the
  // message each member sends for send_recv. Bytes, >= 0.
  double bytes = 0;
  int root = 0;  // member index of the root (broadcast, reduce)
  Dtype dtype = Dtype::bf16;
  // send_recv: false = nccl-tests' pattern (member i sends to member i+1 mod n, all at once);
  // true = only member 0 sends to member 1 (a pipeline-parallel send).
  bool one_way = false;
  // Overrides of NCCL's choice (unset: the cost model decides under the engine's NcclSettings).
  std::optional<Algorithm> algorithm;
  std::optional<NcclProto> protocol;
  std::optional<int> channels;
  std::optional<Granularity> granularity;  // unset: the engine's default
  // true: no flows; the collective takes its uncontended time (cached per shape) as a delay.
  // For collectives whose links nothing else uses (e.g. tensor-parallel groups inside a node
  // when no other traffic crosses NVLink): thousands of them cost nothing to simulate.
  bool contention_free = false;
  std::string label;  // free text carried into results and traces
};

// How NCCL would run the request, fixed before any flow starts.
struct CollectivePlan {
  CollectiveOp op = CollectiveOp::all_reduce;
  int n_ranks = 0;
  int n_nodes = 0;  // distinct nodes spanned
  double bytes = 0;
  Algorithm algorithm = Algorithm::ring;
  NcclProto protocol = NcclProto::simple;
  int channels = 0;
  int paths = 0;               // distinct rings / trees the channels are spread over
  std::string chosen_by;       // "NCCL cost model", "NCCL_ALGO", "request", ...
  double model_time_s = 0;     // NCCL's predicted time of this (algorithm, protocol)
  double latency_s = 0;        // alpha of the whole collective
  double model_bw_time_s = 0;  // model_time_s - latency_s: the bandwidth part NCCL predicts
  double wire_efficiency = 1;  // payload bytes per wire byte of the protocol
  bool gpudirect_rdma = true;  // NICs read GPU memory (else staged through host memory)
  bool p2p_nvlink = true;      // peers in a node talk over NVLink (else through host memory)
  Granularity granularity = Granularity::bulk;
  std::vector<std::string> notes;  // choices worth reporting (e.g. "PAT simulated as ring")
};

// What the simulation measured for one collective.
struct CollectiveResult {
  CollectivePlan plan;
  std::string label;
  double start_s = 0;      // when it was started (all members present)
  double end_s = 0;        // when the last flow (and latency) ended; valid when completed
  bool completed = false;  // false: still running or hung (a down link on its path)
  long long flows = 0;     // flows simulated
  double wire_bytes = 0;   // bytes put on links' first hop, all flows
  double time_s() const { return end_s - start_s; }
  // nccl-tests' algbw = bytes / time and busbw = algbw * bus_bandwidth_factor, bytes/s.
  double alg_bw_Bps() const;
  double bus_bw_Bps() const;
};

}  // namespace clustersim::nccl
