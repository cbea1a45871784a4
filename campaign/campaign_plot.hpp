// SVG plot of one trial: training throughput over the days, with failures, restarts,
// checkpoints and planned replacements marked (drawn with core/svg_plot.hpp).
#pragma once

#include <string>

#include "campaign/monitoring.hpp"
#include "campaign/monte_carlo.hpp"

namespace clustersim::campaign {

// Throughput in million tokens per second of every monitoring row (0 while no step runs), the
// fault-free throughput as a reference line, and one vertical marker per event.
std::string trial_svg(const CampaignModel& model, const TrialTrace& trace,
                      const Monitoring& monitoring, const std::string& title);

}  // namespace clustersim::campaign
