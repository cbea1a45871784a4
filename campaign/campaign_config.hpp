// The scenario sections the campaign reads: "faults", "checkpointing", "cost" and "campaign".
// Each is parsed from the RawSection core/ keeps (SectionDocument re-roots it, so errors name
// the scenario file and the JSON pointer), types and ranges checked, unknown keys rejected.
//
// "faults": {
//   "events": [                                  // step-level faults at given times of the run
//     {"kind": "gpu_slowdown", "rank": 234, "speed_factor": 0.5, "from_days": 3,
//      "until_days": 4 (optional), "cause": "ECC down-clocking" (optional)},
//     {"kind": "link_degraded", "link": "node3/nic5-leaf", "bandwidth_factor": 0.25,
//      "from_h": 10, "until_h": 12 (optional)},
//     {"kind": "link_down", "link": "node3/nic5-leaf", "from_s": 3600, "until_s": ... },
//     {"kind": "node_lost", "node": 12, "at_days": 5}],
//     Times take one of the suffixes _s, _h, _days; they count wall-clock time from the start
//     of the run and must lie before its end (the fault-free duration).
//   "watchdog_timeout_s": 600,       // framework watchdog (PyTorch ProcessGroupNCCL: 10 min)
//   "crash_detection_s": 30,         // a crashed process noticed by the launcher
//   "failure_rates": {"model": "llama3"|"rsc1"|"rsc2"|"none", "scale": 1,
//     "causes": {NAME: {"per_gpu_hour"|"per_node_hour"|"per_nic_hour"|"per_job_hour": rate,
//                       "detection": "crash"|"network"|"hang", "source": "..."}}},
//     (causes override the model's cause of that name or add a new one)
//   "stragglers": {"classes": [{"name", "target": "gpu"|"link", "rate_per_gpu_hour",
//                               "speed_factor" (gpu) | "bandwidth_factor" (link),
//                               "duration_median_s", "duration_sigma"}],
//                  "policy": "wait"|"replace", "detect_after_s": 600, "threshold": 1.5},
//   "loss_spikes": {"outlier_rate_per_Ttokens", "outlier_min_tokens": 32768,
//                   "other_rate_per_Ttokens": 0, "response_s": 300, "skip_batches": 300,
//                   "sample_filter": {"enabled", "max_tokens", "min_loss_mask_tokens",
//                                     "data_fraction_removed"}},
//   "drift": {"from_step_time_s": 1.2, "to_step_time_s": 2.8, "over_days": 20
//             | "growth_per_day": 0.0667,
//             "fragmentation_share": 0.5, "resets_on_restart": true,
//             "mitigations": {"empty_cache_every_steps": 1000, "empty_cache_cost_s",
//                             "limit_loader_workers": true, "loader_slowdown": 0.01}}}
// "checkpointing": {"interval": "fixed"|"young"|"daly"|"none", "interval_min" (fixed only),
//   "mode": "blocking"|"async", "size_GB" | "bytes_per_parameter": 14,
//   "write_GBps", "read_GBps" | "save_s", "load_s", "async_stall_s" (async only),
//   "restart": {"reschedule_s", "init_s"}}
// "cost": {"usd_per_gpu_hour", "source"}
// "campaign": {"trials": 1000, "seed": 1, "step_time_s", "mfu", "exposed_comm_share",
//   "max_days": 365, "monitor_interval_min": 10, "trace_trial": 0}
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "campaign/failure_model.hpp"
#include "campaign/section.hpp"
#include "core/scenario.hpp"

