// The program of one pipeline rank: its gradient units, buckets and parameter gathers, then its
// passes in schedule order (each forward and backward as ops: receive, per-unit gathers and
// kernels, gradient reductions, send; with a split backward the reductions follow the separate
// weight-gradient pass instead), then the step's tail (deferred reductions, optimizer, ZeRO-1/2
// parameter gathers).
#pragma once

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

namespace clustersim::workload {

// What every stage's program is built from, prepared once per workload.
struct StepPlan {
  const Scenario& scenario;
  const models::ComputeCostModel& compute;
  StepPasses passes;              // the costed repeated passes
  double message_bytes = 0;       // of one pipeline message per TP rank
  int message_gather = -1;        // the TP all-gather after each receive (collectives), -1: none
  bool compressed_phase = false;  // 1-bit Adam's compressed phase
};

// The program of one GPU of pipeline rank `stage` (0 .. pp-1).
StageProgram build_stage_program(const StepPlan& plan, int stage);

}  // namespace clustersim::workload
