#include "models/deepep_buffers.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace clustersim::models {

namespace {

// deepseek-ai/DeepEP@dd758caf451848bd150e1046af3d0a73e5fff38d.
// Buffer.num_sms default 20 (deep_ep/buffers/legacy.py); a channel per two SMs (config.hpp).
constexpr int kDefaultNumSms = 20;
// LEGACY_NUM_MAX_NVL_PEERS 8 (csrc/kernels/legacy/compiled.cuh): ranks per NVLink domain.
constexpr std::int64_t kNvlPeers = 8;
// LEGACY_NUM_WORKSPACE_BYTES 32 MiB (compiled.cuh), cudaMalloc'd by the buffer (buffer.hpp).
constexpr double kWorkspaceBytes = 32.0 * 1024 * 1024;
// Per token slot besides the hidden bytes (config.hpp get_*_buffer_size_hint): SourceMeta 8 B
// (internode.cu), kNumMaxTopK 128 x (8 B topk_idx_t int64 + 4 B weight), kNumMaxScales 128 x 4 B.
constexpr std::int64_t kSourceMetaBytes = 8;
constexpr std::int64_t kTopkBytes = 128 * (8 + 4);
constexpr std::int64_t kScaleBytes = 128 * 4;
constexpr std::int64_t kInt4Bytes = 16;
constexpr std::int64_t kRdmaSafetyBytes = 1048576;  // "add a large number to be safe"

// Default configs by EP size (legacy.py get_dispatch_config / get_combine_config): NVLink receive
// tokens (the same in both) and the RDMA send tokens of each; every RDMA receive count is 128.
struct Row {
  int ranks;
  int nvl_recv;
  int rdma_send_dispatch;
  int rdma_send_combine;
};
constexpr Row kConfigs[] = {{2, 256, 6, 6},    {4, 256, 6, 6},    {8, 256, 6, 6},
                            {16, 288, 20, 12}, {24, 288, 8, 8},   {32, 288, 8, 8},
                            {48, 288, 8, 8},   {64, 288, 8, 8},   {96, 480, 12, 8},
                            {128, 560, 12, 8}, {144, 720, 12, 8}, {160, 720, 12, 8}};
constexpr std::int64_t kRdmaRecvTokens = 128;

std::int64_t align_up(std::int64_t v, std::int64_t a) {
  return (v + a - 1) / a * a;
}

// The table's row for `ep`: its own, else the next larger (UNVERIFIED: DeepEP asserts on sizes
// it has no config for), else the largest.
const Row& row_for(int ep) {
  for (const Row& r : kConfigs) {
    if (r.ranks >= ep) return r;
  }
  return kConfigs[std::size(kConfigs) - 1];
}

}  // namespace

DeepEpBuffers deepep_buffers(int ep, int hidden, int num_sms) {
  DeepEpBuffers b;
  if (ep <= 1) return b;
  const Row& row = row_for(ep);
  const std::int64_t channels = (num_sms > 0 ? num_sms : kDefaultNumSms) / 2;
  // hidden_bytes = hidden x max(element size, 2) (README get_buffer; Megatron-Core fused_a2a.py).
  const std::int64_t hidden_bytes = 2 * static_cast<std::int64_t>(hidden);
  const std::int64_t nvl_ranks = std::min<std::int64_t>(ep, kNvlPeers);
  const std::int64_t rdma_ranks = std::max<std::int64_t>(ep / kNvlPeers, 1);
  const std::int64_t slot = hidden_bytes + kSourceMetaBytes + kTopkBytes + kScaleBytes;
  // get_nvl_buffer_size_hint.
  std::int64_t nvl = channels * nvl_ranks * (2 * rdma_ranks + 3) * 4;
  nvl += channels * nvl_ranks * row.nvl_recv * slot;
  b.nvl_bytes = static_cast<double>(align_up(nvl, 128));
  // get_rdma_buffer_size_hint: only across NVLink domains; the Config constructor aligns the
  // receive tokens up to a multiple of the send tokens, and the larger config wins.
  if (ep > kNvlPeers) {
    const std::int64_t recv = std::max(align_up(kRdmaRecvTokens, row.rdma_send_dispatch),
                                       align_up(kRdmaRecvTokens, row.rdma_send_combine));
    std::int64_t rdma = channels * rdma_ranks * (kNvlPeers * 2 + 2) * 2 * 4;
    rdma += channels * rdma_ranks * recv * (slot + kInt4Bytes) * 2;
    rdma += kRdmaSafetyBytes;
    b.rdma_bytes = static_cast<double>(align_up(rdma, 128));
  }
  b.workspace_bytes = kWorkspaceBytes;
  return b;
}

}  // namespace clustersim::models
