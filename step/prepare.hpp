// The prepare stage of a step: everything that follows from the scenario and the calibrations
// before any simulation — the cluster graph, the rank placement, the per-rank programs with
// their compute costs, FLOPs and memory. Pure: no SimGrid, no file read, no process forked; a
// test can call it directly.
#pragma once

#include <vector>

#include "core/calibration.hpp"
#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"
#include "topologies/cluster_graph.hpp"
#include "topologies/placement.hpp"
#include "workload/workload.hpp"

namespace clustersim::step {

// What a step needs besides the scenario: the calibration files the presets name, read by the
// caller (the loader).
struct StepCalibrations {
  // Kernel efficiencies of the GPU (the file GpuSpec::compute_calibration names, or the default).
  models::ComputeCalibration compute;
  // The cluster's network calibration (ClusterSpec::calibration); empty = NCCL's cost model.
  std::vector<NetworkCalibration> network;
};

struct PreparedStep {
  const Scenario* scenario = nullptr;  // the scenario prepared (outlives the PreparedStep)
  bool compressed_phase = false;       // 1-bit Adam's compressed phase
  workload::Workload workload;
  topologies::ClusterGraph graph;
  topologies::Placement placement;
  models::StepFlops flops_megatron;
  models::StepFlops flops_palm;
  models::MemoryEstimate memory;
  std::vector<NetworkCalibration> network;  // handed to the engine's NCCL planner
};

// Builds the graph, places the ranks, builds the programs of the phase (compressed_phase: the
// compressed phase of a 1-bit Adam run) with the compute calibration's kernel costs, counts
// FLOPs (both conventions) and estimates memory. Checks `faults` against the cluster and the
// placement: ConfigError naming the scenario file and the fault's JSON path for a link name the
// graph does not have, a slowed rank outside the placement or a speed factor outside (0, 1].
PreparedStep prepare_step(const Scenario& scenario, const StepCalibrations& calibrations,
                          const StepFaults& faults, bool compressed_phase);

}  // namespace clustersim::step
