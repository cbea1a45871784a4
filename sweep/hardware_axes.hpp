// The hardware axes of a sweep, set in a resolved scenario (presets inlined): the NIC speed,
// the NIC count, the fabric's oversubscription, the NVLink bandwidth and the GPU.
//
// A preset cites a source for every number (input/presets.cpp). A swept value that differs
// from the cluster's own makes the point a what-if: the value is set, its citation is replaced
// by "uncited (what-if): ..." (which keeps the replaced value and its source, so the point
// still loads under the loader's rules), and the setter returns a note for the outputs (the
// results' what_if column, the record's warnings, the summary). A value equal to the cluster's
// leaves the scenario as it is, so that such a point keeps the base scenario's key.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace clustersim::sweep {

// How a replaced citation and a record's what-if warning begin.
inline constexpr const char* kWhatIfPrefix = "uncited (what-if)";

// Each returns the what-if note (e.g. "NIC 200 Gb/s in place of the cited 400 Gb/s of
// h800-128x8-rail"), or "" when the value is the cluster's own.

// The per-NIC line rate (cluster.nic_Gbps), Gb/s.
std::string set_nic_Gbps(nlohmann::json& scenario, const nlohmann::json& gbps);
// The NICs per node (cluster.nics_per_node); a count other than one per GPU is not
// rail-optimized (cluster.rail_optimized false).
std::string set_nics_per_node(nlohmann::json& scenario, const nlohmann::json& nics);
// The fabric's oversubscription (cluster.fabric.oversubscription).
std::string set_oversubscription(nlohmann::json& scenario, const nlohmann::json& ratio);
// The NVLink bandwidth per GPU and direction, GB/s: cluster.nvlink_GBps, which the loader
// uses in place of the GPU's own figure.
std::string set_nvlink_GBps(nlohmann::json& scenario, const nlohmann::json& gbps);
// The cluster's GPU (cluster.gpu), an inlined GPU preset. A cluster-level nvlink_GBps stays.
std::string set_gpu(nlohmann::json& scenario, const nlohmann::json& gpu);

// Grows the cluster to `nodes` nodes for a larger GPU count (the "gpus" axis). Not a what-if:
// more nodes of the same kind; the node count's citation says that the sweep grew it.
void grow_cluster(nlohmann::json& scenario, int nodes);

}  // namespace clustersim::sweep
