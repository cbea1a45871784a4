// NCCL's tuning model, transcribed from NVIDIA/nccl tag v2.30.7-1. Every constant below is
// NCCL's own, with the file it comes from; array layouts follow NCCL's enums so that each table
// can be compared line by line with the source:
//   algorithms (src/include/plugin/nccl_tuner.h): Tree 0, Ring 1, CollNetDirect 2,
//     CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6;
//   protocols: LL 0, LL128 1, Simple 2;
//   functions (src/include/nccl_common.h): Broadcast 0, Reduce 1, AllGather 2,
//     ReduceScatter 3, AllReduce 4;
//   hardware (tuning.cc): NVLINK 0, PCI 1, NET 2.
// No SimGrid here.
#include "sim/nccl_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace clustersim::sim {

namespace {

// --- Indices as NCCL numbers them -------------------------------------------------------------
constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4, kNvlsTree = 5,
              kPat = 6;
constexpr int kNumAlgos = 7;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kNumProtos = 3;
constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3, kAllReduce = 4;
constexpr int kNumFuncs = 5;
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
constexpr int kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3;

// --- tuning.cc ncclTunerConstantsDefaults (v2.30.7-1) ------------------------------------------
// baseLatencies [algo][proto], microseconds.
constexpr double kBaseLat_us[kNumAlgos][kNumProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},  // Tree, Ring
    {0, 0, 0},        {0, 0, 0},         // CollNetDirect, CollNetChain
    {0, 0, 0},        {0, 0, 0},         // NVLS, NVLSTree
    {8.0, 8.0, 8.0}};                    // PAT
// hwLatencies [hw][algo][proto], microseconds.
constexpr double kHwLat_us[3][kNumAlgos][kNumProtos] = {
    // NVLINK
    {{0.6, 1.25, 4.0},
     {0.6, 1.9, 3.4},
     {0, 0, 3.7},
     {0, 0, 2.8},
     {0, 0, 25},
     {0, 0, 25},
     {0, 0, 4.0}},
    // PCI
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    // NET
    {{5.0, 8.5, 14},
     {2.7, 4.0, 14.0},
     {0, 0, 31},
     {0, 0, 30},
     {0, 0, 18},
     {0, 0, 20.9},
     {0, 0, 14}}};
