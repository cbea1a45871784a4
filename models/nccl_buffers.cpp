#include "models/nccl_buffers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/units.hpp"
#include "models/deepep_buffers.hpp"

namespace clustersim::models {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Protocol buffers of one connection besides Simple's NCCL_BUFFSIZE (NVIDIA/nccl@v2.30.7-1
// src/init.cc DEFAULT_LL128_BUFFSIZE and DEFAULT_LL_BUFFSIZE, src/include/device.h):
// LL128 = 120 elements x 640 threads x 8 steps x 8 B = 4,915,200 B,
// LL = 8 lines x 512 threads x 8 steps x 16 B = 524,288 B. All three are allocated whatever
// NCCL_PROTO says: computeBuffSizes (src/init.cc) sets buffSizes[p] from the defaults or
// NCCL_BUFFSIZE / NCCL_LL_BUFFSIZE / NCCL_LL128_BUFFSIZE only.
constexpr double kLl128BufferBytes = 120.0 * 640 * 8 * 8;
constexpr double kLlBufferBytes = 8.0 * 512 * 8 * 16;
// cuMem allocation granule: ncclCuMemAlloc rounds every allocation up to
// CU_MEM_ALLOC_GRANULARITY_MINIMUM (NVIDIA/nccl@v2.30.7-1 src/include/alloc.h), 2 MiB on Hopper:
// NVIDIA/nccl issue 1685's log on 8 x H100 shows P2P/CUMEM buffers of 10,485,760 B (the
// 9,633,792 B receive set) and 2,097,152 B (the sender's ncclSendMem).
constexpr double kCuMemGranularityBytes = 2 * kMiB;
// Collective channels per communicator: "16 coll channels" on 8 x H800 in one node with NCCL
// 2.18.3 (NVIDIA/nccl issue 892) and "Channel 00/16" on 3 nodes x 8 H100 (issue 1453). UNVERIFIED
// for multi-node H800 and for communicators with one GPU per node (their single NIC may give
// fewer); the count NCCL 2.30 settles on may differ from those releases'.
constexpr int kCollectiveChannels = 16;
// Tree: inside a node NCCL's tree is a chain in ring order (log lines such as
// "Trees [0] 3/-1/-1->2->1"), so it adds the ring neighbour a GPU only sends to as a receive peer
// and the one it only receives from as a send peer: one receive and one send connection per
// channel. Across nodes each node of the double binary tree has a parent and up to
// NCCL_MAX_TREE_ARITY_TOP = 2 children (src/include/device.h, src/graph/connect.cc
// connectTrees), each connected both ways (src/transport/generic.cc ncclTransportTreeConnect):
// at most min(3, nodes - 1) network peers, the most a node has (an upper figure: the average
// node of a binary tree has fewer).
constexpr double kTreeChainConnections = 1.0;
constexpr double kTreeNetPeersPerNode = 3.0;
// Point-to-point: channels per NVLink peer on H800, "16 p2p channels per peer" (issue 892;
// src/graph/paths.cc ncclTopoGetNchannels: 2 x NVLink bandwidth / per-link bandwidth, 8 links).
constexpr int kP2pChannelsPerNvlinkPeer = 16;
// Channels per network peer: max(NICs, ceil(NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW 14)) (paths.cc):
// 4 for one 400 Gb/s NIC per GPU. UNVERIFIED: assumes that NIC.
constexpr int kP2pChannelsPerNetPeer = 4;
// Peers a p2p batch serves (NCCL_MAX_DEV_WORK_P2P_PER_BATCH, src/include/device.h): across nodes
// NCCL halves the channels per peer until peers / 8 x channels per peer fit the p2p channels
// (paths.cc ncclTopoComputeP2pChannels).
constexpr int kP2pPeersPerBatch = 8;
// Network send/receive pool, one per direction per GPU and communicator: p2p channels x
// NCCL_SHARED_STEPS 16 x the p2p chunk, NCCL_P2P_NET_CHUNKSIZE 128 KiB (src/transport/net.cc
// sharedNetBuffersInit; src/init.cc). "For send/recv operations however, we have a single shared
// buffer" (sjeaugey, NVIDIA/nccl issue 1450).
constexpr double kSharedNetSteps = 16;
constexpr double kP2pNetChunkBytes = 128.0 * 1024;
constexpr double kP2pNetPoolDirections = 2;

double round_up_granule(double bytes) {
  return std::ceil(bytes / kCuMemGranularityBytes) * kCuMemGranularityBytes;
}

int pow2_up(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

bool tree_allowed(const NcclSettings& nccl) {
  return nccl.algos.empty() ||
         std::find(nccl.algos.begin(), nccl.algos.end(), NcclAlgo::tree) != nccl.algos.end();
}

std::string fmt_gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kGiB);
  return buf;
}

}  // namespace

// Receiving GPU: Simple + LL128 + LL in one allocation (src/transport/p2p.cc p2pRecvSetup,
// src/transport/net.cc recvProxyConnect with GPUDirect RDMA: all three in device memory).
double nccl_recv_connection_bytes(const NcclSettings& nccl) {
  return round_up_granule(nccl.buffsize_bytes + kLl128BufferBytes + kLlBufferBytes);
}

