// One training step simulated on the cluster: MFU, step time and where the time goes.
//
// The step's programs (workload/workload.hpp) are replayed on the SimGrid engine of
// sim/simulation.hpp: one actor per pipeline stage of each data-parallel replica class,
// compute as timed waits (a slowed GPU stretches its work), pipeline messages as point-to-point
// flows (rendezvous: data moves once both sides have posted), gradient reductions and ZeRO
// gathers as NCCL collectives over all data-parallel groups at once on the real fabric, so that
// DP and PP traffic contend inside the simulation. A collective that crosses a down link stalls;
// NCCL reports it after NCCL_IB_TIMEOUT and its retries (NcclSettings::ib_hang_detection_s).
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
//      stage's bytes; the latency of the calls merged away is added back.
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
//
// SimGrid 3.32 allows one engine per process (sim/platform.hpp): simulate_step() may be called
// once per process; simulate_step_isolated() forks and may be called any number of times.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"

namespace clustersim::sim {

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
  // FLOP convention of `mfu` and `hfu` (both conventions are reported).
  models::FlopConvention convention = models::FlopConvention::megatron;
  // Guard pages below actor stacks (SimulationOptions::actor_stack_guard; unset = the engine's
  // default). Off halves the wall time of large steps (one mprotect'ed mapping per actor).
  std::optional<bool> actor_stack_guard;
  // Compute efficiency calibration; "" = the GPU preset's (models::compute_calibration_path).
  std::string compute_calibration;
  // Merged NCCL calls carry at most 1/merge_parts of a stage's bytes per stream.
  int merge_parts = 8;
};

// Time of one rank (or rank class) over the step, seconds; the parts add up to the step time.
struct TimeBreakdown {
  double compute_s = 0;    // kernels: forward, backward, recomputation, embedding, head
  double tp_s = 0;         // blocking tensor-/context-parallel collectives
  double pp_s = 0;         // waiting for pipeline transfers once the peer had sent
  double dp_s = 0;         // waiting for gradient reductions and ZeRO parameter gathers
  double bubble_s = 0;     // waiting for the peer stage to produce (pipeline bubble)
  double optimizer_s = 0;  // optimizer update (and 1-bit Adam compression)
  double idle_s = 0;       // finished, waiting for the slowest rank to end the step
  double total() const;
  double comm() const { return tp_s + pp_s + dp_s; }
};

// One pipeline stage of one replica class.
struct RankClassReport {
  int replica_class = 0;
  int stage = 0;
  int ranks = 0;              // GPUs this class-stage stands for
  std::vector<int> replicas;  // data-parallel indices of the class
  double end_s = 0;           // when this class-stage finished its step
  double slowest_speed = 1;   // smallest GPU speed factor in it (1 = healthy)
  TimeBreakdown breakdown;
};

struct LinkClassReport {
  std::string link_class;  // nvlink, pcie, nic, leaf_uplink
  int links = 0;
  double bytes = 0;        // both directions, all links of the class
  double utilisation = 0;  // mean over links, directions and the step
  double peak_link_utilisation = 0;
  std::string peak_link;
};

// A collective that can never complete (a down link on its path, or a lost node).
struct HangReport {
  std::string cause;       // "link node3/nic5-leaf down", "node 12 lost"
  std::string link;        // the down link's name ("" for a lost node)
  int node = -1;           // the lost node (-1 for a link)
  std::string collective;  // what hung: "dp reduce-scatter stage 1 (layers 39 .. 37)"
  int stage = -1;
  double start_s = 0;     // when it stopped making progress
  double detected_s = 0;  // start + NCCL's IB timeout and retries (NcclSettings)
};

struct PhaseReport {
  std::string name;  // "full precision" / "warm-up", "compressed"
  double fraction_of_run = 1;
  double step_time_s = 0;
  double mfu = 0;
  bool completed = true;
};

struct TraceSlice {
  int replica_class = 0;
  int stage = 0;
  int track = 0;  // 0 = compute stream, 1 = communication stream
  double start_s = 0;
  double end_s = 0;
  std::string name;
  std::string category;  // compute, tp, pp, dp, bubble, optimizer, dp-stream, pp-transfer
};

struct StepReport {
  std::string scenario;
  int gpus = 0;
  bool completed = true;   // false when a collective hung
  double step_time_s = 0;  // run-average over 1-bit Adam phases; detection time when hung
  double tokens_per_s = 0;
  std::string flop_convention;  // of mfu / hfu
  double mfu = 0;
  double hfu = 0;
  double mfu_megatron = 0;
  double mfu_palm = 0;
  double peak_flops_per_gpu = 0;  // dense peak of the training precision
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  TimeBreakdown breakdown;  // of the critical class-stage (the last to finish)
  int critical_class = 0;
  int critical_stage = 0;
  double comm_fraction = 0;    // exposed communication / step time (critical path)
  double bubble_fraction = 0;  // bubble / step time (critical path)
  std::vector<RankClassReport> ranks;
  std::vector<LinkClassReport> links;
  double memory_per_gpu_bytes = 0;  // worst stage, models/memory.hpp
  double memory_usable_bytes = 0;
  bool fits_in_memory = true;
  std::vector<PhaseReport> phases;
  std::optional<HangReport> hang;
  std::string slowest_rank;  // when faults slow GPUs: "rank 234 (node 29, GPU 2) at 0.5x"
  std::string slowest_link;  // when faults degrade links
  double wall_time_s = 0;
  long long flows = 0;        // flows SimGrid simulated
  long long collectives = 0;  // collectives and transfers started
  std::vector<std::string> notes;
  std::vector<TraceSlice> trace;
};

// Simulates one step (both phases of a 1-bit Adam run). Uses this process's SimGrid engine:
// at most once per process. Throws ConfigError on bad fault entries (unknown link names,
// ranks out of range), std::logic_error if the engine was already used.
StepReport simulate_step(const Scenario& scenario, const StepOptions& options = {});

// Same in a child process (no trace): any number of calls per process.
StepReport simulate_step_isolated(const Scenario& scenario, const StepOptions& options = {});

}  // namespace clustersim::sim
