#include "nccl/endpoint_router.hpp"

#include <stdexcept>

namespace clustersim::nccl {

EndpointRouter::EndpointRouter(const topologies::ClusterGraph& graph, bool p2p_nvlink)
    : graph_(&graph), p2p_nvlink_(p2p_nvlink) {
  const int g = graph.num_gpus();
  nvlink_of_gpu_.assign(static_cast<std::size_t>(g), -1);
  pcie_of_gpu_.assign(static_cast<std::size_t>(g), -1);
  for (int i = 0; i < g; ++i) {
    const std::string prefix = graph.vertex(graph.gpu_vertex(i)).name;
    if (auto l = graph.find_link(prefix + "-nvlink"))
      nvlink_of_gpu_[static_cast<std::size_t>(i)] = *l;
    if (auto l = graph.find_link(prefix + "-pcie")) pcie_of_gpu_[static_cast<std::size_t>(i)] = *l;
    if (nvlink_of_gpu_[static_cast<std::size_t>(i)] < 0) {
      throw std::invalid_argument("EndpointRouter: the graph has no link \"" + prefix +
                                  "-nvlink\"");
    }
  }
  if (!p2p_nvlink_ && !graph.has_hosts()) {
    throw std::invalid_argument(
        "EndpointRouter: P2P through host memory needs a graph with host paths");
  }
}

int EndpointRouter::node_of(Endpoint e) const {
  return is_switch(e) ? e - graph_->num_gpus() : graph_->node_of_gpu(e);
}

std::string EndpointRouter::name(Endpoint e) const {
  if (is_switch(e)) return graph_->vertex(graph_->nvswitch_vertex(node_of(e))).name;
  return graph_->vertex(graph_->gpu_vertex(e)).name;
}

std::vector<topologies::Hop> EndpointRouter::route(Endpoint a, Endpoint b) const {
  using topologies::Direction;
  if (is_switch(a) && is_switch(b)) {
    throw std::invalid_argument("EndpointRouter: no route between two NVSwitches");
  }
  if (is_switch(b)) return {{nvlink_of_gpu_[static_cast<std::size_t>(a)], Direction::up}};
  if (is_switch(a)) return {{nvlink_of_gpu_[static_cast<std::size_t>(b)], Direction::down}};
  if (!p2p_nvlink_ && graph_->node_of_gpu(a) == graph_->node_of_gpu(b)) {
    // SHM transport: GPU -> host memory -> GPU over both PCIe links.
    return {{pcie_of_gpu_[static_cast<std::size_t>(a)], Direction::up},
            {pcie_of_gpu_[static_cast<std::size_t>(b)], Direction::down}};
  }
  return graph_->route(a, b);
}

}  // namespace clustersim::nccl
