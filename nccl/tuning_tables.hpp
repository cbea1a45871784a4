// NCCL's tuning constants, transcribed from NVIDIA/nccl tag v2.30.7-1. Every constant below is
// NCCL's own, with the file it comes from; array layouts follow NCCL's enums so that each table
// can be compared line by line with the source:
//   algorithms (src/include/plugin/nccl_tuner.h): Tree 0, Ring 1, CollNetDirect 2,
//     CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6;
//   protocols: LL 0, LL128 1, Simple 2;
//   functions (src/include/nccl_common.h): Broadcast 0, Reduce 1, AllGather 2,
//     ReduceScatter 3, AllReduce 4;
//   hardware (tuning.cc): NVLINK 0, PCI 1, NET 2.
// Internal to nccl/ (nccl_model.cpp, nccl_topology.cpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "nccl/nccl_model.hpp"

namespace clustersim::nccl::tuning {

// --- Indices as NCCL numbers them -------------------------------------------------------------
inline constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kCollNetChain = 3, kNvls = 4,
                     kNvlsTree = 5, kPat = 6;
inline constexpr int kNumAlgos = 7;
inline constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
inline constexpr int kNumProtos = 3;
inline constexpr int kBroadcast = 0, kReduce = 1, kAllGather = 2, kReduceScatter = 3,
                     kAllReduce = 4;
inline constexpr int kNumFuncs = 5;
inline constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
inline constexpr int kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3;

// --- tuning.cc ncclTunerConstantsDefaults (v2.30.7-1) ------------------------------------------
// baseLatencies [algo][proto], microseconds.
inline constexpr double kBaseLat_us[kNumAlgos][kNumProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},  // Tree, Ring
    {0, 0, 0},        {0, 0, 0},         // CollNetDirect, CollNetChain
    {0, 0, 0},        {0, 0, 0},         // NVLS, NVLSTree
    {8.0, 8.0, 8.0}};                    // PAT
