// GPU memory that NCCL's communication buffers take on one GPU of a training job, communicator by
// communicator, as NCCL v2.30.7-1 allocates them (docs/nccl.md#memory-per-gpu):
//   - a connection is a receive buffer set (Simple NCCL_BUFFSIZE + LL128 + LL) on the receiving
//     GPU and a small send structure on the sending GPU over NVLink (the receive set again,
//     without LL, over the network with GPUDirect RDMA), each rounded up to cuMem's 2 MiB;
//   - buffers are connected lazily, per algorithm, on the first collective that uses it
//     (NCCL_RUNTIME_CONNECT, default 1 with cuMem, since 2.22): every communicator connects Ring,
//     one that runs all-reduces may also connect Tree;
//   - point-to-point transfers (pipeline sends, all-to-all) connect per peer over NVLink and
//     share one pool per direction over the network.
// With the DeepEP dispatcher, DeepEP's own buffers (models/deepep_buffers.hpp) join the estimate
// as one more entry, "deepep".
#pragma once

#include <string>
#include <vector>

#include "core/nccl_settings.hpp"
#include "core/scenario.hpp"

namespace clustersim::models {

// One communicator's buffers on one GPU.
struct NcclCommBuffers {
  std::string name;     // "dp", "tp", "cp", "ep", "expert-dp", "deepep", "pp"
  int ranks = 0;        // communicator size
  int local_ranks = 0;  // of them on one node
  bool tree = false;    // Tree connected as well as Ring
  bool p2p = false;     // point-to-point connections (pipeline sends, all-to-all)
  double bytes = 0;
};

struct NcclBufferEstimate {
  int channels = 0;  // collective channels per communicator
  double recv_connection_bytes = 0;
  std::vector<NcclCommBuffers> comms;
  double bytes() const;
  int collective_comms() const;
  // One line for reports: what is counted, communicator by communicator.
  std::string summary() const;
};

// Bytes one connection takes on one GPU, cuMem granules included.
double nccl_recv_connection_bytes(const NcclSettings& nccl);
double nccl_nvlink_send_connection_bytes();
double nccl_net_send_connection_bytes(const NcclSettings& nccl);
// Collective channels of a communicator: the published count unless NCCL_MIN/MAX_NCHANNELS say
// otherwise.
int nccl_collective_channels(const NcclSettings& nccl);
// GPUs of a communicator on one node when its `ranks` members are `stride` ranks apart and ranks
// map onto GPUs in order (topologies/placement.hpp).
int nccl_local_ranks(int ranks, int stride, int gpus_per_node);
// One GPU's buffers for a collective communicator of `ranks` ranks, `local` of them per node.
double nccl_collective_comm_bytes(const NcclSettings& nccl, int channels, int ranks, int local,
                                  bool tree);
// One GPU's buffers for point-to-point transfers with `nvlink_peers` peers on its node and, when
// `net_peers`, peers on other nodes, inside a communicator of `ranks` ranks spanning `nodes`.
double nccl_p2p_bytes(const NcclSettings& nccl, int channels, int ranks, int nodes,
                      int nvlink_peers, bool net_peers);

NcclBufferEstimate estimate_nccl_buffers(const clustersim::Scenario& scenario);

}  // namespace clustersim::models