// llMaxBws [row][nodes index], GB/s. Row: compCap index on one node; on several nodes row 0
// for Intel CPUs and row 1 for AMD. Nodes index: 1 node, 2 nodes, more.
constexpr double kLlMaxBw_GBps[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws
// [compCap][nodes index], GB/s per channel.
constexpr double kPerChMaxRingLL128Bw_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChMaxTreeLL128Bw_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChMaxNvlsTreeBw_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// nvlsEfficiency [compCap], dimensionless.
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// getNetOverhead(): network post overhead per inter-node ring step, microseconds.
constexpr double kNetOverheadIntel_us = 1.0;
constexpr double kNetOverheadAmd_us = 2.0;
// Simple protocol triples the net overhead (tuning.cc "if (p == NCCL_PROTO_SIMPLE) netOverhead *=
// 3").
constexpr double kNetOverheadSimpleFactor = 3.0;
// Bandwidth refinements in ncclTopoTuneModel, dimensionless.
constexpr double kRingLLFactor = 0.5;            // Ring LL: busBw * .5
constexpr double kRingLL128Factor = 0.92;        // Ring LL128: busBw * 0.92 (~120/128)
constexpr double kTreeAllReduceFactor = 0.92;    // Tree AllReduce: busBw * .92
constexpr double kTreeLLDivisor = 3.8;           // Tree LL: busBw / 3.8
constexpr double kTreeLL128OneNode = 7.0 / 9.0;  // Tree LL128 on one node
constexpr double kTreeLL128MultiNode = 120.0 / 128.0;
constexpr double kPlainTreePatternFactor = 0.85;  // maxTreePattern == NCCL_TOPO_PATTERN_TREE
constexpr double kPatFactor = 0.75;               // PAT: busBw * .75
constexpr double kTreeAlgoBwRatio = 0.5;          // bus -> algo bandwidth for Tree/CollNet/PAT
// PAT latency: log2(nNodes) * interLat / 3.5 + nRanks * 2.8 us.
constexpr double kPatInterLatDivisor = 3.5;
constexpr double kPatPerRank_us = 2.8;
// CollNetDirect: "0.4 us arity serialization latency" per local rank.
constexpr double kCollNetArityLat_us = 0.4;
// ncclTopoGetAlgoTime: treeCorrectionFactor [proto][log2(nBytes/64)], dimensionless.
constexpr double kTreeCorrection[kNumProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// Ring Simple multi-node AllReduce "plateau effect": latency x1.4 (compCap >= 80) or x1.9,
// when nBytes / (nChannels * nRanks) >= 64 bytes.
constexpr double kRingPlateauFactor = 1.4;
constexpr double kRingPlateauFactorPreAmpere = 1.9;
constexpr std::int64_t kRingPlateauMinBytesPerChannelRank = 64;
// enqueue.cc updateCollCostTable: FP8 Ring over more than 8 ranks x1024 ("any factor large
// enough to act as a partition between lossy and non-lossy algos").
constexpr double kFp8RingPenalty = 1024.0;
constexpr int kFp8RingMaxRanks = 8;

// --- Threads and channels (src/include/device.h, comm.h, graph/topo.h, v2.30.7-1) --------------
constexpr int kWarpSize = 32;
constexpr int kMaxNThreads = 640;            // NCCL_MAX_NTHREADS
constexpr int kSimpleMaxNThreads = 512;      // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLLMaxNThreads = 512;          // NCCL_LL_MAX_NTHREADS
constexpr int kLL128MaxNThreads = 640;       // NCCL_LL128_MAX_NTHREADS
constexpr int kSimpleLowNThreads = 256;      // tuning.cc: ring Simple default when bw <= PCI_BW
constexpr double kPciBw_GBps = 12.0;         // PCI_BW (graph/topo.h, "PCI Gen3 x16")
constexpr long kLLThreadThreshold = 8;       // NCCL_LL_THREAD_THRESHOLD (comm.h)
constexpr long kLL128ThreadThreshold = 8;    // NCCL_LL128_THREAD_THRESHOLD
constexpr long kSimpleThreadThreshold = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
constexpr long kCollNetSimpleThreadThreshold = 512;  // tuning.cc collnet override
constexpr int kMaxChannels = 64;                     // MAXCHANNELS (device.h, v2.30.7-1)
constexpr int kMaxNvlsArity = 32;                    // NCCL_MAX_NVLS_ARITY (device.h)
constexpr int kNvlsChannelsSm90 = 16;                // NVLS_NCHANNELS_SM90 (transport/nvls.cc)
constexpr int kNvlsChannelsSm100 = 32;               // NVLS_NCHANNELS_SM100, several nodes
constexpr int kNvlsChannelsSm100Nvl = 24;            // NVLS_NCHANNELS_SM100_NVL, one node

// --- Topology search speeds (src/graph/search.cc, v2.30.7-1), GB/s per channel -----------------
constexpr double kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                  9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
constexpr double kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                  7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                      15.0, 12.0, 11.0, 6.0,  3.0};
constexpr double kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr double kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                       40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr double kSm100SpeedInter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                       20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// ncclTopoDupChannels: duplicate when bwIntra >= 25, except on compCap > 80 when bwIntra < 50
// and nChannels > 4.
constexpr double kDupMinBw_GBps = 25.0;
constexpr double kDupSm90MaxBw_GBps = 50.0;
constexpr int kDupSm90MaxChannels = 4;
// connect.cc ncclTopoPostset: Hopper+ multi-node rings with bwIntra > 45 and < 16 channels are
// doubled ("4 compute channels per search channel").
constexpr double kPostsetDoubleMinBw_GBps = 45.0;
constexpr int kPostsetDoubleMaxChannels = 16;

// --- Unit conversion -----------------------------------------------------------------------------
constexpr double kBytesPerGB = 1e9;  // NCCL's GB/s are 1e9 bytes/s (time = bytes / (1000 bw) us)
constexpr double kUsPerS = 1e6;

int log2i(std::int64_t n) {  // NCCL log2Down: floor(log2(n)), -1 for n <= 0
  if (n <= 0) return -1;
  int r = -1;
  while (n) {
    n >>= 1;
    ++r;
  }
  return r;
}

int compcap_index(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return kVolta;
    case GpuArch::ampere: return kAmpere;
    case GpuArch::hopper: return kHopper;
    case GpuArch::blackwell: return kBlackwell;
  }
  return kHopper;
}