// Sending GPU over NVLink: ncclSendMem only, Simple is on the receiver unless P2P read, which
// NCCL enables on Ampere alone (p2p.cc p2pSendSetup; paths.cc "Enable P2P Read for
// Ampere/NVLink only").
double nccl_nvlink_send_connection_bytes() {
  return kCuMemGranularityBytes;
}

// Sending GPU over the network with GPUDirect RDMA: Simple and LL128 in device memory, LL in host
// memory (net.cc sendProxyConnect: dev = p != NCCL_PROTO_LL && useGdr). UNVERIFIED: assumes
// GPUDirect RDMA, as on the rail-optimized presets.
double nccl_net_send_connection_bytes(const NcclSettings& nccl) {
  return round_up_granule(nccl.buffsize_bytes + kLl128BufferBytes);
}

int nccl_collective_channels(const NcclSettings& nccl) {
  int channels = kCollectiveChannels;
  if (nccl.min_channels > 0) channels = std::max(channels, nccl.min_channels);
  if (nccl.max_channels > 0) channels = std::min(channels, nccl.max_channels);
  return std::clamp(channels, 1, kNcclMaxChannels);
}

int nccl_local_ranks(int ranks, int stride, int gpus_per_node) {
  if (gpus_per_node <= 1 || stride >= gpus_per_node) return 1;
  return std::max(1, std::min(ranks, gpus_per_node / std::max(stride, 1)));
}

// Ring, per channel: one receive and one send connection. Across nodes, of the node's `local`
// GPUs one receives from the network and one sends to it, the others over NVLink; NCCL spreads
// those ends over the node's NICs channel by channel, so the node's sum over its GPUs
// (UNVERIFIED average: one GPU may hold more of them).
double nccl_collective_comm_bytes(const NcclSettings& nccl, int channels, int ranks, int local,
                                  bool tree) {
  if (ranks <= 1) return 0;
  local = std::max(1, std::min(local, ranks));
  const int nodes = (ranks + local - 1) / local;
  const double recv = nccl_recv_connection_bytes(nccl);
  const double nvl = recv + nccl_nvlink_send_connection_bytes();
  const double net = recv + nccl_net_send_connection_bytes(nccl);
  double per_channel = nodes == 1 ? nvl : ((local - 1) * nvl + net) / local;
  if (tree) {
    if (local > 1) per_channel += kTreeChainConnections * nvl;
    // Two nodes with one GPU each: the tree's one peer is the ring's, already connected both ways.
    const bool ring_peer = nodes == 2 && local == 1;
    const double net_peers = std::min(kTreeNetPeersPerNode, static_cast<double>(nodes - 1));
    if (nodes > 1 && !ring_peer) per_channel += net_peers * net / local;
  }
  return channels * per_channel;
}

// Point-to-point: per NVLink peer, channels-per-peer receive and send connections (issue 1685:
// "as many as 32 channels are created, per pair of GPUs" on H100); network peers share the pool.
// p2p channels = channels rounded up to a power of two (paths.cc ncclTopoComputeP2pChannels).
double nccl_p2p_bytes(const NcclSettings& nccl, int channels, int ranks, int nodes,
                      int nvlink_peers, bool net_peers) {
  const int p2p_channels = pow2_up(std::min(channels, kNcclMaxChannels));
  int per_peer = std::min(kP2pChannelsPerNvlinkPeer, p2p_channels);
  if (nodes > 1) {
    per_peer = std::min(per_peer, kP2pChannelsPerNetPeer);
    const int batches = (ranks + kP2pPeersPerBatch - 1) / kP2pPeersPerBatch;
    while (per_peer * batches > p2p_channels && per_peer > 1) per_peer /= 2;
  }
  const double nvl = nccl_recv_connection_bytes(nccl) + nccl_nvlink_send_connection_bytes();
  double bytes = nvlink_peers * per_peer * nvl;
  if (net_peers) {
    // The p2p chunk never exceeds NCCL_BUFFSIZE / NCCL_STEPS 8 (init.cc computeBuffSizes).
    const double chunk = std::min(kP2pNetChunkBytes, nccl.buffsize_bytes / 8);
    bytes += kP2pNetPoolDirections * round_up_granule(p2p_channels * kSharedNetSteps * chunk);
  }
  return bytes;
}

double NcclBufferEstimate::bytes() const {
  double b = 0;
  for (const NcclCommBuffers& c : comms) b += c.bytes;
  return b;
}

int NcclBufferEstimate::collective_comms() const {
  int n = 0;
  for (const NcclCommBuffers& c : comms) n += c.name == "pp" || c.name == "deepep" ? 0 : 1;
  return n;
}