namespace clustersim::campaign {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Defaults, each with its source.
// PyTorch ProcessGroupNCCL's default timeout, kProcessGroupNCCLDefaultTimeout = 10 min
// (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp; init_process_group docs;
// docs/faults.md#timeouts).
constexpr double kPyTorchNcclWatchdog_s = 600;
// A crashed rank noticed by the job: ByteRobust detects NIC crashes and port flaps in ~30 s
// [S, docs/faults.md#timeouts]; used for every crash-type failure.
constexpr double kCrashDetection_s = 30;
// Mixed-precision Adam state saved per parameter: BF16 weights 2 + FP32 master weights 4 +
// Adam moments 4 + 4 bytes (ZeRO, Rajbhandari et al. 2020, §3.1: 16 bytes with the FP16
// gradients, which a checkpoint does not keep).
constexpr double kCheckpointBytesPerParameter = 14;

enum class FaultKind { gpu_slowdown, link_degraded, link_down, node_lost };
const char* to_string(FaultKind k);

// One step-level fault placed in the run's timeline.
struct ScriptedFault {
  FaultKind kind = FaultKind::gpu_slowdown;
  int rank = -1;      // gpu_slowdown
  std::string link;   // link_degraded, link_down
  int node = -1;      // node_lost
  double factor = 1;  // speed factor (gpu) or remaining bandwidth fraction (link)
  double from_s = 0;  // wall-clock time from the start of the run
  double until_s = kInfinity;
  std::string cause;
  SourceRef where;             // the event's JSON location
  std::string target() const;  // "rank 234", "link node3/nic5-leaf", "node 12"
};

struct StragglerClass {
  std::string name;
  bool link = false;  // false: a slow GPU; true: a degraded link (the rank's NIC)
  double rate_per_gpu_hour = 0;
  double factor = 1;  // speed factor or bandwidth factor, (0, 1)
  double duration_median_s = 0;
  double duration_sigma = 0;  // of the log of the duration (lognormal)
};

struct StragglerPolicy {
  bool replace = false;  // detect and replace the slow node, or wait it out
  double detect_after_s = 600;
  double threshold = 1.5;  // step time ratio that counts as slow (the seed's warning level)
};

struct SampleFilter {
  bool enabled = false;
  int max_tokens = 0;                // samples longer than this are dropped
  int min_loss_mask_tokens = 0;      // samples with fewer loss tokens are dropped
  double data_fraction_removed = 0;  // share of the data the filter removes (its data cost)
};

struct LossSpikes {
  double outlier_rate_per_token = 0;  // NaN events caused by outlier samples
  int outlier_min_tokens = 32768;     // length of those samples (the seed: > 32k tokens)
  double other_rate_per_token = 0;    // spikes a sample filter does not remove (PaLM-style)
  double response_s = 300;            // from the NaN alert to the rollback starting
  int skip_batches = 0;               // batches skipped after the rollback
  SampleFilter filter;
  // Events per token left after the filter.
  double effective_rate_per_token() const;
  bool filter_removes_outliers() const;
};

struct DriftMitigations {
  int empty_cache_every_steps = 0;  // 0 = no periodic torch.cuda.empty_cache()
  double empty_cache_cost_s = 0;    // extra time per call
  bool limit_loader_workers = false;
  double loader_slowdown = 0;  // relative step time cost of fewer loader workers
};

struct Drift {
  double growth_per_day = 0;         // relative step-time growth per day of process age
  double fragmentation_share = 0.5;  // part of the growth from allocator fragmentation
  bool resets_on_restart = true;
  DriftMitigations mitigations;
  // Growth per second left after the mitigations.
  double effective_growth_per_s() const;
  // Step time multiplier the mitigations cost, >= 1, for a step of `step_time_s`.
  double mitigation_factor(double step_time_s) const;
};

struct FaultsConfig {
  std::vector<ScriptedFault> events;
  double watchdog_timeout_s = kPyTorchNcclWatchdog_s;
  double crash_detection_s = kCrashDetection_s;
  std::string rate_model = "none";
  double rate_scale = 1;
  std::vector<FailureCause> causes;
  std::vector<StragglerClass> stragglers;
  StragglerPolicy straggler_policy;
  LossSpikes loss_spikes;
  Drift drift;
};

enum class IntervalPolicy { fixed, young, daly, none };
enum class SaveMode { blocking, async };
const char* to_string(IntervalPolicy p);
const char* to_string(SaveMode m);

struct CheckpointConfig {
  IntervalPolicy policy = IntervalPolicy::none;
  double fixed_interval_s = 0;
  SaveMode mode = SaveMode::blocking;
  double size_bytes = 0;
  double save_s = 0;         // time to write one checkpoint
  double load_s = 0;         // time to read it back at a restart
  double async_stall_s = 0;  // async: training stops only for this (GPU -> host staging)
  double reschedule_s = 0;   // replacing a failed node and relaunching the job
  double init_s = 0;         // process groups and NCCL communicators at this scale
};

struct CostConfig {
  double usd_per_gpu_hour = 0;
  std::string source;
};

struct CampaignSettings {
  int trials = 1000;
  std::uint64_t seed = 1;
  std::optional<double> step_time_s;  // given step time (fallback when not simulated)
  std::optional<double> mfu;
  double exposed_comm_share = 0;
  double max_days = 365;
  double monitor_interval_s = 600;
  int trace_trial = 0;
};

// Where the step-level fault targets are checked and the run's end.
struct FaultContext {
  // Link names of the cluster graph (topologies/cluster_graph.hpp); empty = not checked.
  std::vector<std::string> link_names;
  // End of the fault-free run, seconds; fault times must lie before it.
  double run_end_s = kInfinity;
};

CampaignSettings parse_campaign_settings(const Scenario& scenario);
// model_parameters: parameter count of the model (for the checkpoint size).
CheckpointConfig parse_checkpointing(const Scenario& scenario, double model_parameters);
CostConfig parse_cost(const Scenario& scenario);
FaultsConfig parse_faults(const Scenario& scenario, const FaultContext& context);

// The step-level faults alone (for `clustersim run`): the "faults.events" of the scenario as
// StepFaults, times as given. Empty when the section is absent.
StepFaults parse_step_faults(const Scenario& scenario, const FaultContext& context);
// Scripted faults active at time t (a link that is down included) as StepFaults whose times
// start at 0, for simulating one step at that moment of the run.
StepFaults step_faults_at(const std::vector<ScriptedFault>& events, double t_s);

}  // namespace clustersim::campaign
