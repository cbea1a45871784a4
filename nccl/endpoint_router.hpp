// Routes between the endpoints of NCCL's data movement: GPUs (0 .. G-1) and each node's
// NVSwitch (G + node), where NVLS reductions happen. No SimGrid type.
#pragma once

#include <string>
#include <vector>

#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

// An endpoint of a flow: a GPU (0 .. G-1) or a node's NVSwitch (G + node).
using Endpoint = int;

// Routes between endpoints (GPUs and NVSwitches) as graph hops.
class EndpointRouter {
 public:
  // p2p_nvlink = false: peers in a node exchange through host memory (their PCIe links), as
  // NCCL does when NCCL_P2P_LEVEL forbids P2P over NVLink; needs a graph with host paths.
  // Throws std::invalid_argument when a GPU has no NVLink link, or without host paths.
  EndpointRouter(const topologies::ClusterGraph& graph, bool p2p_nvlink);
  int num_endpoints() const { return graph_->num_gpus() + graph_->num_nodes(); }
  bool is_switch(Endpoint e) const { return e >= graph_->num_gpus(); }
  Endpoint switch_of_node(int node) const { return graph_->num_gpus() + node; }
  int node_of(Endpoint e) const;
  std::string name(Endpoint e) const;  // "node3/gpu5", "node3/nvswitch"
  // Precondition: a != b; not switch -> switch.
  std::vector<topologies::Hop> route(Endpoint a, Endpoint b) const;
  const topologies::ClusterGraph& graph() const { return *graph_; }

 private:
  const topologies::ClusterGraph* graph_;
  bool p2p_nvlink_;
  std::vector<int> nvlink_of_gpu_;
  std::vector<int> pcie_of_gpu_;
};

}  // namespace clustersim::nccl
