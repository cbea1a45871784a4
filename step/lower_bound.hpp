// A lower bound on a step's time that needs no simulation: the compute of the programs at the
// GPU's modelled kernel rates, plus the part of the pipeline bubble that the dependency chains
// of the first and the last micro-batch force, with no communication time at all.
//
// Why it is a lower bound (step/op_compute.cpp, step/replay.hpp): each pipeline rank's program
// runs in order on one actor; its compute ops run back to back as timed waits, each at least
// its healthy-GPU time (a slowed GPU only stretches them); a recv waits for the message, which
// leaves no earlier than the sender's send op, and a send follows the compute before it in its
// program. Every collective, transfer and wait only adds time. So, for pipeline rank s:
//   step >= C_s                                   (its compute is serial)
//   step >= H_s + C_s                             (none of it starts before the first message)
//   step >= H_s + P_s + A_{s-1} + ... + A_0       (the last micro-batch's gradient chain)
// where C_s is the rank's compute, H_s = F_0 + ... + F_{s-1} the compute of the first
// micro-batch's forward on the ranks before it (F_j between rank j's first recv and its first
// send), P_s the compute of rank s before it sends the last micro-batch's input gradient, and
// A_j the compute of rank j after it receives that gradient (up to its own send; all of it on
// rank 0). With uniform stages, 1F1B and m micro-batches this is m(F + B) + (p - 1)(F + B),
// the closed-form bubble of Narayanan et al. (SC'21, "Efficient Large-Scale Language Model
// Training on GPU Clusters Using Megatron-LM", section 2.2.1: (p - 1) / m of the ideal time).
// The chains are used only when the programs have the shape they assume (checked); DualPipe,
// whose two chains start at both ends, gets the compute term alone.
#pragma once

#include "core/scenario.hpp"
#include "step/prepare.hpp"
#include "workload/workload.hpp"

namespace clustersim::step {

struct StepBound {
  double step_time_s = 0;  // the bound; 0 = none
  double compute_s = 0;    // C_s of the rank that sets it
  double bubble_s = 0;     // the chain terms it adds to that rank's compute
  int stage = -1;          // the pipeline rank that sets it
};

// The bound of a step's programs (schedule: the scenario's, which decides whether the chains
// apply).
StepBound step_time_lower_bound(const workload::Workload& w, PipelineSchedule schedule);

// The bound of a scenario with the GPU's kernel calibration; none (0) for 1-bit Adam, whose
// step is a mix of two phases.
StepBound step_time_lower_bound(const Scenario& scenario, const StepCalibrations& calibrations);

}  // namespace clustersim::step