int nccl_algo(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::tree: return kTree;
    case NcclAlgo::ring: return kRing;
    case NcclAlgo::collnet_direct: return kCollNetDirect;
    case NcclAlgo::collnet_chain: return kCollNetChain;
    case NcclAlgo::nvls: return kNvls;
    case NcclAlgo::nvls_tree: return kNvlsTree;
    case NcclAlgo::pat: return kPat;
  }
  return kRing;
}

NcclAlgo algo_of(int a) {
  static constexpr NcclAlgo map[kNumAlgos] = {NcclAlgo::tree,
                                              NcclAlgo::ring,
                                              NcclAlgo::collnet_direct,
                                              NcclAlgo::collnet_chain,
                                              NcclAlgo::nvls,
                                              NcclAlgo::nvls_tree,
                                              NcclAlgo::pat};
  return map[a];
}

int nccl_proto(NcclProto p) {
  switch (p) {
    case NcclProto::ll: return kLL;
    case NcclProto::ll128: return kLL128;
    case NcclProto::simple: return kSimple;
  }
  return kSimple;
}

NcclProto proto_of(int p) {
  return p == kLL ? NcclProto::ll : p == kLL128 ? NcclProto::ll128 : NcclProto::simple;
}

int nccl_func(NcclCollective c) {
  switch (c) {
    case NcclCollective::broadcast: return kBroadcast;
    case NcclCollective::reduce: return kReduce;
    case NcclCollective::all_gather: return kAllGather;
    case NcclCollective::reduce_scatter: return kReduceScatter;
    case NcclCollective::all_reduce: return kAllReduce;
    case NcclCollective::all_to_all:
    case NcclCollective::send_recv: break;
  }
  throw std::invalid_argument(std::string("NCCL has no tuning table for ") + to_string(c));
}

// Whether updateCollCostTable considers the pair at all (else NCCL_ALGO_PROTO_IGNORE), with
// the reason.
std::string cost_table_skip(const NcclCommInfo& c, int func, int a) {
  if (a == kCollNetDirect || a == kCollNetChain) return "CollNet (SHARP) not available";
  const int local_ranks = c.n_ranks / c.n_nodes;
  if ((a == kNvls || a == kNvlsTree) &&
      (!c.nvls_supported || (func != kAllReduce && local_ranks > kMaxNvlsArity))) {
    return "NVLS not supported (no NVSwitch multicast, NCCL_NVLS_ENABLE=0 or too many ranks)";
  }
  if (a == kNvls && c.n_nodes > 1) return "NVLS across nodes needs CollNet (SHARP)";
  return "";
}

}  // namespace

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
// Topology search approximation

