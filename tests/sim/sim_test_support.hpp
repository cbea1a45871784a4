// Helpers for the tests of sim/: small clusters written out in code, and running a simulation in
// a child process (SimGrid 3.32 allows one engine per process; see sim/README.md).
#pragma once

#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "input/scenario_loader.hpp"
#include "nccl/nccl_model.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "tests/nccl/collective_requests.hpp"
#include "tests/test_clusters.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::sim::testing {

constexpr double KiB = 1024.0;
constexpr double MiB = 1024.0 * 1024.0;
constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// Small clusters and requests written out in code (tests/test_clusters.hpp,
// tests/nccl/collective_requests.hpp).
using test::allreduce;
using test::gpu_range;
using test::test_cluster;

// NCCL's latency for a Ring/Simple all-reduce on this hardware, by NCCL's own table
// (nccl/nccl_model.hpp, tested against tuning.cc separately), with the ring plateau factor of
// docs/nccl.md#cost-model: x1.4 on Ampere and later for multi-node all-reduce when
// nBytes / (nChannels * nRanks) >= 64.
inline double ring_simple_latency_s(const topologies::ClusterGraph& g, int ranks, int nodes,
                                    double bytes) {
  nccl::NcclHardware hw;
  hw.arch = nccl::GpuArch::hopper;
  hw.cpu = nccl::CpuVendor::intel;
  hw.nvlink_Bps_per_gpu = g.nvlink_Bps_per_gpu();
  hw.net_Bps_per_gpu = g.net_Bps_per_gpu();
  hw.nics_per_node = g.nics_per_node();
  hw.gpus_per_node = g.gpus_per_node();
  hw.nvswitch = g.gpus_per_node() > 1;
  hw.gpudirect_rdma = g.spec().gpudirect_rdma;
  NcclSettings s;
  s.algos = {NcclAlgo::ring};
  s.protos = {NcclProto::simple};
  const nccl::NcclModel m(nccl::derive_comm_info(hw, ranks, nodes, s), s);
  double lat_us = m.latency_us(nccl::NcclCollective::all_reduce, NcclAlgo::ring, NcclProto::simple);
  const double per = bytes / (static_cast<double>(m.comm().comm_channels) * ranks);
  if (nodes > 1 && per >= 64) lat_us *= 1.4;
  return lat_us * 1e-6;
}

inline NcclSettings ring_simple() {
  NcclSettings s;
  s.algos = {NcclAlgo::ring};
  s.protos = {NcclProto::simple};
  return s;
}

}  // namespace clustersim::sim::testing
