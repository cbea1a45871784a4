// Campaign results as JSON (for --json) and as a human-readable table (stdout).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "campaign/monitoring.hpp"
#include "campaign/monte_carlo.hpp"

namespace clustersim::campaign {

// JSON summary. Always has days{mean,p10,p50,p90,...}, failures{total,by_cause},
// gpu_hours_lost{total,by_cause}, goodput, cost_usd; then the inputs that produced them (step,
// checkpointing, failure model, detection latencies, scripted faults, stragglers, loss spikes,
// drift). `monitoring` (may be null) adds the traced trial's alerts.
nlohmann::json summary_json(const std::string& scenario_name, const CampaignModel& model,
                            const CampaignSummary& summary, const Monitoring* monitoring,
                            int traced_trial);

// A short table of the same figures.
std::string summary_text(const std::string& scenario_name, const CampaignModel& model,
                         const CampaignSummary& summary);

}  // namespace clustersim::campaign
