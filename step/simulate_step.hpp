// One training step simulated on the cluster: MFU, step time and where the time goes.
//
// load -> prepare -> replay -> report: the caller loads the scenario and the calibrations
// (StepCalibrations), prepare_step (step/prepare.hpp) builds the graph, placement and per-rank
// programs (workload/workload.hpp), and the programs are replayed (step/replay.hpp) on the
// SimGrid engine of sim/simulation.hpp: one actor per pipeline stage of each data-parallel replica
// class, compute as timed waits (a slowed GPU stretches its work), pipeline messages as
// point-to-point flows (rendezvous: data moves once both sides have posted), gradient reductions
// and ZeRO gathers as NCCL collectives over all data-parallel groups at once on the real fabric, so
// that DP and PP traffic contend inside the simulation. A collective that crosses a down link
// stalls; NCCL reports it after NCCL_IB_TIMEOUT and its retries
// (NcclSettings::ib_hang_detection_s).
//
// Shortcuts that keep a 1024-GPU step under a second (each can be switched off with
// StepOptions::exact, and tests/step compares both on a small case):
//   1. Replica classes: data-parallel replicas that no fault distinguishes run identical
//      programs; one actor stands for all of them, and the pipeline transfers of the class's
//      first replica stand for everyone's (StepOptions::pp_all_replicas sends them all). Their
//      gradient reductions and ZeRO gathers are always simulated for every replica at once.
//   2. Tensor-parallel and context-parallel collectives meet no other traffic on NVLink: each
//      size is costed once on an idle node (Simulation::uncontended_time_s) and reused.
//   3. Gradient buckets (and ZeRO-1/2 parameter buckets) that are ready while the previous
//      NCCL call on their stream still runs are sent as one call of at most 1/merge_parts of the
//      stage's bytes, as long as NCCL would run the merged call with the algorithm, protocol and
//      channels it picks for the first alone (they set its bandwidth); the latency of the calls
//      merged away is added back. Merging past a protocol switch had put seed-dp-1024 on one
//      NIC per node (80 MB ZeRO-3 reduce-scatters over 1024 ranks: LL on 20 channels alone,
//      Simple on 64 when merged) at 9.19 s against 13.83 s exact; it now gives 13.83 s.
//   4. Rails: on a rail-optimized fabric the TP ranks' data-parallel groups use disjoint links
//      (one rail each); only the first is simulated and the others' bytes are added to the
//      link statistics (StepOptions::symmetric_rails = false simulates them all).
//   5. With 4, when every pipeline transfer goes from a GPU to the GPU at the same local index
//      on another node (TP groups of whole nodes) and every rail links the same node pairs, the
//      pipeline transfers and embedding reductions stay on their rails too: only the first
//      rail's are simulated (also switched off by StepOptions::symmetric_rails = false).
//   Rails share no link, but flows that cross the spine are spread by ECMP
//   (ClusterGraph::ecmp_spine), which hashes each rail's flows on its own: with 4 and 5 the
//   first rail's spine collisions stand for every rail's. Exact without spine crossings
//   (tests/step). On 128 nodes of h800-128x8-rail (Llama 2 70B) shortcut 5 moved the step
//   time by -0.08 % (DP4 TP32 PP8 VPP2) and -0.40 % (DP2 TP32 PP16 VPP5: 2.6 M flows, 174 s
//   and 2.6 GB -> 16 s and 0.4 GB), 0 % on DP8 TP16 PP8 and on the seed's DP64 TP8 PP2.
//   6. Bulk collectives that start while no flow is posted to SimGrid (within the pool's
//      limits, before any link fault) are timed by the engine's own max-min sharing of their
//      flows, with none simulated; when one cannot join, their flows are posted with what each
//      still has to send (sim::SimulationOptions::analytic_sharing; sim/README.md). The same
//      sharing SimGrid computes: the seed's scenarios give the same step times to 1e-11.
//
// SimGrid 3.32 allows one engine per process (sim/platform.hpp): simulate_step() may be called
// once per process; simulate_step_isolated() runs it in a child process (sim/isolated.hpp) and
// may be called any number of times.
#pragma once

#include <functional>
#include <string>

#include "core/scenario.hpp"
#include "models/transformer.hpp"
#include "step/prepare.hpp"
#include "step/step_report.hpp"

namespace clustersim::step {

// The most memory a step simulation may take (step/work_estimate.hpp): a step estimated above
// it is refused before anything is simulated.
struct WorkBudget {
  double bytes = 0;    // 0: no limit
  std::string origin;  // where the limit came from and how to raise it, for the refusal
};

struct StepOptions {
  StepFaults faults;
  // Every collective and transfer takes no time (dependencies still hold): the pipeline
  // schedule alone. For checking the bubble against its closed form.
  bool free_communication = false;
  // No shortcuts: one pipeline per data-parallel replica, TP/CP collectives as flows, no
  // bucket merging. Slow; for checking the shortcuts on small cases.
  bool exact = false;
  // Simulate the pipeline transfers of every replica of a class, not only its first one.
  bool pp_all_replicas = false;
  // Simulate one rail's data-parallel groups (and pipeline transfers, shortcut 5) when the TP
  // ranks' rails are link-disjoint and carry the same traffic.
  bool symmetric_rails = true;
  // 1-bit Adam: simulate only this phase (false = full-precision warm-up, true = compressed).
  // simulate_step() simulates both phases for onebit_adam scenarios unless `single_phase`.
  bool compressed_phase = false;
  bool single_phase = false;
  // Keep per-class compute/communication slices for a trace.
  bool record_trace = true;
  // When a trace of the step will be written (`run --trace`): its chrome_trace_json max_ranks, so
  // that the work estimate (step/work_estimate.hpp) counts the trace; 0 = no trace is written.
  int trace_ranks = 0;
  // FLOP convention of `mfu` and `hfu` (both conventions are reported).
  models::FlopConvention convention = models::FlopConvention::megatron;
  // A guard page below each actor stack (sim::EngineOptions::stack_guard): a stack overflow
  // crashes instead of corrupting memory. Off by default (the same results, much faster).
  bool actor_stack_guard = false;
  // Merged NCCL calls carry at most 1/merge_parts of a stage's bytes per stream.
  int merge_parts = 8;
  // Refuse (ConfigError) a step estimated above this budget, before preparing it.
  WorkBudget budget;
  // Called when a phase's step is prepared, before its replay (a progress line saying what is
  // simulated). Never called in a child process: simulate_step_isolated drops it.
  std::function<void(const PreparedStep&)> on_prepared;
};

// Simulates one step (both phases of a 1-bit Adam run). Uses this process's SimGrid engine:
// at most once per process (a 1-bit Adam run simulates its compressed phase in a child
// process). Throws ConfigError on bad fault entries (unknown link names, ranks out of range) and
// on a step estimated above options.budget, std::logic_error if the engine was already used.
StepReport simulate_step(const Scenario& scenario, const StepCalibrations& calibrations,
                         const StepOptions& options = {});

// Same in a child process (no trace): any number of calls per process. Errors keep their type
// (a ConfigError its file and JSON path).
StepReport simulate_step_isolated(const Scenario& scenario, const StepCalibrations& calibrations,
                                  const StepOptions& options = {});

}  // namespace clustersim::step
