// NCCL's tuning model (tuning.cc ncclTopoTuneModel, enqueue.cc topoGetAlgoInfo), from the
// constants of nccl/tuning_tables.hpp. No SimGrid here.
#include "nccl/nccl_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "nccl/tuning_tables.hpp"

namespace clustersim::nccl {

using namespace tuning;

const char* to_string(NcclCollective c) {
  switch (c) {
    case NcclCollective::all_reduce: return "all_reduce";
    case NcclCollective::reduce_scatter: return "reduce_scatter";
    case NcclCollective::all_gather: return "all_gather";
    case NcclCollective::broadcast: return "broadcast";
    case NcclCollective::reduce: return "reduce";
    case NcclCollective::all_to_all: return "all_to_all";
    case NcclCollective::send_recv: return "send_recv";
  }
  return "?";
}

const char* to_string(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return "volta";
    case GpuArch::ampere: return "ampere";
    case GpuArch::hopper: return "hopper";
    case GpuArch::blackwell: return "blackwell";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// The model

namespace {

// Whether ncclTopoTuneModel fills the (function, algorithm) pair at all.
bool tuned(int coll, int a) {
  if ((coll == kBroadcast || coll == kReduce) && a != kRing) return false;
  if ((coll == kReduceScatter || coll == kAllGather) && a != kPat && a != kRing && a != kNvls &&
      a != kCollNetDirect)
    return false;
  return !(coll == kAllReduce && a == kPat);
}

// Why a protocol of a tuned pair has no entry by construction, or nullptr.
const char* protocol_excluded(int coll, int a, int p, int n_nodes, int n_ranks) {
  if ((a == kNvls || a == kNvlsTree) && p != kSimple) return "NVLS runs the Simple protocol only";
  // PAT needs one GPU per node (ncclPatEnable).
  if ((coll == kReduceScatter || coll == kAllGather) && a == kPat &&
      (p != kSimple || n_nodes != n_ranks)) {
    return p != kSimple ? "PAT runs the Simple protocol only" : "PAT needs one GPU per node";
  }
  return nullptr;
}

// Steps of one ring pass of the function.
int ring_steps(int coll, int n_ranks) {
  return coll == kAllReduce                             ? 2 * (n_ranks - 1)
         : coll == kReduceScatter || coll == kAllGather ? n_ranks - 1
                                                        : n_ranks;
}

}  // namespace

NcclModel::NcclModel(NcclCommInfo comm, const NcclSettings& settings) : comm_(std::move(comm)) {
  if (comm_.n_ranks < 1 || comm_.n_nodes < 1 || comm_.n_nodes > comm_.n_ranks ||
      comm_.n_ranks % comm_.n_nodes != 0) {
    throw std::invalid_argument("NcclModel: n_nodes must divide n_ranks (" +
                                std::to_string(comm_.n_ranks) + " ranks on " +
                                std::to_string(comm_.n_nodes) + " nodes)");
  }
  if (comm_.n_ranks > 1 && comm_.ring.n_channels < 1) {
    throw std::invalid_argument("NcclModel: ring.n_channels must be >= 1");
  }
  if (comm_.comm_channels <= 0) comm_.comm_channels = comm_.ring.n_channels;
  set_threads();
  // Everything starts unmodelled (NCCL's comm is zero-initialised).
  for (auto& f : table_) {
    for (auto& a : f) {
      for (auto& e : a) e = Entry{0, 0, 0, false, "not modelled for this function"};
    }
  }
  if (comm_.n_ranks <= 1) return;
  for (int coll = 0; coll < kNumFuncs; ++coll) {
    for (int a = 0; a < kNumAlgos; ++a) {
      if (!tuned(coll, a)) continue;
      for (int p = 0; p < kNumProtos; ++p) fill_entry(coll, a, p);
    }
  }
  apply_settings(settings);
}

// Threads (tuning.cc ncclTopoTuneModel, NCCL_NTHREADS unset).
void NcclModel::set_threads() {
  const int ring_simple_threads = comm_.ring.bw_intra_GBps * comm_.ring.n_channels <= kPciBw_GBps
                                      ? kSimpleLowNThreads
                                      : kSimpleMaxNThreads;
  max_threads_[kRing][kSimple] = ring_simple_threads;
  max_threads_[kTree][kSimple] = kSimpleMaxNThreads;
  max_threads_[kCollNetDirect][kSimple] = max_threads_[kCollNetChain][kSimple] =
      max_threads_[kNvls][kSimple] = max_threads_[kNvlsTree][kSimple] = kMaxNThreads;
  max_threads_[kRing][kLL] = max_threads_[kTree][kLL] = kLLMaxNThreads;
  max_threads_[kRing][kLL128] = max_threads_[kTree][kLL128] = kLL128MaxNThreads;
  for (int a = 0; a < kNumAlgos; ++a) {
    thread_threshold_[a][kLL] = kLLThreadThreshold;
    thread_threshold_[a][kLL128] = kLL128ThreadThreshold;
    thread_threshold_[a][kSimple] = kSimpleThreadThreshold;
  }
  thread_threshold_[kRing][kLL] *= comm_.n_ranks;
  thread_threshold_[kCollNetDirect][kSimple] = kCollNetSimpleThreadThreshold;
  thread_threshold_[kCollNetChain][kSimple] = kCollNetSimpleThreadThreshold;
}

const NcclGraphInfo& NcclModel::graph(int a) const {
  if (a == kTree) return comm_.tree;
  if (a == kNvls || a == kNvlsTree) return comm_.nvls;
  return comm_.ring;  // Ring, PAT; CollNet graphs are not modelled
}

void NcclModel::fill_entry(int coll, int a, int p) {
  Entry& e = table_[coll][a][p];
  if (const char* why = protocol_excluded(coll, a, p, comm_.n_nodes, comm_.n_ranks)) {
    e.why_disabled = why;
    return;
  }
  if ((a == kNvls || a == kNvlsTree) && graph(a).n_channels < 2) {
    e.why_disabled = "NVLS needs at least 2 channels";
    return;
  }
  e.modelled = true;
  e.why_disabled.clear();
  e.bus_bw_GBps = bus_bandwidth(coll, a, p);
  // Bus -> algorithm bandwidth.
  double busBw = e.bus_bw_GBps;
  if (!(a != kRing && (coll == kAllGather || coll == kReduceScatter))) {
    double ratio = 1.0;
    if (a == kRing || a == kNvls || a == kNvlsTree) {
      ratio *= static_cast<double>(comm_.n_ranks) / ring_steps(coll, comm_.n_ranks);
    } else {
      ratio *= kTreeAlgoBwRatio;
    }
    busBw *= ratio;
  }
  e.algo_bw_GBps = busBw;
  e.latency_us = latency(coll, a, p);
}

// The bus bandwidth of one entry, GB/s (tuning.cc: graph bandwidth x channels, then the
// per-algorithm and per-protocol refinements).
double NcclModel::bus_bandwidth(int coll, int a, int p) const {
  const int nNodes = comm_.n_nodes;
  const int cc = compcap_index(comm_.arch);
  const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
  const int index1 = nNodes == 1 ? cc : (comm_.cpu == CpuVendor::amd ? 1 : 0);
  const double llMaxBw = kLlMaxBw_GBps[index1][index2];
  const double ppn = static_cast<double>(comm_.n_ranks) / nNodes;
  const NcclGraphInfo& gr = graph(a);
  const bool collnet = a == kCollNetDirect || a == kCollNetChain;
  double bw = nNodes <= 2 || collnet ? gr.bw_intra_GBps : gr.bw_inter_GBps;
  if (a == kNvls || a == kNvlsTree) {
    double intraBw = gr.bw_intra_GBps * kNvlsEfficiency[cc] * (gr.n_channels - 1) / gr.n_channels;
    if (coll == kAllReduce) {
      intraBw *= 2.0;  // AllReduce pipelines two operations
    } else {
      intraBw *= (ppn - 1) / ppn;
    }
    const double interBw = gr.bw_inter_GBps * ((nNodes <= 2 && a == kNvlsTree) ? 2 : 1);
    bw = std::min({intraBw, interBw,
                   a == kNvlsTree ? kPerChMaxNvlsTreeBw_GBps[cc][index2]
                                  : std::numeric_limits<double>::max()});
  }
  double busBw = gr.n_channels * bw;
  if (a == kRing && p == kLL) busBw = std::min(llMaxBw, busBw * kRingLLFactor);
  if (a == kRing && p == kLL128) {
    busBw =
        std::min(busBw * kRingLL128Factor, gr.n_channels * kPerChMaxRingLL128Bw_GBps[cc][index2]);
  }
  if (a == kTree && coll == kAllReduce) {
    busBw =
        std::min(busBw * kTreeAllReduceFactor, gr.n_channels * kPerChMaxTreeBw_GBps[cc][index2]);
  }
  if (a == kTree && p == kLL) busBw = std::min(busBw / kTreeLLDivisor, llMaxBw);
  if (a == kTree && p == kLL128) {
    busBw = std::min(busBw * (nNodes == 1 ? kTreeLL128OneNode : kTreeLL128MultiNode),
                     gr.n_channels * kPerChMaxTreeLL128Bw_GBps[cc][index2]);
  }
  if (a == kTree && comm_.tree_pattern_is_plain_tree) busBw *= kPlainTreePatternFactor;
  if (a == kPat) busBw *= kPatFactor;
  if (collnet) busBw = 0;  // CollNet (SHARP) is not modelled: no plugin
  // NVLS / CollNetDirect AllGather and ReduceScatter across nodes need CollNet.
  if ((a == kNvls || a == kCollNetDirect) && p == kSimple &&
      (coll == kAllGather || coll == kReduceScatter) && nNodes > 1) {
    busBw = 0;
  }
  return busBw;
}

// The latency of one entry, microseconds (tuning.cc baseLat + hwLat per step or tree level).
double NcclModel::latency(int coll, int a, int p) const {
  const int nRanks = comm_.n_ranks;
  const int nNodes = comm_.n_nodes;
  const NcclGraphInfo& gr = graph(a);
  const int intraHw = gr.intra_nvlink ? kHwNvlink : kHwPci;
  const int hw = nNodes == 1 ? intraHw : kHwNet;
  const double ppn = static_cast<double>(nRanks) / nNodes;
  const int nsteps = ring_steps(coll, nRanks);
  double lat = kBaseLat_us[a][p];
  double intraLat = kHwLat_us[intraHw][a][p];
  // With ppn = 1 latencies are fully exposed: use the Tree network latency.
  double interLat = ppn == 1 ? kHwLat_us[kHwNet][kTree][p] : kHwLat_us[kHwNet][a][p];
  interLat += gr.latency_inter_us;
  if (p == kSimple) interLat += gr.latency_inter_us;  // flush

  if (a == kRing) {
    double hwLat = kHwLat_us[hw][a][p];
    if (coll == kReduce || coll == kBroadcast) {
      if (gr.same_channels) {
        lat += hwLat;
      } else {
        if (p == kSimple) hwLat = kHwLat_us[hw][kTree][p];
        lat += nsteps * hwLat;
      }
    } else {
      double netOverhead = 0.0;
      if (nNodes > 1) {
        netOverhead = comm_.cpu == CpuVendor::amd ? kNetOverheadAmd_us : kNetOverheadIntel_us;
        if (p == kSimple) netOverhead *= kNetOverheadSimpleFactor;
      }
      intraLat = std::max(intraLat, netOverhead);
      const int nInterSteps = nNodes == 1 ? 0 : coll == kAllReduce ? 2 * (nNodes - 1) : nNodes - 1;
      lat += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
    }
  } else if (a == kTree) {
    if (coll == kAllReduce) {
      lat += 2 * ((nRanks / nNodes - 1) * intraLat + log2i(nNodes) * interLat);
    }
  } else if (a == kCollNetDirect) {
    lat += 2 * (std::min(1, nRanks / nNodes - 1) * intraLat +
                (nRanks / nNodes - 1) * kCollNetArityLat_us) +
           interLat;
  } else if (a == kCollNetChain) {
    lat += 2 * (nRanks / nNodes - 1) * intraLat + interLat;
  } else if (a == kNvls) {
    lat = intraLat;
    if (nNodes > 1) lat += interLat;
  } else if (a == kNvlsTree) {
    lat += intraLat + 2 * log2i(nNodes) * interLat;
  } else if (a == kPat) {
    if (coll == kAllGather || coll == kReduceScatter) {
      lat += log2i(nNodes) * (interLat / kPatInterLatDivisor) + nRanks * kPatPerRank_us;
    }
  }
  return lat;
}

// Enable/disable: NCCL_PROTO, NCCL_ALGO, LL128 auto rule, structural disables.
void NcclModel::apply_settings(const NcclSettings& settings) {
  bool proto_allowed[kNumProtos] = {true, true, true};
  const bool proto_given = !settings.protos.empty();
  if (proto_given) {
    for (int p = 0; p < kNumProtos; ++p) {
      proto_allowed[p] = std::find(settings.protos.begin(), settings.protos.end(), proto_of(p)) !=
                         settings.protos.end();
    }
  }
  bool algo_allowed[kNumAlgos];
  for (int a = 0; a < kNumAlgos; ++a) {
    algo_allowed[a] =
        settings.algos.empty() ||
        std::find(settings.algos.begin(), settings.algos.end(), algo_of(a)) != settings.algos.end();
  }
  const int nNodes = comm_.n_nodes;
  for (int c = 0; c < kNumFuncs; ++c) {
    for (int a = 0; a < kNumAlgos; ++a) {
      std::string algo_off;
      if (!algo_allowed[a]) algo_off = std::string("NCCL_ALGO excludes ") + to_string(algo_of(a));
      if (nNodes == 1 && a == kNvlsTree) algo_off = "NVLSTree needs several nodes";
      if (a == kCollNetDirect || a == kCollNetChain) algo_off = "CollNet (SHARP) not available";
      if (a == kNvls && nNodes > 1) algo_off = "NVLS across nodes needs CollNet (SHARP)";
      for (int p = 0; p < kNumProtos; ++p) {
        Entry& e = table_[c][a][p];
        if (!e.modelled) continue;
        std::string off = algo_off;
        if (off.empty()) {
          if (proto_given && !proto_allowed[p]) {
            off = std::string("NCCL_PROTO excludes ") + to_string(proto_of(p));
          } else if (!proto_given && p == kLL128) {
            // Auto LL128 (LL128_C2C = 1 on Hopper+): typeInter <= PXN/PXB and typeIntra <= NVB.
            if (!comm_.ll128_paths_ok) {
              off = "LL128 off by default on this path (NIC or GPUs not on NVLink/PCIe switch)";
            }
          }
        }
        if (off.empty()) off = cost_table_skip(comm_, c, a);
        if (off.empty() && !(e.algo_bw_GBps > 0)) off = "no bandwidth on this topology";
        if (!off.empty()) {
          e.why_disabled = off;
          e.algo_bw_GBps = 0;
        }
      }
    }
  }
}

const NcclModel::Entry& NcclModel::entry(NcclCollective coll, NcclAlgo algo,
                                         NcclProto proto) const {
  return table_[nccl_func(coll)][nccl_algo(algo)][nccl_proto(proto)];
}

double NcclModel::latency_us(NcclCollective coll, NcclAlgo algo, NcclProto proto) const {
  return entry(coll, algo, proto).latency_us;
}

double NcclModel::bandwidth_GBps(NcclCollective coll, NcclAlgo algo, NcclProto proto) const {
  return entry(coll, algo, proto).algo_bw_GBps;
}

double NcclModel::time_s(NcclCollective coll, NcclAlgo algo, NcclProto proto, double bytes,
                         Dtype dtype) const {
  if (coll == NcclCollective::all_to_all || coll == NcclCollective::send_recv) {
    throw std::invalid_argument("NcclModel::time_s: point-to-point has no (algo, proto) table");
  }
  if (comm_.n_ranks <= 1) return algo == NcclAlgo::ring && proto == NcclProto::simple ? 0 : -1;
  const int func = nccl_func(coll);
  const int a = nccl_algo(algo);
  const int p = nccl_proto(proto);
  if (!cost_table_skip(comm_, func, a).empty()) return -1;
  const Entry& e = table_[func][a][p];
  double bw = e.algo_bw_GBps;
  double lat = e.latency_us;
  if (!(bw > 0)) return -1;
  const auto nBytes = static_cast<std::int64_t>(bytes);
  const int cc = compcap_index(comm_.arch);
  const int logSize = log2i(nBytes >> 6);
  if (a == kTree && func == kAllReduce && logSize >= 0 && logSize < 23) {
    bw *= kTreeCorrection[p][logSize];
  }
  // NVLSTree correction only on Blackwell with x86 CPUs (both vendors modelled are x86).
  if (a == kNvlsTree && func == kAllReduce && logSize >= 0 && logSize < 24 && cc >= kBlackwell) {
    bw *= kTreeCorrection[p][logSize];
  }
  if (a == kRing && p == kSimple && comm_.n_nodes > 1 && func == kAllReduce &&
      nBytes / (static_cast<std::int64_t>(comm_.comm_channels) * comm_.n_ranks) >=
          kRingPlateauMinBytesPerChannelRank) {
    lat *= cc < kAmpere ? kRingPlateauFactorPreAmpere : kRingPlateauFactor;
  }
  // latCount = numPipeOps = 1 for a single (non-aggregated) call.
  double time_us = lat + static_cast<double>(nBytes) / (1000 * bw);
  if (dtype == Dtype::fp8 && a == kRing && comm_.n_ranks > kFp8RingMaxRanks) {
    time_us *= kFp8RingPenalty;
  }
  return time_us / kUsPerS;
}

NcclDecision NcclModel::decide(NcclCollective coll, double bytes, Dtype dtype) const {
  if (coll == NcclCollective::all_to_all || coll == NcclCollective::send_recv) {
    return decide_p2p(coll, bytes);
  }
  if (!(bytes >= 0)) throw std::invalid_argument("NcclModel::decide: bytes must be >= 0");
  NcclDecision d;
  d.coll = coll;
  d.bytes = bytes;
  const int func = nccl_func(coll);

  // Candidates in NCCL's enum order; the first strictly smaller time wins (topoGetAlgoInfo).
  double best = std::numeric_limits<double>::max();
  int best_a = -1, best_p = -1;
  for (int a = 0; a < kNumAlgos; ++a) {
    const std::string skip = comm_.n_ranks > 1 ? cost_table_skip(comm_, func, a) : "";
    for (int p = 0; p < kNumProtos; ++p) {
      const Entry& e = table_[func][a][p];
      NcclCandidate c;
      c.algo = algo_of(a);
      c.proto = proto_of(p);
      c.latency_us = e.latency_us;
      c.bus_bw_GBps = e.bus_bw_GBps;
      c.algo_bw_GBps = e.algo_bw_GBps;
      if (comm_.n_ranks <= 1) {
        const bool only = a == kRing && p == kSimple;
        c.enabled = only;
        c.time_us = only ? 0 : -1;
        c.why_disabled = only ? "" : "a single rank copies locally";
      } else if (!skip.empty()) {
        c.why_disabled = e.modelled ? skip : e.why_disabled;
      } else {
        const double t = time_s(coll, c.algo, c.proto, bytes, dtype);
        c.enabled = t >= 0;
        c.time_us = t >= 0 ? t * kUsPerS : -1;
        c.why_disabled = c.enabled ? "" : e.why_disabled;
      }
      if (c.enabled && c.time_us < best) {
        best = c.time_us;
        best_a = a;
        best_p = p;
      }
      d.candidates.push_back(std::move(c));
    }
  }
  if (best_a < 0) {
    throw std::runtime_error(std::string("No algorithm/protocol available for ") + to_string(coll) +
                             " (NCCL would fail with ncclInvalidUsage; check NCCL_ALGO / "
                             "NCCL_PROTO)");
  }
  d.algo = algo_of(best_a);
  d.proto = proto_of(best_p);
  d.time_s = best / kUsPerS;

  const auto [nc, nt] = channels_and_threads(best_a, best_p, bytes);
  d.n_channels = nc;
  d.n_threads = nt;
  return d;
}

std::pair<int, int> NcclModel::channels_and_threads(int best_a, int best_p, double bytes) const {
  const auto nBytes = static_cast<std::int64_t>(bytes);
  int nc = comm_.comm_channels;
  int nt = max_threads_[best_a][best_p];
  const long threshold = thread_threshold_[best_a][best_p];
  if (best_a == kNvls || best_a == kNvlsTree) {
    nc = comm_.n_nodes > 1 && best_a == kNvls ? std::min(comm_.nvls_channels, comm_.comm_channels)
                                              : comm_.nvls_channels;
  } else {
    while (nBytes < static_cast<std::int64_t>(nc) * nt * threshold) {
      if (nc >= 2) {
        --nc;
      } else {
        break;
      }
    }
  }
  if (best_a != kNvls && best_a != kNvlsTree && best_a != kCollNetDirect) {
    while (nBytes < static_cast<std::int64_t>(nc) * nt * threshold) {
      if (nt % 128 == 0) {
        nt /= 2;
      } else {
        break;
      }
    }
  }
  if (best_p == kSimple) {
    if (best_a == kRing) nt += kWarpSize;      // extra warp for sync
    if (best_a == kTree) nt += 4 * kWarpSize;  // split thread model
  }
  nt = nt / kWarpSize < 3 ? 3 * kWarpSize : nt;
  if (best_a == kTree || best_a == kPat) nt = kMaxNThreads;
  return {nc, nt};
}

// Point-to-point (all_to_all, send_recv) has no entry in NCCL's tuning tables. Our own estimate,
// not NCCL's: one Ring Simple base latency plus one hop's hardware latency (NET when the
// communicator spans nodes, else NVLINK/PCI, from the same tuning.cc tables), plus the bytes
// each rank sends over the slower of its NVLink share and its network share.
NcclDecision NcclModel::decide_p2p(NcclCollective coll, double bytes) const {
  if (!(bytes >= 0)) throw std::invalid_argument("NcclModel::decide: bytes must be >= 0");
  NcclDecision d;
  d.coll = coll;
  d.bytes = bytes;
  d.p2p = true;
  d.algo = NcclAlgo::ring;
  d.proto = NcclProto::simple;
  d.n_channels = comm_.comm_channels;
  d.n_threads = kSimpleMaxNThreads;
  const int n = comm_.n_ranks;
  if (n <= 1) return d;
  const bool multi_node = comm_.n_nodes > 1;
  const int hw = multi_node ? kHwNet : (comm_.ring.intra_nvlink ? kHwNvlink : kHwPci);
  double lat_us = kBaseLat_us[kRing][kSimple] + kHwLat_us[hw][kRing][kSimple];
  if (multi_node) lat_us += 2 * comm_.ring.latency_inter_us;
  const double intra_GBps = comm_.nvlink_GBps_per_gpu > 0
                                ? comm_.nvlink_GBps_per_gpu
                                : comm_.ring.n_channels * comm_.ring.bw_intra_GBps;
  const double inter_GBps = comm_.net_GBps_per_gpu > 0
                                ? comm_.net_GBps_per_gpu
                                : comm_.ring.n_channels * comm_.ring.bw_inter_GBps;
  double transfer_us = 0;
  if (coll == NcclCollective::send_recv) {
    transfer_us = bytes / (1000 * (multi_node ? inter_GBps : intra_GBps));
  } else {
    // nccl-tests alltoall size = each rank's buffer: it keeps 1/n, sends the rest, (ppn - 1)/n
    // over NVLink and (n - ppn)/n over the network, both at once.
    const double ppn = static_cast<double>(n) / comm_.n_nodes;
    const double intra_bytes = bytes * (ppn - 1) / n;
    const double inter_bytes = bytes * (n - ppn) / n;
    transfer_us = std::max(intra_bytes / (1000 * intra_GBps),
                           inter_bytes > 0 ? inter_bytes / (1000 * inter_GBps) : 0.0);
  }
  d.time_s = (lat_us + transfer_us) / kUsPerS;
  return d;
}

double ring_allreduce_alpha_beta_s(double bytes, int n, double bandwidth_Bps, double alpha_s) {
  if (n < 1) throw std::invalid_argument("ring_allreduce_alpha_beta_s: n must be >= 1");
  if (!(bandwidth_Bps > 0)) {
    throw std::invalid_argument("ring_allreduce_alpha_beta_s: bandwidth_Bps must be > 0");
  }
  if (n == 1) return 0;
  const double steps = 2.0 * (n - 1);
  return steps / n * bytes / bandwidth_Bps + steps * alpha_s;
}

}  // namespace clustersim::nccl