namespace {

struct Speeds {
  const double* values;
  std::size_t count;
};

Speeds speeds_for(GpuArch arch, bool inter) {
  switch (arch) {
    case GpuArch::blackwell:
      return inter ? Speeds{kSm100SpeedInter, std::size(kSm100SpeedInter)}
                   : Speeds{kSm100SpeedIntra, std::size(kSm100SpeedIntra)};
    case GpuArch::hopper:
      return inter ? Speeds{kSm90SpeedInter, std::size(kSm90SpeedInter)}
                   : Speeds{kSm90SpeedIntra, std::size(kSm90SpeedIntra)};
    default:
      return inter ? Speeds{kSpeedInter, std::size(kSpeedInter)}
                   : Speeds{kSpeedIntra, std::size(kSpeedIntra)};
  }
}

// The (channels, speed) pair of the speed array that carries the most total bandwidth within
// the per-GPU NVLink budget (each channel crosses every GPU's NVLink once) and, across nodes,
// within the NICs (each channel leaves through one NIC). Ties keep the faster speed, as the
// search tries speeds from the top.
std::pair<int, double> search_channels(Speeds speeds, int max_channels, double nvlink_GBps,
                                       bool use_nvlink, double nic_GBps, int nics) {
  int best_c = 0;
  double best_s = 0;
  for (std::size_t i = 0; i < speeds.count; ++i) {
    const double s = speeds.values[i];
    long c = max_channels;
    if (use_nvlink) c = std::min<long>(c, static_cast<long>(std::floor(nvlink_GBps / s + 1e-9)));
    if (nics > 0) c = std::min<long>(c, nics * static_cast<long>(std::floor(nic_GBps / s + 1e-9)));
    if (c >= 1 && c * s > best_c * best_s + 1e-9) {
      best_c = static_cast<int>(c);
      best_s = s;
    }
  }
  if (best_c == 0) {  // slower than the slowest speed: one channel at the smallest speed
    best_c = 1;
    best_s = speeds.values[speeds.count - 1];
  }
  return {best_c, best_s};
}

}  // namespace

