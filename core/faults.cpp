#include "core/faults.hpp"

#include <cmath>
#include <sstream>

#include "core/units.hpp"

namespace clustersim {

const char* to_string(FaultKind k) {
  return kFaultKindNames.name(k);
}

std::string ScriptedFault::target() const {
  switch (kind) {
    case FaultKind::gpu_slowdown: return "rank " + std::to_string(rank);
    case FaultKind::link_degraded:
    case FaultKind::link_down: return "link " + link;
    case FaultKind::node_lost: return "node " + std::to_string(node);
  }
  return "?";
}

double LossSpikes::effective_rate_per_token() const {
  return (filter_removes_outliers() ? 0.0 : outlier_rate_per_token) + other_rate_per_token;
}

bool LossSpikes::filter_removes_outliers() const {
  return filter.enabled && filter.max_tokens < outlier_min_tokens;
}

double Drift::effective_growth_per_s() const {
  const double frag = mitigations.empty_cache_every_steps > 0 ? 0.0 : fragmentation_share;
  const double leak = mitigations.limit_loader_workers ? 0.0 : 1.0 - fragmentation_share;
  return growth_per_day * (frag + leak) / kSecondsPerDay;
}

double Drift::mitigation_factor(double step_time_s) const {
  double m = 1.0;
  if (mitigations.empty_cache_every_steps > 0) {
    m += mitigations.empty_cache_cost_s / (mitigations.empty_cache_every_steps * step_time_s);
  }
  if (mitigations.limit_loader_workers) m += mitigations.loader_slowdown;
  return m;
}

namespace {

// Adds one event to `out`: with its times as given, or starting at 0 (active now).
void add_step_fault(StepFaults& out, const ScriptedFault& e, bool as_given) {
  const double from = as_given ? e.from_s : 0.0;
  switch (e.kind) {
    case FaultKind::gpu_slowdown: out.slow_gpus.push_back({e.rank, e.factor, from, e.cause}); break;
    case FaultKind::link_degraded:
    case FaultKind::link_down: {
      const double until = as_given && std::isfinite(e.until_s) ? e.until_s : 0.0;
      out.links.push_back({e.link, e.factor, e.kind == FaultKind::link_down, from, until});
      break;
    }
    case FaultKind::node_lost: out.lost_nodes.push_back({e.node, from}); break;
  }
}

std::string days_text(double s) {
  std::ostringstream os;
  os.precision(6);
  os << s / kSecondsPerDay << " days";
  return os.str();
}

}  // namespace

StepFaults scripted_step_faults(const std::vector<ScriptedFault>& events) {
  StepFaults out;
  for (const auto& e : events) add_step_fault(out, e, true);
  return out;
}

StepFaults step_faults_at(const std::vector<ScriptedFault>& events, double t_s) {
  StepFaults out;
  for (const auto& e : events) {
    if (t_s >= e.from_s && t_s < e.until_s) add_step_fault(out, e, false);
  }
  return out;
}

void check_fault_times(const FaultsConfig& faults, double run_end_s) {
  for (const auto& e : faults.events) {
    if (e.from_s >= run_end_s) {
      e.from_where.fail(days_text(e.from_s) + " is past the end of the run (it takes " +
                        days_text(run_end_s) + " without faults)");
    }
  }
}

}  // namespace clustersim
