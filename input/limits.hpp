// Physical ranges of the run-level sections' numbers ("faults", "checkpointing", "cost",
// "campaign"), and the work a campaign may ask for. Each bound is far outside what published
// runs report, so it refuses only input that cannot describe a training run, and keeps every
// simulated timeline finite.
#pragma once

#include "core/run_sections.hpp"
#include "core/units.hpp"

namespace clustersim::input {

// The longest run a campaign simulates: ten years. Llama 3 405B trained for about 54 days of
// its pre-training snapshot (arXiv 2407.21783 §3.3.4); campaign.max_days defaults to 365.
inline constexpr double kMaxRunDays = 3650;
inline constexpr double kMaxRun_s = kMaxRunDays * kSecondsPerDay;
// The most tokens a run may train on: 10^16, about 700 times Llama 3's 15.6T-token pre-training
// (arXiv 2407.21783 §3.1); 1e308 tokens made every per-token rate of a campaign overflow.
inline constexpr double kMaxTokensTotal = 1e16;
// The longest single delay: a week. Watchdogs, failure detection, rescheduling, communicator
// set-up, checkpoint saves and loads and NaN responses take seconds to hours in published runs
// (Meta RSC models 5-minute restarts; MegaScale initialises in under 30 s); a week still lets a
// user model a job that waits for spare parts.
inline constexpr double kMaxDelay_s = 7 * kSecondsPerDay;
// The shortest monitoring interval and fixed checkpoint interval: one second, about the
// shortest optimizer step of a large training job; below it a row or a checkpoint per interval
// describes nothing a run does.
inline constexpr double kMinInterval_s = 1;
// Rows and events one trial may produce: the monitoring rows (max_days / interval), the
// checkpoints of a fixed interval, and the expected failures, stragglers and loss spikes.
inline constexpr double kMaxRowsPerTrial = kMaxEventsPerTrial;
// A failure or straggler rate of one per component-hour: a GPU, node or NIC that fails every
// hour is not part of a training cluster (Llama 3 405B: 419 interruptions in 21.2 million
// GPU-hours, 2e-5 per GPU-hour; arXiv 2407.21783 Table 5).
inline constexpr double kMaxRatePerUnitHour = 1;
// Loss spikes: a NaN rollback per million tokens is a run that never trains.
inline constexpr double kMaxSpikesPerTtokens = 1e6;
// Checkpoint sizes: between a megabyte and ten petabytes; bytes per parameter between 0.5
// (4-bit weights only) and 1000.
inline constexpr double kMinCheckpoint_GB = 1e-3;
inline constexpr double kMaxCheckpoint_GB = 1e7;
inline constexpr double kMinBytesPerParameter = 0.5;
inline constexpr double kMaxBytesPerParameter = 1000;
// Storage rates: between a megabyte per second and a petabyte per second.
inline constexpr double kMinStorage_GBps = 1e-3;
inline constexpr double kMaxStorage_GBps = 1e6;
// A GPU-hour price above a thousand dollars is not a price (H800 rental: $2, DeepSeek-V3
// arXiv 2412.19437 Table 1).
inline constexpr double kMaxUsdPerGpuHour = 1000;
// A given step time: between a millisecond and a day.
inline constexpr double kMinStepTime_s = 1e-3;
inline constexpr double kMaxStepTime_s = kSecondsPerDay;
// Slow drift: at most ten times the step time per day of process age.
inline constexpr double kMaxDriftGrowthPerDay = 10;
// A lognormal straggler duration's sigma: e^5 ~ 150x between the median and one sigma out.
inline constexpr double kMaxDurationSigma = 5;
// The step-time ratio that counts as a straggler: above 1, at most 100.
inline constexpr double kMaxStragglerThreshold = 100;
// The relative step-time cost of a mitigation: at most 10 (eleven times slower).
inline constexpr double kMaxMitigationSlowdown = 10;
// The failure-rate scale: at most a thousand times the published rates.
inline constexpr double kMaxRateScale = 1000;

}  // namespace clustersim::input
