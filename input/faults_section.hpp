// The scenario's "faults" section (structs in core/faults.hpp). Types, ranges and enum names
// checked, unknown keys rejected, ranks and nodes checked against the job, link names against
// the cluster graph's (check_fault_links); errors name the file and JSON pointer.
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
//     of the run and must lie before its end (the fault-free duration; checked once the step
//     time is known, core/faults.hpp check_fault_times).
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
// Ranges: input/limits.hpp.
#pragma once

#include <string>
#include <vector>

#include "core/faults.hpp"
#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::input {

// The section at `node` for the job of `scenario` (its ranks and nodes).
FaultsConfig parse_faults(const JsonNode& node, const Scenario& scenario);

// Throws ConfigError at the fault's "link" key unless every link event names one of
// `link_names` (suggesting the nearest).
void check_fault_links(const FaultsConfig& faults, const std::vector<std::string>& link_names);

}  // namespace clustersim::input