NcclCommInfo derive_comm_info(const NcclHardware& hw, int n_ranks, int n_nodes,
                              const NcclSettings& settings) {
  if (n_ranks < 1) throw std::invalid_argument("derive_comm_info: n_ranks must be >= 1");
  if (n_nodes < 1 || n_nodes > n_ranks || n_ranks % n_nodes != 0) {
    throw std::invalid_argument("derive_comm_info: n_nodes must divide n_ranks (" +
                                std::to_string(n_ranks) + " ranks on " + std::to_string(n_nodes) +
                                " nodes)");
  }
  if (!(hw.nvlink_Bps_per_gpu > 0)) {
    throw std::invalid_argument("derive_comm_info: nvlink_Bps_per_gpu must be > 0");
  }
  if (n_nodes > 1 && !(hw.net_Bps_per_gpu > 0)) {
    throw std::invalid_argument("derive_comm_info: net_Bps_per_gpu must be > 0");
  }
  if (hw.nics_per_node < 1 || hw.gpus_per_node < 1) {
    throw std::invalid_argument("derive_comm_info: nics_per_node and gpus_per_node must be >= 1");
  }
  NcclCommInfo ci;
  ci.n_ranks = n_ranks;
  ci.n_nodes = n_nodes;
  ci.arch = hw.arch;
  ci.cpu = hw.cpu;
  const int ppn = n_ranks / n_nodes;
  const bool multi_node = n_nodes > 1;
  const double nvlink_GBps = hw.nvlink_Bps_per_gpu / kBytesPerGB;
  const double nic_GBps = hw.net_Bps_per_gpu * hw.gpus_per_node / hw.nics_per_node / kBytesPerGB;
  // NICs of a node the communicator's ranks sit next to (one rank per node uses one NIC).
  const int nics_usable =
      multi_node ? std::clamp((ppn * hw.nics_per_node + hw.gpus_per_node - 1) / hw.gpus_per_node, 1,
                              hw.nics_per_node)
                 : 0;
  ci.nvlink_GBps_per_gpu = nvlink_GBps;
  ci.net_GBps_per_gpu = hw.net_Bps_per_gpu / kBytesPerGB;

  // Ring graph (init.cc: ringGraph->maxChannels = MAXCHANNELS / 2).
  const int ring_max = kMaxChannels / 2;
  auto [c, s] = search_channels(speeds_for(hw.arch, multi_node), ring_max, nvlink_GBps, ppn > 1,
                                nic_GBps, nics_usable);
  // ncclTopoDupChannels.
  const bool sm90_plus = hw.arch == GpuArch::hopper || hw.arch == GpuArch::blackwell;
  if (s >= kDupMinBw_GBps && !(sm90_plus && s < kDupSm90MaxBw_GBps && c > kDupSm90MaxChannels)) {
    const int dup = std::min(2 * c, ring_max);
    s /= (dup + c - 1) / c;
    c = dup;
  }
  ci.ring.n_channels = c;
  ci.ring.bw_intra_GBps = s;
  ci.ring.bw_inter_GBps = s;
  ci.ring.intra_nvlink = hw.nvswitch;
  ci.ring.same_channels = !multi_node || hw.nics_per_node == 1;
  // Tree graph: init.cc treeGraph min/maxChannels = ringGraph->nChannels; same speeds.
  ci.tree = ci.ring;

  // NVLS graph: one channel per GPU head (maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs), one node
  // forces minChannels = maxChannels), never duplicated. Patterns other than Ring get the NVLink
  // budget scaled by ndevs / (ndevs - 1) (search.cc ncclTopoCompute: "algo other than RING do
  // not need to close to the starting NET"). Pass 2 then raises bwInter one speed at a time
  // while it is below 2 x bwIntra (search.cc, NVLS branch), as far as the NICs allow.
  const int nvls_c = std::min(kMaxNvlsArity, ppn);
  const Speeds nvls_speeds = speeds_for(hw.arch, multi_node);
  const double nvls_budget_GBps = ppn > 1 ? nvlink_GBps * ppn / (ppn - 1) : nvlink_GBps;
  const double nvls_nic_GBps =
      multi_node ? nic_GBps * nics_usable / nvls_c : std::numeric_limits<double>::max();
  std::size_t nvls_i = nvls_speeds.count;
  for (std::size_t i = 0; i < nvls_speeds.count; ++i) {
    const double sp = nvls_speeds.values[i];
    if (sp * nvls_c <= nvls_budget_GBps + 1e-9 && sp <= nvls_nic_GBps + 1e-9) {
      nvls_i = i;
      break;
    }
  }
  const double nvls_s = nvls_i < nvls_speeds.count ? nvls_speeds.values[nvls_i] : 0;
  double nvls_inter = nvls_s;
  for (std::size_t i = nvls_i; nvls_s > 0 && i > 0 && nvls_inter < 2 * nvls_s;) {
    --i;
    if (nvls_speeds.values[i] > nvls_nic_GBps + 1e-9) break;
    nvls_inter = nvls_speeds.values[i];
  }
  ci.nvls.n_channels = nvls_c;
  ci.nvls.bw_intra_GBps = nvls_s;
  ci.nvls.bw_inter_GBps = nvls_inter;
  ci.nvls.intra_nvlink = hw.nvswitch;
  ci.nvls_supported =
      sm90_plus && hw.nvswitch && nvls_c >= 2 && nvls_s > 0 && settings.nvls_enable.value_or(true);
  ci.nvls_channels = hw.arch == GpuArch::blackwell
                         ? (multi_node ? kNvlsChannelsSm100 : kNvlsChannelsSm100Nvl)
                         : kNvlsChannelsSm90;

  // comm->nChannels (connect.cc ncclTopoPostset): rings duplicated once more, doubled again on
  // Hopper+ multi-node fast rings, then NCCL_MAX_NCHANNELS and NCCL_MIN_NCHANNELS.
  int comm_c = std::min(kMaxChannels, 2 * ci.ring.n_channels);
  if (sm90_plus && multi_node && ci.ring.bw_intra_GBps > kPostsetDoubleMinBw_GBps &&
      comm_c < kPostsetDoubleMaxChannels) {
    comm_c = std::min(kMaxChannels, 2 * comm_c);
  }
  if (settings.max_channels > 0) comm_c = std::min(comm_c, settings.max_channels);
  if (settings.min_channels > 0)
    comm_c = std::max(comm_c, std::min(settings.min_channels, kMaxChannels));
  ci.comm_channels = comm_c;

  // LL128 default: typeIntra <= PATH_NVB (NVLink) and typeInter <= PATH_PXN on Hopper+
  // (<= PATH_PXB before): a NIC reached without GPUDirect RDMA goes through the CPU (PATH_PHB).
  ci.ll128_paths_ok = hw.nvswitch && (!multi_node || hw.gpudirect_rdma);
  return ci;
}