// hwLatencies [hw][algo][proto], microseconds.
inline constexpr double kHwLat_us[3][kNumAlgos][kNumProtos] = {
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
inline constexpr double kLlMaxBw_GBps[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, perChMaxNVLSTreeBws
// [compCap][nodes index], GB/s per channel.
inline constexpr double kPerChMaxRingLL128Bw_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
inline constexpr double kPerChMaxTreeLL128Bw_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
inline constexpr double kPerChMaxTreeBw_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
inline constexpr double kPerChMaxNvlsTreeBw_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// nvlsEfficiency [compCap], dimensionless.
inline constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// getNetOverhead(): network post overhead per inter-node ring step, microseconds.
inline constexpr double kNetOverheadIntel_us = 1.0;
inline constexpr double kNetOverheadAmd_us = 2.0;
// Simple protocol triples the net overhead (tuning.cc "if (p == NCCL_PROTO_SIMPLE) netOverhead *=
// 3").
inline constexpr double kNetOverheadSimpleFactor = 3.0;
// Bandwidth refinements in ncclTopoTuneModel, dimensionless.
inline constexpr double kRingLLFactor = 0.5;            // Ring LL: busBw * .5
inline constexpr double kRingLL128Factor = 0.92;        // Ring LL128: busBw * 0.92 (~120/128)
inline constexpr double kTreeAllReduceFactor = 0.92;    // Tree AllReduce: busBw * .92
inline constexpr double kTreeLLDivisor = 3.8;           // Tree LL: busBw / 3.8
inline constexpr double kTreeLL128OneNode = 7.0 / 9.0;  // Tree LL128 on one node
inline constexpr double kTreeLL128MultiNode = 120.0 / 128.0;
inline constexpr double kPlainTreePatternFactor = 0.85;  // maxTreePattern == NCCL_TOPO_PATTERN_TREE
inline constexpr double kPatFactor = 0.75;               // PAT: busBw * .75
inline constexpr double kTreeAlgoBwRatio = 0.5;  // bus -> algo bandwidth for Tree/CollNet/PAT
// PAT latency: log2(nNodes) * interLat / 3.5 + nRanks * 2.8 us.
inline constexpr double kPatInterLatDivisor = 3.5;
inline constexpr double kPatPerRank_us = 2.8;
// CollNetDirect: "0.4 us arity serialization latency" per local rank.
inline constexpr double kCollNetArityLat_us = 0.4;
// ncclTopoGetAlgoTime: treeCorrectionFactor [proto][log2(nBytes/64)], dimensionless.
inline constexpr double kTreeCorrection[kNumProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// Ring Simple multi-node AllReduce "plateau effect": latency x1.4 (compCap >= 80) or x1.9,
// when nBytes / (nChannels * nRanks) >= 64 bytes.
inline constexpr double kRingPlateauFactor = 1.4;
inline constexpr double kRingPlateauFactorPreAmpere = 1.9;
inline constexpr std::int64_t kRingPlateauMinBytesPerChannelRank = 64;
// enqueue.cc updateCollCostTable: FP8 Ring over more than 8 ranks x1024 ("any factor large
// enough to act as a partition between lossy and non-lossy algos").
inline constexpr double kFp8RingPenalty = 1024.0;
inline constexpr int kFp8RingMaxRanks = 8;

// --- Threads and channels (src/include/device.h, comm.h, graph/topo.h, v2.30.7-1) --------------
inline constexpr int kWarpSize = 32;
inline constexpr int kMaxNThreads = 640;        // NCCL_MAX_NTHREADS
inline constexpr int kSimpleMaxNThreads = 512;  // NCCL_SIMPLE_MAX_NTHREADS
inline constexpr int kLLMaxNThreads = 512;      // NCCL_LL_MAX_NTHREADS
inline constexpr int kLL128MaxNThreads = 640;   // NCCL_LL128_MAX_NTHREADS
inline constexpr int kSimpleLowNThreads = 256;  // tuning.cc: ring Simple default when bw <= PCI_BW
inline constexpr double kPciBw_GBps = 12.0;     // PCI_BW (graph/topo.h, "PCI Gen3 x16")
inline constexpr long kLLThreadThreshold = 8;   // NCCL_LL_THREAD_THRESHOLD (comm.h)
inline constexpr long kLL128ThreadThreshold = 8;            // NCCL_LL128_THREAD_THRESHOLD
inline constexpr long kSimpleThreadThreshold = 64;          // NCCL_SIMPLE_THREAD_THRESHOLD
inline constexpr long kCollNetSimpleThreadThreshold = 512;  // tuning.cc collnet override
inline constexpr int kMaxChannels = 64;                     // MAXCHANNELS (device.h, v2.30.7-1)
inline constexpr int kMaxNvlsArity = 32;                    // NCCL_MAX_NVLS_ARITY (device.h)
inline constexpr int kNvlsChannelsSm90 = 16;      // NVLS_NCHANNELS_SM90 (transport/nvls.cc)
inline constexpr int kNvlsChannelsSm100 = 32;     // NVLS_NCHANNELS_SM100, several nodes
inline constexpr int kNvlsChannelsSm100Nvl = 24;  // NVLS_NCHANNELS_SM100_NVL, one node

// --- Topology search speeds (src/graph/search.cc, v2.30.7-1), GB/s per channel -----------------
inline constexpr double kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                         9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
inline constexpr double kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                         7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                             15.0, 12.0, 11.0, 6.0,  3.0};
inline constexpr double kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                             15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                              40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
inline constexpr double kSm100SpeedInter[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0,
                                              30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                              6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// ncclTopoDupChannels: duplicate when bwIntra >= 25, except on compCap > 80 when bwIntra < 50
// and nChannels > 4.
inline constexpr double kDupMinBw_GBps = 25.0;
inline constexpr double kDupSm90MaxBw_GBps = 50.0;
inline constexpr int kDupSm90MaxChannels = 4;
// connect.cc ncclTopoPostset: Hopper+ multi-node rings with bwIntra > 45 and < 16 channels are
// doubled ("4 compute channels per search channel").
inline constexpr double kPostsetDoubleMinBw_GBps = 45.0;
inline constexpr int kPostsetDoubleMaxChannels = 16;

// --- Unit conversion -----------------------------------------------------------------------------
inline constexpr double kBytesPerGB =
    1e9;  // NCCL's GB/s are 1e9 bytes/s (time = bytes / (1000 bw) us)
inline constexpr double kUsPerS = 1e6;

inline int log2i(std::int64_t n) {  // NCCL log2Down: floor(log2(n)), -1 for n <= 0
  if (n <= 0) return -1;
  int r = -1;
  while (n) {
    n >>= 1;
    ++r;
  }
  return r;
}

inline int compcap_index(GpuArch a) {
  switch (a) {
    case GpuArch::volta: return kVolta;
    case GpuArch::ampere: return kAmpere;
    case GpuArch::hopper: return kHopper;
    case GpuArch::blackwell: return kBlackwell;
  }
  return kHopper;
}

inline int nccl_algo(NcclAlgo a) {
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

inline NcclAlgo algo_of(int a) {
  static constexpr NcclAlgo map[kNumAlgos] = {NcclAlgo::tree,
                                              NcclAlgo::ring,
                                              NcclAlgo::collnet_direct,
                                              NcclAlgo::collnet_chain,
                                              NcclAlgo::nvls,
                                              NcclAlgo::nvls_tree,
                                              NcclAlgo::pat};
  return map[a];
}

inline int nccl_proto(NcclProto p) {
  switch (p) {
    case NcclProto::ll: return kLL;
    case NcclProto::ll128: return kLL128;
    case NcclProto::simple: return kSimple;
  }
  return kSimple;
}

inline NcclProto proto_of(int p) {
  return p == kLL ? NcclProto::ll : p == kLL128 ? NcclProto::ll128 : NcclProto::simple;
}

inline int nccl_func(NcclCollective c) {
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
inline std::string cost_table_skip(const NcclCommInfo& c, int func, int a) {
  if (a == kCollNetDirect || a == kCollNetChain) return "CollNet (SHARP) not available";
  const int local_ranks = c.n_ranks / c.n_nodes;
  if ((a == kNvls || a == kNvlsTree) &&
      (!c.nvls_supported || (func != kAllReduce && local_ranks > kMaxNvlsArity))) {
    return "NVLS not supported (no NVSwitch multicast, NCCL_NVLS_ENABLE=0 or too many ranks)";
  }
  if (a == kNvls && c.n_nodes > 1) return "NVLS across nodes needs CollNet (SHARP)";
  return "";
}

}  // namespace clustersim::nccl::tuning
