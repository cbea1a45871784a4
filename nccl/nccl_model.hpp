// NCCL's own cost model and algorithm selection, as NCCL itself computes it
// (NVIDIA/nccl, tag v2.30.7-1: src/graph/tuning.cc ncclTopoTuneModel / ncclTopoGetAlgoTime,
// src/enqueue.cc updateCollCostTable / topoGetAlgoInfo). No SimGrid: this is the closed-form
// model NCCL uses to pick (algorithm, protocol, channels); sim/ then simulates the chosen
// algorithm as flows. Units: NCCL's own internal units are kept inside the tables (latency in
// microseconds, bandwidth in GB/s = 1e9 bytes/s) and converted to seconds / bytes at the API.
//
// Inputs mirror what NCCL knows after its topology search (src/graph/search.cc): per algorithm
// graph, the channel count and the bandwidth per channel inside a node (bwIntra) and across
// nodes (bwInter). derive_comm_info() approximates that search from the cluster hardware;
// callers may fill NcclCommInfo directly (e.g. from an NCCL_DEBUG=INFO log).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/nccl_settings.hpp"
#include "core/scenario.hpp"

namespace clustersim::nccl {

// NCCL functions (ncclFunc_t). all_to_all and send_recv are point-to-point in NCCL and have no
// entry in its tuning tables; NcclModel gives them a separate, documented estimate.
enum class NcclCollective {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  reduce,
  all_to_all,
  send_recv
};
const char* to_string(NcclCollective c);

// Compute-capability class (tuning.cc compCapIndex) and CPU vendor (llMaxBws row, net overhead).
using GpuArch = clustersim::GpuArch;
enum class CpuVendor { intel, amd };
const char* to_string(GpuArch a);

// One algorithm's topology graph as NCCL's search leaves it (struct ncclTopoGraph).
struct NcclGraphInfo {
  int n_channels = 0;           // graph->nChannels
  double bw_intra_GBps = 0;     // graph->bwIntra, per channel
  double bw_inter_GBps = 0;     // graph->bwInter, per channel
  double latency_inter_us = 0;  // graph->latencyInter (net plugin latency; 0 for IB)
  bool intra_nvlink = true;     // graph->typeIntra == LINK_NVL (else PCI latencies)
  // graph->sameChannels: every channel takes the same path (only Broadcast/Reduce ring latency
  // depends on it). False with several NICs per node, whose channels use different NICs.
  bool same_channels = false;
};

// What ncclTopoTuneModel knows about one communicator.
struct NcclCommInfo {
  int n_ranks = 0;
  int n_nodes = 0;  // ranks per node = n_ranks / n_nodes (NCCL's ppn, a float)
  GpuArch arch = GpuArch::hopper;
  CpuVendor cpu = CpuVendor::intel;
  NcclGraphInfo ring;              // graphs[NCCL_ALGO_RING]
  NcclGraphInfo tree;              // graphs[NCCL_ALGO_TREE]
  NcclGraphInfo nvls;              // graphs[NCCL_ALGO_NVLS] (also used for NVLSTree)
  int comm_channels = 0;           // comm->nChannels after NCCL_MIN/MAX_NCHANNELS (0 = ring's)
  int nvls_channels = 16;          // comm->nvlsChannels (NCCL_NVLS_NCHANNELS default 16, Hopper)
  bool nvls_supported = false;     // NVSwitch with multicast (Hopper SXM) and NCCL_NVLS_ENABLE
  bool collnet_supported = false;  // SHARP / CollNet plugin (not modelled: always false)
  // LL128 default-enable inputs (tuning.cc): typeInter <= PATH_PXN and typeIntra <= PATH_NVB.
  bool ll128_paths_ok = true;
  bool tree_pattern_is_plain_tree = false;  // maxTreePattern == NCCL_TOPO_PATTERN_TREE (x0.85)
  // Per-GPU link bandwidths (one direction, GB/s) for the point-to-point estimate of
  // all_to_all / send_recv, which NCCL's tuning tables do not cover. 0 = use the ring graph's
  // nChannels x bwIntra and nChannels x bwInter.
  double nvlink_GBps_per_gpu = 0;
  double net_GBps_per_gpu = 0;
};

// The hardware a communicator spans, for derive_comm_info().
struct NcclHardware {
  GpuArch arch = GpuArch::hopper;
  CpuVendor cpu = CpuVendor::intel;
  double nvlink_Bps_per_gpu = 0;  // one direction, bytes/s (ClusterGraph::nvlink_Bps_per_gpu)
  double net_Bps_per_gpu = 0;     // one direction, bytes/s (ClusterGraph::net_Bps_per_gpu)
  int nics_per_node = 1;
  int gpus_per_node = 8;
  bool nvswitch = true;        // GPUs of a node joined by NVLink/NVSwitch (else PCIe)
  bool gpudirect_rdma = true;  // NIC reads GPU memory directly (affects LL128 paths)
};

// Approximates NCCL's topology search (src/graph/search.cc ncclTopoCompute): per-channel speed
// taken from the sm90 speed arrays, channels = what the NVLink (one node) or NIC (several
// nodes) bandwidth carries, then duplicated (search.cc "dupChannels") with bandwidth halved,
// clamped by NCCL_MAX_NCHANNELS; comm_channels raised to NCCL_MIN_NCHANNELS. NVLS is supported
// on Hopper/Blackwell with NVSwitch unless NCCL_NVLS_ENABLE=0. Throws std::invalid_argument
// when n_ranks < 1, n_nodes < 1, n_ranks % n_nodes != 0 or a bandwidth is <= 0.
NcclCommInfo derive_comm_info(const NcclHardware& hw, int n_ranks, int n_nodes,
                              const NcclSettings& settings);

// One (algorithm, protocol) pair of the cost table.
struct NcclCandidate {
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  bool enabled = false;      // modelled, allowed by settings and with bandwidth > 0
  std::string why_disabled;  // e.g. "NCCL_ALGO excludes Tree", "NVLS needs SHARP across nodes"
  double latency_us = 0;     // comm->latencies[coll][a][p]
  double bus_bw_GBps = 0;    // busBw before conversion to algorithm bandwidth
  double algo_bw_GBps = 0;   // comm->bandwidths[coll][a][p] (0 when disabled)
  double time_us = -1;       // ncclTopoGetAlgoTime incl. corrections; -1 when disabled
};

// The result of NCCL's choice for one call.
struct NcclDecision {
  NcclCollective coll = NcclCollective::all_reduce;
  double bytes = 0;  // nBytes as NCCL sizes it (see NcclModel::decide)
  bool p2p = false;  // all_to_all / send_recv: no tuning table, algo/proto unset
  NcclAlgo algo = NcclAlgo::ring;
  NcclProto proto = NcclProto::simple;
  int n_channels = 0;                     // info->nMaxChannels after shrinking for small messages
  int n_threads = 0;                      // threads per channel (nWarps * 32)
  double time_s = 0;                      // predicted time of the chosen candidate
  std::vector<NcclCandidate> candidates;  // every (algo, proto) pair, in NCCL's enum order
};

class NcclModel {
 public:
  // Builds the latency and bandwidth tables for every function, algorithm and protocol the way
  // ncclTopoTuneModel does, then applies NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE from
  // `settings`. Throws std::invalid_argument on an inconsistent NcclCommInfo.
  NcclModel(NcclCommInfo comm, const NcclSettings& settings);

