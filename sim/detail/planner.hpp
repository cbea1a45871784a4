// Internal to sim/: NCCL's choices for a request (via sim/nccl_model.hpp) and the decomposition of
// the chosen algorithm into patterns and flows; endpoint routing shared with the platform; the
// analytic uncontended time of a bulk decomposition. No SimGrid type.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/nccl_settings.hpp"
#include "sim/collectives.hpp"
#include "sim/detail/decomposition.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::validation {
struct Calibration;
}

namespace clustersim::sim::detail {

// Routes between endpoints (GPUs and NVSwitches) as graph hops.
class EndpointRouter {
 public:
  // p2p_nvlink = false: peers in a node exchange through host memory (their PCIe links), as
  // NCCL does when NCCL_P2P_LEVEL forbids P2P over NVLink; needs a graph with host paths.
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

// NCCL's transport decisions for the cluster under the settings.
struct TransportChoice {
  bool gpudirect_rdma = true;  // NICs read GPU memory directly
  bool p2p_nvlink = true;      // peers in a node over NVLink
  std::vector<std::string> notes;
};
TransportChoice choose_transport(const ClusterSpec& spec, const NcclSettings& settings);

class Planner {
 public:
  // Reads the cluster's network calibration (ClusterSpec::calibration), if it names one; throws
  // ConfigError (file and JSON path) when that file is malformed.
  Planner(const topologies::ClusterGraph& graph, NcclSettings settings, GpuArch arch, CpuVendor cpu,
          const TransportChoice& transport);
  ~Planner();

  // Validates (std::invalid_argument naming the field) and plans.
  CollectivePlan plan(const CollectiveRequest& request, Granularity default_granularity) const;
  // plan() plus the patterns and bulk flows.
  std::shared_ptr<const Decomposition> decompose(const CollectiveRequest& request,
                                                 Granularity default_granularity) const;
  // A key equal for requests whose uncontended time is the same by symmetry (same operation,
  // sizes and overrides; same group shape relative to its nodes and leaves).
  std::string shape_key(const CollectiveRequest& request) const;

  const EndpointRouter& router() const { return router_; }

 private:
  struct Group;
  Group analyse(const CollectiveRequest& request) const;
  const NcclModel& model(int n_ranks, int n_nodes, std::optional<int> channels,
                         std::optional<NcclAlgo> algo, std::optional<NcclProto> proto) const;
  void validate(const CollectiveRequest& request) const;
  // A collective the calibration file measured (same link class and operation, the entry with
  // the nearest rank count): latency and bandwidth time of the fitted α/β regime at this size,
  // the bandwidth term scaled by the request's own nccl-tests bus-bandwidth factor.
  struct Calibrated {
    double latency_s = 0;
    double bw_time_s = 0;
    std::string source;
  };
  std::optional<Calibrated> calibrated(CollectiveOp op, int n_ranks, int n_nodes,
                                       double bytes) const;

  const topologies::ClusterGraph* graph_;
  NcclSettings settings_;
  GpuArch arch_;
  CpuVendor cpu_;
  TransportChoice transport_;
  EndpointRouter router_;
  std::shared_ptr<const validation::Calibration> calibration_;  // null: NCCL's model only
  mutable std::map<std::tuple<int, int, int, int, int>, std::unique_ptr<NcclModel>> models_;
  // Decompositions are deterministic in the request: cached by its full key.
  mutable std::unordered_map<std::string, std::shared_ptr<const Decomposition>> decompositions_;
  std::shared_ptr<const Decomposition> build(const CollectiveRequest& request,
                                             Granularity default_granularity) const;
};

// One flow for the analytic max-min computation: its route as (link, direction) resources.
struct FluidFlow {
  std::vector<topologies::Hop> route;
  double wire_bytes = 0;
  double rate_cap_Bps = 0;  // wire bytes per second; <= 0 = none
};
// Max-min fair sharing (progressive filling) with completion events, the same sharing SimGrid's
// CM02 model computes: returns when the last flow ends, starting at 0. capacity(link) gives each
// direction's capacity in bytes/s.
double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity);

// Wire efficiency of a protocol: payload bytes per wire byte.
double wire_efficiency(NcclProto proto);

}  // namespace clustersim::sim::detail
