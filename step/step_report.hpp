// What one simulated training step reports: step time, MFU, where the time goes per replica
// class and pipeline stage, link utilisation, memory, hangs; and the report as JSON (for
// `clustersim run --json` and for passing a report out of a child process) and as a
// Chrome/Perfetto trace. No SimGrid here.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"

namespace clustersim::step {

// Time of one rank (or rank class) over the step, seconds; the parts add up to the step time.
struct TimeBreakdown {
  double compute_s = 0;    // kernels: forward, backward, recomputation, embedding, head
  double tp_s = 0;         // blocking tensor-/context-parallel collectives
  double ep_s = 0;         // MoE token dispatch and combine (expert-parallel all-to-alls)
  double pp_s = 0;         // waiting for pipeline transfers once the peer had sent
  double dp_s = 0;         // waiting for gradient reductions and ZeRO parameter gathers
  double bubble_s = 0;     // waiting for the peer stage to produce (pipeline bubble)
  double optimizer_s = 0;  // optimizer update (and 1-bit Adam compression)
  double idle_s = 0;       // finished, waiting for the slowest rank to end the step
  // Part of compute_s: kernels slowed by the SMs that overlapped NCCL calls held
  // (docs/sm-contention.md). Not a part of total() of its own.
  double nccl_sm_s = 0;
  // Part of compute_s: the host's time with the GPU idle, a pass waiting for the host to issue
  // its kernels (docs/system-calibration.md#host-dispatch) and DeepSpeed 2021's host loops.
  double host_s = 0;
  // Kernels the rank launched on its compute stream (optimizer included): with the calibration's
  // host time per kernel, the host's time to issue them (host_s holds the part the GPU waited
  // for, with DeepSpeed 2021's host loops besides).
  double kernels = 0;
  double total() const;
  double comm() const { return tp_s + ep_s + pp_s + dp_s; }
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
  // Shown with the slice in the trace viewer (FLOPs, bytes, group, ...); null for none.
  nlohmann::json args;
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
  double memory_physical_bytes = 0;  // HBM less the CUDA context (MemoryEstimate::tight)
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

// Every field of the report except the trace. Times in seconds, memory in GiB (key names say so).
nlohmann::json to_json(const StepReport& report);
// The inverse of to_json (the trace stays empty). Throws nlohmann::json::exception on a
// malformed document.
StepReport step_report_from_json(const nlohmann::json& json);

// Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one process per node, two threads
// per rank (compute stream, communication stream), slices as complete ("X") events in
// microseconds. On the compute stream each pass of a micro-batch (F0, B0, ...) holds, nested
// inside it, its kernels and the TP/CP/EP collectives between them; slices carry their FLOPs,
// or their bytes (nccl-tests size), group and collective, as args. Every rank of a class-stage gets
// its class's slices. When the scenario has more than `max_ranks` ranks, only the ranks of each
// class's first data-parallel replica are written (all its tensor-parallel and pipeline ranks); the
// trace metadata says so.
std::string chrome_trace_json(const StepReport& report, const Scenario& scenario, int max_ranks);

}  // namespace clustersim::step
