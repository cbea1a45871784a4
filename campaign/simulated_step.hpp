// The campaign's StepModel backed by the step simulator (step/simulate_step.hpp).
//
// Header-only on purpose: the campaign library itself stays free of SimGrid and of sim/; only
// targets that link clustersim::step (the command-line tool, the step-level tests) include this.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "campaign/step_model.hpp"
#include "core/scenario.hpp"
#include "step/simulate_step.hpp"

namespace clustersim::campaign {

// StepEstimate from a simulated step. Monitoring bandwidths: the cluster's line rates times the
// achieved fractions of step_model.hpp, the NIC rate scaled by the smallest bandwidth factor of
// the degraded links (a probe on the degraded NIC shows that).
inline StepEstimate estimate_from_report(const Scenario& scenario, const step::StepReport& r,
                                         const StepFaults& faults) {
  StepEstimate e;
  e.model = "step simulator";
  e.step_time_s = r.step_time_s;
  e.mfu = r.mfu;
  e.hang = !r.completed || r.hang.has_value();
  if (r.hang) e.hang_on = r.hang->cause;
  e.slowest = !r.slowest_rank.empty() ? r.slowest_rank : r.slowest_link;
  const auto& b = r.breakdown;
  const double busy = b.compute_s + b.tp_s + b.ep_s + b.pp_s + b.dp_s + b.optimizer_s;
  e.compute_share = busy > 0 ? b.compute_s / busy : 0.0;
  double link_factor = 1;
  for (const auto& l : faults.links) link_factor = std::min(link_factor, l.bandwidth_factor);
  e.nvlink_Bps = scenario.cluster.nvlink_Bps * kNvlinkAchievedFraction;
  e.ib_bps = scenario.cluster.nic_Bps * 8.0 * kIbAchievedFraction * link_factor;
  return e;
}

// Each distinct fault set is simulated once, in a child process (simulate_step_isolated), and
// remembered: a campaign asks for the baseline, each scripted fault and each straggler class.
// `calibrations`: the files the scenario's presets name, read by the caller; a step estimated
// above `budget` is refused (ConfigError, step/work_estimate.hpp) before it is simulated.
inline StepModel simulated_step_model(const Scenario& scenario,
                                      const step::StepCalibrations& calibrations,
                                      const step::WorkBudget& budget = {}) {
  auto cache = std::make_shared<std::map<std::string, StepEstimate>>();
  return [scenario, calibrations, budget, cache](const StepFaults& faults) {
    // Key of the fault set (ostringstream: GCC 12 warns falsely on chained string operator+).
    std::ostringstream key_stream;
    for (const auto& g : faults.slow_gpus)
      key_stream << 'g' << g.rank << ':' << g.speed_factor << ';';
    for (const auto& l : faults.links) {
      key_stream << 'l' << l.link << ':' << l.bandwidth_factor << (l.down ? "d;" : ";");
    }
    for (const auto& n : faults.lost_nodes) key_stream << 'n' << n.node << ';';
    const std::string key = key_stream.str();
    if (const auto it = cache->find(key); it != cache->end()) return it->second;
    step::StepOptions options;
    options.faults = faults;
    options.record_trace = false;
    options.budget = budget;
    const step::StepReport report = step::simulate_step_isolated(scenario, calibrations, options);
    const StepEstimate e = estimate_from_report(scenario, report, faults);
    cache->emplace(key, e);
    return e;
  };
}

}  // namespace clustersim::campaign
