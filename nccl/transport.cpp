#include "nccl/transport.hpp"

namespace clustersim::nccl {

TransportChoice choose_transport(const ClusterSpec& spec, const NcclSettings& settings) {
  TransportChoice t;
  // GPU-NIC distance as NCCL classifies it (src/graph/paths.cc): a NIC per GPU on the GPU's
  // PCIe switch is PIX; NICs shared by several GPUs hang off the CPU root complex: PHB.
  const bool nic_per_gpu = spec.nics_per_node == spec.gpus_per_node;
  const PathLevel distance = nic_per_gpu ? PathLevel::pix : PathLevel::phb;
  // NCCL_NET_GDR_LEVEL default PXB (paths.cc, docs/nccl.md#environment-variables).
  const PathLevel gdr_level = settings.net_gdr_level.value_or(PathLevel::pxb);
  t.gpudirect_rdma = spec.gpudirect_rdma && distance <= gdr_level;
  if (spec.gpudirect_rdma && !t.gpudirect_rdma) {
    t.notes.push_back(std::string("NCCL_NET_GDR_LEVEL=") + to_string(gdr_level) +
                      " is closer than the GPU-NIC distance " + to_string(distance) +
                      ": network traffic is staged through host memory over PCIe");
  }
  // NVLink peers are at distance NVL; NCCL_P2P_LEVEL default PXB (paths.cc).
  const PathLevel p2p_level = settings.p2p_level.value_or(PathLevel::pxb);
  t.p2p_nvlink = PathLevel::nvl <= p2p_level;
  if (!t.p2p_nvlink) {
    t.notes.push_back(std::string("NCCL_P2P_LEVEL=") + to_string(p2p_level) +
                      " forbids P2P over NVLink: peers in a node exchange through host memory");
  }
  return t;
}

}  // namespace clustersim::nccl
