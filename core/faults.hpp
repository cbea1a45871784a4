// The scenario's "faults" section, loaded and validated (input/faults_section.hpp): step-level
// faults placed in the run's timeline, failure processes, stragglers, loss spikes and slow
// drift. Times in seconds of wall clock from the start of the run, rates per second or per
// unit-hour as named.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "core/failure_rates.hpp"
#include "core/name_table.hpp"
#include "core/scenario.hpp"
#include "core/source_ref.hpp"

namespace clustersim {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Defaults, each with its source.
// PyTorch ProcessGroupNCCL's default timeout, kProcessGroupNCCLDefaultTimeout = 10 min
// (torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp; init_process_group docs;
// docs/faults.md#timeouts).
inline constexpr double kPyTorchNcclWatchdog_s = 600;
// A crashed rank noticed by the job: ByteRobust detects NIC crashes and port flaps in ~30 s
// [S, docs/faults.md#timeouts]; used for every crash-type failure.
inline constexpr double kCrashDetection_s = 30;

enum class FaultKind { gpu_slowdown, link_degraded, link_down, node_lost };
inline const NameTable<FaultKind> kFaultKindNames = {{FaultKind::gpu_slowdown, "gpu_slowdown"},
                                                     {FaultKind::link_degraded, "link_degraded"},
                                                     {FaultKind::link_down, "link_down"},
                                                     {FaultKind::node_lost, "node_lost"}};
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
  SourceRef from_where;        // its start time's key (from_*, at_*)
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

// The scripted events as the step simulator's StepFaults, with their times as given (what
// `clustersim run` injects into one step).
StepFaults scripted_step_faults(const std::vector<ScriptedFault>& events);
// Scripted faults active at time t (a link that is down included) as StepFaults whose times
// start at 0, for simulating one step at that moment of the run.
StepFaults step_faults_at(const std::vector<ScriptedFault>& events, double t_s);

// Throws ConfigError at the start time of the first event at or after `run_end_s` (the end of
// the fault-free run, known once the step time is).
void check_fault_times(const FaultsConfig& faults, double run_end_s);

}  // namespace clustersim