std::string NcclBufferEstimate::summary() const {
  char conn[96];
  std::snprintf(conn, sizeof conn, "%.0f MiB per receive, %.0f MiB per NVLink send connection",
                recv_connection_bytes / kMiB, nccl_nvlink_send_connection_bytes() / kMiB);
  std::string s = "NCCL buffers " + fmt_gib(bytes()) + " GiB (connected lazily per algorithm, " +
                  std::to_string(channels) + " channels, " + conn + "):";
  for (std::size_t i = 0; i < comms.size(); ++i) {
    const NcclCommBuffers& c = comms[i];
    std::string what = std::to_string(c.local_ranks) + "/node, ";
    if (c.name == "deepep") {
      what = "DeepEP's own NVLink + RDMA buffers";
    } else if (c.name == "pp") {
      what += "p2p";
    } else {
      what += std::string(c.tree ? "ring+tree" : "ring") + (c.p2p ? "+p2p" : "");
    }
    s += (i ? ", " : " ") + c.name + " " + std::to_string(c.ranks) + " (" + what + ") " +
         fmt_gib(c.bytes);
  }
  return s;
}

NcclBufferEstimate estimate_nccl_buffers(const Scenario& s) {
  const Parallelism& par = s.parallelism;
  const NcclSettings& nccl = s.comm.nccl;
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  NcclBufferEstimate est;
  est.channels = nccl_collective_channels(nccl);
  est.recv_connection_bytes = nccl_recv_connection_bytes(nccl);
  const bool tree = tree_allowed(nccl);
  // Point-to-point peers a communicator connects besides its collectives: none, its ring
  // neighbours (one peer's send and receive), or every rank (an all-to-all).
  enum class P2p { none, ring, all_to_all };
  auto add = [&](const char* name, int ranks, int stride, bool all_reduce, P2p p2p) {
    if (ranks <= 1) return;
    NcclCommBuffers c;
    c.name = name;
    c.ranks = ranks;
    c.local_ranks = nccl_local_ranks(ranks, stride, gpn);
    c.tree = all_reduce && tree;
    c.p2p = p2p != P2p::none;
    c.bytes = nccl_collective_comm_bytes(nccl, est.channels, ranks, c.local_ranks, c.tree);
    if (c.p2p) {
      const int nodes = (ranks + c.local_ranks - 1) / c.local_ranks;
      const int nvlink_peers =
          p2p == P2p::ring ? std::min(1, c.local_ranks - 1) : c.local_ranks - 1;
      c.bytes += nccl_p2p_bytes(nccl, est.channels, ranks, nodes, nvlink_peers, nodes > 1);
    }
    est.comms.push_back(c);
  };
  // Ranks map tp fastest, then cp, dp, pp (topologies/placement.hpp); a stage's experts take its
  // tp x cp x dp ranks as etp, ep, edp. All-reduces: tensor parallelism's (Megatron's row-
  // parallel layers; sequence-parallel norm gradients), context parallelism's loss, and the
  // data-parallel group's loss average every step (Megatron-LM megatron/training/utils.py
  // average_losses_across_data_parallel_group) besides the gradients without ZeRO; the expert-
  // data-parallel group all-reduces gradients without ZeRO and reduce-scatters them otherwise; the
  // expert-parallel group exchanges tokens (all-to-all over point-to-point unless DeepEP, whose
  // own buffers carry them).
  add("tp", par.tp, 1, true, P2p::none);
  // Transformer Engine's ring (cp_implementation p2p) sends K/V to the next rank of the CP group
  // and receives from the previous one.
  add("cp", par.cp, par.tp, true,
      par.cp_implementation == CpImplementation::p2p ? P2p::ring : P2p::none);
  add("dp", par.dp, par.tp * par.cp, true, P2p::none);
  if (s.model.moe) {
    const int etp = par.expert_tp();
    add("ep", par.ep, etp, false,
        s.training.moe_dispatcher == MoeDispatcher::alltoall ? P2p::all_to_all : P2p::none);
    add("expert-dp", par.expert_dp(), etp * par.ep, par.zero_stage == 0, P2p::none);
    // DeepEP dispatches and combines through its own NVLink and RDMA buffers.
    if (s.training.moe_dispatcher == MoeDispatcher::deepep && par.ep > 1) {
      NcclCommBuffers c;
      c.name = "deepep";
      c.ranks = par.ep;
      c.local_ranks = nccl_local_ranks(par.ep, etp, gpn);
      c.bytes = deepep_buffers(par.ep, s.model.hidden, s.training.moe_comm_sms).bytes();
      est.comms.push_back(c);
    }
  }
  // Pipeline sends to the previous and next stage (one neighbour when pp = 2).
  if (par.pp > 1) {
    NcclCommBuffers c;
    c.name = "pp";
    c.ranks = par.pp;
    const int stride = par.tp * par.cp * par.dp;
    c.local_ranks = nccl_local_ranks(par.pp, stride, gpn);
    c.p2p = true;
    const int nodes = (par.pp + c.local_ranks - 1) / c.local_ranks;
    const int neighbours = par.pp > 2 ? 2 : 1;
    const int nvlink_peers = c.local_ranks > 1 ? std::min(neighbours, c.local_ranks - 1) : 0;
    c.bytes = nccl_p2p_bytes(nccl, est.channels, par.pp, nodes, nvlink_peers, nodes > 1);
    est.comms.push_back(c);
  }
  return est;
}

}  // namespace clustersim::models
