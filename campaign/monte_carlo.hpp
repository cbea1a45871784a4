// The whole training run with faults, as a Monte Carlo over seeded trials.
//
// One trial is event-driven: between events the run advances in closed form (progress is the
// integral of 1 / step-time slowdown), so a 45-day run costs a few thousand events, not a few
// million steps. Events: failures (one Poisson process per cause, on the job's up-time),
// checkpoints (start, end of the blocking part, end of an async persist), stragglers (start,
// detection, end), loss spikes (Poisson in trained tokens), the scenario's scripted step-level
// faults, and completion. After a failure the run stops for the cause's detection latency
// and the restart (rescheduling + communicator set-up + checkpoint load) and resumes from the
// last durable checkpoint; the work since then is lost.
//
// Time accounting is exact: wall time = productive time + lost work + every overhead, each
// attributed to a cause (failure causes, "checkpoint_save", "drift", "mitigation", straggler
// and slowdown names).
//
// Randomness: std::mt19937_64 seeded per trial from (seed, trial index) through SplitMix64,
// with the distributions written out here (not std::*_distribution, whose output the C++
// standard leaves to the library), so a seed gives the same numbers everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "campaign/step_model.hpp"
#include "core/faults.hpp"
#include "core/run_sections.hpp"
#include "core/scenario.hpp"

namespace clustersim::campaign {

struct ResolvedCause {
  std::string name;
  double units = 0;       // components of this kind in the job
  double rate_per_s = 0;  // for the whole job
  Detection detection = Detection::crash;
  double detection_s = 0;
  std::string source;
};

struct ResolvedScriptedFault {
  ScriptedFault spec;
  StepEstimate step;       // a step with this fault alone
  double slowdown = 1;     // step time / baseline step time
  bool crashes = false;    // link down or node lost: the job hangs, then crashes
  double detection_s = 0;  // for crashes
  double ib_factor = 1;    // remaining NIC bandwidth (monitoring)
};

struct ResolvedStraggler {
  StragglerClass spec;
  double rate_per_s = 0;  // for the whole job
  StepEstimate step;      // a step with one such straggler
  double slowdown = 1;
  double ib_factor = 1;
};

// Everything a trial needs, resolved to seconds and rates for this job.
struct CampaignModel {
  int gpus = 0;
  int nodes = 0;
  int nics = 0;
  double tokens_total = 0;
  double tokens_per_step = 0;
  double model_parameters = 0;
  StepEstimate baseline;
  double productive_s = 0;  // tokens_total / throughput: the fault-free run
  std::vector<ResolvedCause> causes;
  double failure_rate_per_s = 0;
  // Detection latencies.
  double ib_detection_s = 0;  // NCCL: 4.096 us x 2^IB_TIMEOUT x (1 + IB_RETRY_CNT)
  double watchdog_s = 0;
  double crash_detection_s = 0;
  double network_detection_s = 0;  // min(ib_detection_s, watchdog_s)
  // Checkpointing.
  CheckpointConfig checkpoint;
  double interval_s = kInfinity;       // compute time between checkpoints
  double stall_s = 0;                  // training stops this long per checkpoint
  double persist_s = 0;                // async: written in the background this long after the stall
  double restart_s = 0;                // after a hardware failure: reschedule + init + load
  double rollback_s = 0;               // after a NaN: init + load (same nodes)
  double rollback_mtbf_s = kInfinity;  // mean time between events that roll back
  // Faults.
  std::vector<ResolvedScriptedFault> scripted;
  std::vector<ResolvedStraggler> stragglers;
  double straggler_rate_per_s = 0;
  StragglerPolicy policy;
  LossSpikes spikes;
  double spike_rate_per_progress_s = 0;
  double drift_growth_per_s = 0;
  bool drift_resets_on_restart = true;
  double mitigation_factor = 1;
  Drift drift;
  // Cost and limits.
  double usd_per_gpu_hour = 0;
  std::string price_source;
  double max_wall_s = 0;
  std::vector<std::string> notes;

