// Small clusters written out in code for the tests (no preset file), and groups of GPU
// indices. Link speeds are chosen per test so that the bottleneck is known by construction;
// the GPU is H100-like.
#pragma once

#include <vector>

#include "core/scenario.hpp"

namespace clustersim::test {

// What a test chooses of a cluster; everything else is fixed. Written with designated
// initializers, e.g. test_cluster({.nodes = 8, .gpus_per_node = 1, .pcie_GBps = 20}).
struct TestCluster {
  int nodes = 1;
  int gpus_per_node = 8;
  int nics_per_node = 1;
  double nic_GBps = 50;  // per NIC, one direction (400 Gb/s)
  double pcie_GBps = 64;
  double nvlink_GBps = 200;  // per GPU, one direction
  double nvlink_latency_us = 3;
  bool rail_optimized = false;
  bool gpudirect_rdma = false;
  int nodes_per_leaf = 0;  // 0: every node under one leaf
};

// The cluster `t` describes, non-blocking, with H100 SXM GPUs (989 TFLOP/s dense BF16, 80 GB
// of HBM at 3.35 TB/s: NVIDIA's H100 datasheet, docs/hardware.md#h100-sxm).
inline ClusterSpec test_cluster(const TestCluster& t) {
  ClusterSpec c;
  c.name = "test";
  c.gpu.name = "H100";
  c.gpu.peak_flops[Dtype::bf16] = 989e12;
  c.gpu.hbm_bytes = 80e9;
  c.gpu.hbm_Bps = 3.35e12;
  c.gpu.nvlink_Bps = t.nvlink_GBps * 1e9;
  c.gpu.pcie_Bps = t.pcie_GBps * 1e9;
  c.nodes = t.nodes;
  c.gpus_per_node = t.gpus_per_node;
  c.nics_per_node = t.nics_per_node;
  c.nic_Bps = t.nic_GBps * 1e9;
  c.rail_optimized = t.rail_optimized;
  c.nvlink_Bps = t.nvlink_GBps * 1e9;
  c.nvlink_latency_s = t.nvlink_latency_us * 1e-6;
  c.gpudirect_rdma = t.gpudirect_rdma;
  c.fabric.nodes_per_leaf = t.nodes_per_leaf > 0 ? t.nodes_per_leaf : t.nodes;
  c.fabric.oversubscription = 1;
  return c;
}

// GPUs first, first + stride, ..., `count` of them.
inline std::vector<int> gpu_range(int first, int count, int stride = 1) {
  std::vector<int> g;
  for (int i = 0; i < count; ++i) g.push_back(first + i * stride);
  return g;
}

}  // namespace clustersim::test
