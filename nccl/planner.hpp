// NCCL's choices for a collective request and its decomposition into patterns and flows: the
// plan (algorithm, protocol, channels, latency, bandwidth time) from NCCL's cost model
// (nccl/nccl_model.hpp) or from the cluster's network calibration, then the chosen algorithm's
// data movement (nccl/algorithms.hpp) paced by nccl/pacing.hpp. No SimGrid type; no file is read
// here (the calibration arrives as a struct).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/calibration.hpp"
#include "core/nccl_settings.hpp"
#include "nccl/algorithms.hpp"
#include "nccl/collectives.hpp"
#include "nccl/decomposition.hpp"
#include "nccl/endpoint_router.hpp"
#include "nccl/nccl_model.hpp"
#include "nccl/transport.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::nccl {

class Planner {
 public:
  // `calibration`: the cluster's network calibration (the file ClusterSpec::calibration names,
  // read by the caller); empty = NCCL's cost model for every collective. The graph must outlive
  // the planner.
  Planner(const topologies::ClusterGraph& graph, NcclSettings settings, GpuArch arch, CpuVendor cpu,
          const TransportChoice& transport, std::vector<NetworkCalibration> calibration = {});
  ~Planner();

  // Validates (std::invalid_argument naming the field) and plans.
  CollectivePlan plan(const CollectiveRequest& request, Granularity default_granularity) const;
  // plan() plus the patterns and bulk flows; cached per request.
  std::shared_ptr<const Decomposition> decompose(const CollectiveRequest& request,
                                                 Granularity default_granularity) const;
  // A key equal for requests whose uncontended time is the same by symmetry (same operation,
  // sizes and overrides; same group shape relative to its nodes and leaves).
  std::string shape_key(const CollectiveRequest& request) const;

  const EndpointRouter& router() const { return router_; }

 private:
  const NcclModel& model(int n_ranks, int n_nodes, std::optional<int> channels,
                         std::optional<NcclAlgo> algo, std::optional<NcclProto> proto) const;
  // A group seen before: its id (order of first appearance) and the group part of shape_key.
  // Its GPUs were checked once (in range, distinct), when it was first seen.
  struct Group {
    int id = 0;
    std::string shape;
  };
  // Looks the group up by its GPU list (hash, then exact comparison), checking and adding it
  // when new: O(members) integer work per call, no strings.
  const Group& group(const std::vector<int>& gpus) const;
  void validate_group(const std::vector<int>& gpus) const;
  void validate(const CollectiveRequest& request) const;  // the request's other fields
  // A collective the calibration measured (same link class and operation, the entry with the
  // nearest rank count): latency and bandwidth time of the fitted α/β regime at this size, the
  // bandwidth term scaled by the request's own nccl-tests bus-bandwidth factor.
  struct Calibrated {
    double latency_s = 0;
    double bw_time_s = 0;
    std::string source;
  };
  std::optional<Calibrated> calibrated(CollectiveOp op, int n_ranks, int n_nodes,
                                       double bytes) const;

  // The steps of build(): the plan's fixed fields; the plan of a single rank or an empty
  // message (no data moves); the algorithm and its times; the rails the channels spread over.
  void start_plan(CollectivePlan& p, const CollectiveRequest& r, const GroupShape& gr,
                  Granularity default_granularity) const;
  void plan_without_data(CollectivePlan& p, const CollectiveRequest& r, const GroupShape& gr) const;
  Algorithm choose_algorithm(CollectivePlan& p, const CollectiveRequest& r,
                             const GroupShape& gr) const;
  void plan_nccl_choice(CollectivePlan& p, const CollectiveRequest& r, const GroupShape& gr,
                        Algorithm* algo) const;
  int rails_used(const CollectivePlan& p, const GroupShape& gr) const;
  std::shared_ptr<const Decomposition> build(const CollectiveRequest& request,
                                             Granularity default_granularity) const;

  const topologies::ClusterGraph* graph_;
  NcclSettings settings_;
  GpuArch arch_;
  CpuVendor cpu_;
  TransportChoice transport_;
  EndpointRouter router_;
  std::vector<NetworkCalibration> calibration_;  // empty: NCCL's model only
  mutable std::map<std::tuple<int, int, int, int, int>, std::unique_ptr<NcclModel>> models_;
  struct GpusHash {
    std::size_t operator()(const std::vector<int>& gpus) const;
  };
  mutable std::unordered_map<std::vector<int>, Group, GpusHash> groups_;
  // Decompositions are deterministic in the request: cached by its group id and every other
  // field that the plan depends on (op, bytes, root, dtype, one_way, algorithm, protocol,
  // channels, granularity).
  using DecompositionKey = std::tuple<int, int, double, int, int, bool, int, int, int, int>;
  mutable std::map<DecompositionKey, std::shared_ptr<const Decomposition>> decompositions_;
};

}  // namespace clustersim::nccl
