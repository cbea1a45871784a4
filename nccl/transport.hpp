// NCCL's transport decisions for a cluster under the NCCL settings: whether NICs read GPU
// memory directly (GPUDirect RDMA) and whether peers in a node talk over NVLink. No SimGrid type.
#pragma once

#include <string>
#include <vector>

#include "core/nccl_settings.hpp"
#include "core/scenario.hpp"

namespace clustersim::nccl {

struct TransportChoice {
  bool gpudirect_rdma = true;  // NICs read GPU memory directly
  bool p2p_nvlink = true;      // peers in a node over NVLink
  std::vector<std::string> notes;
};
TransportChoice choose_transport(const ClusterSpec& spec, const NcclSettings& settings);

}  // namespace clustersim::nccl