  // NCCL's choice and predicted time for one collective of `bytes` (the size nccl-tests
  // prints: the full buffer for all_reduce / broadcast / reduce, the total gathered or
  // scattered size n * count * typesize for all_gather / reduce_scatter / all_to_all, the
  // message for send_recv). `dtype` matters for FP8 (ring penalty, enqueue.cc).
  // Throws std::runtime_error when settings leave no algorithm/protocol (NCCL's
  // "No algorithm/protocol available").
  NcclDecision decide(NcclCollective coll, double bytes, Dtype dtype = Dtype::bf16) const;

  // Predicted time of one specific pair, seconds; -1 when that pair is disabled.
  double time_s(NcclCollective coll, NcclAlgo algo, NcclProto proto, double bytes,
                Dtype dtype = Dtype::bf16) const;
  // Table entries (tuning.cc comm->latencies / comm->bandwidths), µs and GB/s; bandwidth 0
  // means disabled.
  double latency_us(NcclCollective coll, NcclAlgo algo, NcclProto proto) const;
  double bandwidth_GBps(NcclCollective coll, NcclAlgo algo, NcclProto proto) const;

  const NcclCommInfo& comm() const { return comm_; }

 private:
  struct Entry {
    double latency_us = 0;
    double bus_bw_GBps = 0;
    double algo_bw_GBps = 0;
    bool modelled = false;
    std::string why_disabled;
  };
  static constexpr int kFuncs = 5;   // tuning table functions (broadcast..all_reduce)
  static constexpr int kAlgos = 7;   // NcclAlgo values
  static constexpr int kProtos = 3;  // NcclProto values
  const Entry& entry(NcclCollective coll, NcclAlgo algo, NcclProto proto) const;
  NcclDecision decide_p2p(NcclCollective coll, double bytes) const;
  // The steps of the constructor (indices as NCCL numbers functions, algorithms, protocols).
  void set_threads();
  const NcclGraphInfo& graph(int algo) const;
  void fill_entry(int coll, int algo, int proto);
  double bus_bandwidth(int coll, int algo, int proto) const;
  double latency(int coll, int algo, int proto) const;
  void apply_settings(const NcclSettings& settings);
  // Channels and threads per channel of the chosen pair (enqueue.cc topoGetAlgoInfo).
  std::pair<int, int> channels_and_threads(int algo, int proto, double bytes) const;

  NcclCommInfo comm_;
  Entry table_[kFuncs][kAlgos][kProtos];
  int max_threads_[kAlgos][kProtos] = {};
  long thread_threshold_[kAlgos][kProtos] = {};
};

// α-β closed form of a ring all-reduce (Patarasuk & Yuan 2009; Thakur et al. 2005):
//   t = 2(n-1)/n * bytes / bandwidth_Bps + 2(n-1) * alpha_s.
// Precondition: n >= 1, bandwidth_Bps > 0. Returns 0 for n == 1.
double ring_allreduce_alpha_beta_s(double bytes, int n, double bandwidth_Bps, double alpha_s);

}  // namespace clustersim::nccl
