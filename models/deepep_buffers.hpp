// GPU memory of DeepEP's normal-mode (high-throughput) buffer on one GPU, as its recommended
// sizing allocates it: the largest NVLink and RDMA size hints of the default dispatch and combine
// configs for the EP size, plus its workspace (deepseek-ai/DeepEP@dd758caf README "get_buffer",
// deep_ep/buffers/legacy.py, csrc/legacy/config.hpp; docs/nccl.md#memory-per-gpu).
#pragma once

namespace clustersim::models {

struct DeepEpBuffers {
  double nvl_bytes = 0;        // cudaMalloc'd buffer its NVLink peers write into
  double rdma_bytes = 0;       // NVSHMEM symmetric buffer (EP groups larger than one node)
  double workspace_bytes = 0;  // LEGACY_NUM_WORKSPACE_BYTES
  double bytes() const { return nvl_bytes + rdma_bytes + workspace_bytes; }
};

// `ep` ranks, `hidden` elements per token, `num_sms` SMs for the kernels (0 = DeepEP's default).
DeepEpBuffers deepep_buffers(int ep, int hidden, int num_sms);

}  // namespace clustersim::models
