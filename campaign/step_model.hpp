// What the campaign needs to know about one training step, with and without step-level faults.
//
// The campaign does not simulate steps itself: the command-line tool hands it a StepModel that
// calls the step simulator (step/simulate_step.hpp), or, when the scenario gives a step time
// (`campaign.step_time_s`), the fixed model below. Keeping this a function keeps the campaign
// library free of SimGrid and lets tests substitute exact step times.
#pragma once

#include <functional>
#include <string>

#include "core/scenario.hpp"

namespace clustersim::campaign {

struct StepEstimate {
  double step_time_s = 0;  // one optimizer step
  double mfu = 0;          // model FLOPs utilisation of that step, 0..1
  // Who the step waits for when faults slow it down: "rank 234 (node29/gpu2)",
  // "link node3/nic5-leaf"; empty when nothing stands out.
  std::string slowest;
  // A link that is down makes collectives crossing it hang; the step never finishes.
  bool hang = false;
  std::string hang_on;  // the link or rank the hang waits on
  // Monitoring inputs (the seed's nvlink_bw and ib_bw): bandwidth achieved while collectives
  // run, per GPU over NVLink (bytes/s) and per NIC over InfiniBand (bits/s).
  double nvlink_Bps = 0;
  double ib_bps = 0;
  // Share of the step's busy time spent in compute kernels (rest: communication kernels), 0..1.
  double compute_share = 0;
  std::string model;  // "step simulator" or "given step time"
  std::string note;   // caveat for the report, e.g. an upper bound used by the fallback
};

using StepModel = std::function<StepEstimate(const StepFaults&)>;

// The fallback when the scenario gives the step time: a GPU slowed to speed factor f makes the
// synchronous step 1/f times longer (the step waits for its slowest rank; an upper bound that
// ignores overlap), a link degraded to bandwidth factor b stretches the exposed communication
// share c of the step to c/b (c = `exposed_comm_share`, 0 when unknown), and a down link or a
// lost node hangs the step.
// Monitoring bandwidths come from the cluster's line rates times the achieved fractions of
// nccl-tests measurements (step_model.cpp). Preconditions: step_time_s > 0, 0 < mfu <= 1.
StepModel fixed_step_model(const Scenario& scenario, double step_time_s, double mfu,
                           double exposed_comm_share);

// Achieved fraction of a NIC's line rate in collectives: NVIDIA's guidance that NDR 400 Gb/s
// "should give 46-48GB/s per NIC" (nccl-tests#290) -> 47 GB/s of 50 GB/s.
constexpr double kIbAchievedFraction = 47.0 / 50.0;
// Achieved fraction of NVLink one-way bandwidth in ring collectives: H100 ring busbw
// 365-370 GB/s of 450 GB/s one way (nccl#1455; docs/microbenchmarks.md#nccl-tests) -> 0.82.
constexpr double kNvlinkAchievedFraction = 368.0 / 450.0;

}  // namespace clustersim::campaign