  double tokens_per_s() const { return tokens_per_step / baseline.step_time_s; }
};

// Progress (productive seconds) made in `dt` wall seconds from process age `age`, when each
// step takes k (1 + g age) times the baseline step (k: mitigations x slowest-rank factor,
// g: drift growth per second): the integral of 1 / (k (1 + g a)).
double progress_over(double age, double dt, double k, double g);
// Its inverse: wall seconds to make `dp` productive seconds from age `age` (+inf if never).
double wall_for(double age, double dp, double k, double g);

// What the campaign needs of the job whatever its step time: tokens_total > 0 and
// global_batch x seq_len > 0. ConfigError naming the scenario file and key; a command checks it
// before it simulates any step (a large step takes tens of seconds).
void check_campaign_job(const Scenario& scenario);

// tokens_total / (global_batch x seq_len / step_time_s): the fault-free run, seconds.
double fault_free_duration_s(const Scenario& scenario, double step_time_s);

// Resolves the parsed sections for this scenario. `step` gives step times with step-level
// faults; `baseline` is step({}) already computed; `representative_link` names the NIC link
// of rank 0 (link stragglers are simulated on it). Throws ConfigError when a value only turns
// out wrong here (e.g. a degraded link the job does not use is reported in notes instead).
CampaignModel build_campaign_model(const Scenario& scenario, const CampaignSettings& settings,
                                   const FaultsConfig& faults, const CheckpointConfig& checkpoint,
                                   const CostConfig& cost, const StepModel& step,
                                   const StepEstimate& baseline, double model_parameters,
                                   const std::string& representative_link);

// What one trial looked like, for monitoring and plots.
enum class Phase { running, checkpoint, hung, restarting };
const char* to_string(Phase p);

struct TraceSegment {
  double t0 = 0, t1 = 0;  // wall clock, seconds
  Phase phase = Phase::running;
  double progress0 = 0;    // productive seconds done at t0
  double age0 = 0;         // process age at t0 (drift)
  double slowdown = 1;     // straggler / slow-GPU factor on the step time
  double ib_factor = 1;    // remaining NIC bandwidth
  std::string slow_cause;  // who slows the step, "" if nobody
};

struct TraceEvent {
  double t = 0;
  std::string kind;  // failure, restart, checkpoint, nan, replacement, slowdown_start,
                     // slowdown_end, straggler_start, straggler_end, finished
  std::string cause;
  std::string detail;
};

struct TrialTrace {
  std::vector<TraceSegment> segments;
  std::vector<TraceEvent> events;
};

struct TrialResult {
  double wall_s = 0;
  bool finished = false;
  double progress_s = 0;
  int interruptions = 0;
  std::map<std::string, int> interruptions_by_cause;
  std::map<std::string, double> lost_s_by_cause;  // wall seconds, every overhead included
  int checkpoints = 0;
  double skipped_tokens = 0;
  double goodput = 0;  // productive_s / wall_s
};

std::uint64_t trial_seed(std::uint64_t seed, int trial);

// One trial. Deterministic for (model, seed). `trace` may be null.
TrialResult run_trial(const CampaignModel& model, std::uint64_t seed, TrialTrace* trace);

struct Stats {
  double mean = 0, stddev = 0, p10 = 0, p50 = 0, p90 = 0, min = 0, max = 0;
};
// Percentiles by linear interpolation between order statistics (Hyndman-Fan type 7).
Stats describe(std::vector<double> values);

struct CampaignSummary {
  int trials = 0;
  std::uint64_t seed = 0;
  Stats days, cost_usd, goodput, interruptions;
  double unfinished_fraction = 0;
  double days_standard_error = 0;                         // stddev / sqrt(trials)
  std::map<std::string, double> interruptions_by_cause;   // mean per trial
  std::map<std::string, double> gpu_hours_lost_by_cause;  // mean per trial
  double checkpoints = 0;                                 // mean per trial
  double skipped_tokens = 0;                              // mean per trial
};

// `trials` trials with seeds trial_seed(seed, 0..trials-1). `on_trial` (optional) is called
// after each trial (a progress display).
CampaignSummary run_campaign(const CampaignModel& model, int trials, std::uint64_t seed,
                             const std::function<void()>& on_trial = {});

}  // namespace clustersim::campaign