// ---------------------------------------------------------------------------------------------
// The model

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

  const int nRanks = comm_.n_ranks;
  const int nNodes = comm_.n_nodes;
  const int cc = compcap_index(comm_.arch);
  const bool amd = comm_.cpu == CpuVendor::amd;

  // Threads (tuning.cc ncclTopoTuneModel, NCCL_NTHREADS unset).
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
  thread_threshold_[kRing][kLL] *= nRanks;
  thread_threshold_[kCollNetDirect][kSimple] = kCollNetSimpleThreadThreshold;
  thread_threshold_[kCollNetChain][kSimple] = kCollNetSimpleThreadThreshold;

  // Everything starts unmodelled (NCCL's comm is zero-initialised).
  for (auto& f : table_) {
    for (auto& a : f) {
      for (auto& e : a) e = Entry{0, 0, 0, false, "not modelled for this function"};
    }
  }
  if (nRanks <= 1) return;

  const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
  const int index1 = nNodes == 1 ? cc : (amd ? 1 : 0);
  const double llMaxBw = kLlMaxBw_GBps[index1][index2];
  const double perChMaxTreeBw = kPerChMaxTreeBw_GBps[cc][index2];
  const double perChMaxRingLL128Bw = kPerChMaxRingLL128Bw_GBps[cc][index2];
  const double perChMaxTreeLL128Bw = kPerChMaxTreeLL128Bw_GBps[cc][index2];
  const double perChMaxNVLSTreeBw = kPerChMaxNvlsTreeBw_GBps[cc][index2];
  const double ppn = static_cast<double>(nRanks) / nNodes;

  const auto graph = [&](int a) -> const NcclGraphInfo& {
    if (a == kTree) return comm_.tree;
    if (a == kNvls || a == kNvlsTree) return comm_.nvls;
    return comm_.ring;  // Ring, PAT; CollNet graphs are not modelled
  };

  for (int coll = 0; coll < kNumFuncs; ++coll) {
    const int nsteps = coll == kAllReduce                             ? 2 * (nRanks - 1)
                       : coll == kReduceScatter || coll == kAllGather ? nRanks - 1
                                                                      : nRanks;
    for (int a = 0; a < kNumAlgos; ++a) {
      if ((coll == kBroadcast || coll == kReduce) && a != kRing) continue;
      if ((coll == kReduceScatter || coll == kAllGather) && a != kPat && a != kRing && a != kNvls &&
          a != kCollNetDirect)
        continue;
      if (coll == kAllReduce && a == kPat) continue;
      const NcclGraphInfo& gr = graph(a);
      const int intraHw = gr.intra_nvlink ? kHwNvlink : kHwPci;
      const int hw = nNodes == 1 ? intraHw : kHwNet;

      for (int p = 0; p < kNumProtos; ++p) {
        Entry& e = table_[coll][a][p];
        if ((a == kNvls || a == kNvlsTree) && p != kSimple) {
          e.why_disabled = "NVLS runs the Simple protocol only";
          continue;
        }
        // PAT needs one GPU per node (ncclPatEnable).
        if ((coll == kReduceScatter || coll == kAllGather) && a == kPat &&
            (p != kSimple || nNodes != nRanks)) {
          e.why_disabled =
              p != kSimple ? "PAT runs the Simple protocol only" : "PAT needs one GPU per node";
          continue;
        }
        e.modelled = true;
        e.why_disabled.clear();
        const bool collnet = a == kCollNetDirect || a == kCollNetChain;
        double bw = nNodes <= 2 || collnet ? gr.bw_intra_GBps : gr.bw_inter_GBps;
        if (a == kNvls || a == kNvlsTree) {
          if (gr.n_channels < 2) {  // NVLS needs at least 2 channels
            e.modelled = false;
            e.why_disabled = "NVLS needs at least 2 channels";
            continue;
          }
          double intraBw =
              gr.bw_intra_GBps * kNvlsEfficiency[cc] * (gr.n_channels - 1) / gr.n_channels;
          if (coll == kAllReduce) {
            intraBw *= 2.0;  // AllReduce pipelines two operations
          } else {
            intraBw *= (ppn - 1) / ppn;
          }
          const double interBw = gr.bw_inter_GBps * ((nNodes <= 2 && a == kNvlsTree) ? 2 : 1);
          bw = std::min({intraBw, interBw,
                         a == kNvlsTree ? perChMaxNVLSTreeBw : std::numeric_limits<double>::max()});
        }
        double busBw = gr.n_channels * bw;

        if (a == kRing && p == kLL) busBw = std::min(llMaxBw, busBw * kRingLLFactor);
        if (a == kRing && p == kLL128) {
          busBw = std::min(busBw * kRingLL128Factor, gr.n_channels * perChMaxRingLL128Bw);
        }
        if (a == kTree && coll == kAllReduce) {
          busBw = std::min(busBw * kTreeAllReduceFactor, gr.n_channels * perChMaxTreeBw);
        }
        if (a == kTree && p == kLL) busBw = std::min(busBw / kTreeLLDivisor, llMaxBw);
        if (a == kTree && p == kLL128) {
          busBw = std::min(busBw * (nNodes == 1 ? kTreeLL128OneNode : kTreeLL128MultiNode),
                           gr.n_channels * perChMaxTreeLL128Bw);
        }
        if (a == kTree && comm_.tree_pattern_is_plain_tree) busBw *= kPlainTreePatternFactor;
        if (a == kPat) busBw *= kPatFactor;
        if (collnet) busBw = 0;  // CollNet (SHARP) is not modelled: no plugin
        // NVLS / CollNetDirect AllGather and ReduceScatter across nodes need CollNet.
        if ((a == kNvls || a == kCollNetDirect) && p == kSimple &&
            (coll == kAllGather || coll == kReduceScatter) && nNodes > 1) {
          busBw = 0;
        }
        e.bus_bw_GBps = busBw;

        // Bus -> algorithm bandwidth.
        if (!(a != kRing && (coll == kAllGather || coll == kReduceScatter))) {
          double ratio = 1.0;
          if (a == kRing || a == kNvls || a == kNvlsTree) {
            ratio *= static_cast<double>(nRanks) / nsteps;
          } else {
            ratio *= kTreeAlgoBwRatio;
          }
          busBw *= ratio;
        }
        e.algo_bw_GBps = busBw;

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
              netOverhead = amd ? kNetOverheadAmd_us : kNetOverheadIntel_us;
              if (p == kSimple) netOverhead *= kNetOverheadSimpleFactor;
            }
            intraLat = std::max(intraLat, netOverhead);
            const int nInterSteps = nNodes == 1          ? 0
                                    : coll == kAllReduce ? 2 * (nNodes - 1)
                                                         : nNodes - 1;
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
        e.latency_us = lat;
      }
    }
  }

  // Enable/disable: NCCL_PROTO, NCCL_ALGO, LL128 auto rule, structural disables.
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

  // Channels and threads (enqueue.cc topoGetAlgoInfo).
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
  d.n_channels = nc;
  d.n_threads = nt;
  return d;
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

}  // namespace clustersim::sim
