#include "campaign/step_model.hpp"

#include <algorithm>
#include <stdexcept>

namespace clustersim::campaign {

StepModel fixed_step_model(const Scenario& scenario, double step_time_s, double mfu,
                           double exposed_comm_share) {
  if (!(step_time_s > 0)) throw std::invalid_argument("fixed_step_model: step_time_s <= 0");
  if (!(mfu > 0) || mfu > 1) throw std::invalid_argument("fixed_step_model: mfu not in (0, 1]");
  const double nvlink_Bps = scenario.cluster.nvlink_Bps * kNvlinkAchievedFraction;
  const double ib_bps = scenario.cluster.nic_Bps * 8.0 * kIbAchievedFraction;
  return [=](const StepFaults& faults) {
    StepEstimate e;
    e.model = "given step time";
    e.nvlink_Bps = nvlink_Bps;
    e.ib_bps = ib_bps;
    // Without a step simulation the busy time that is not exposed communication is taken as
    // compute (overlapped communication runs beside it).
    e.compute_share = 1.0 - exposed_comm_share;
    double factor = 1;
    for (const auto& g : faults.slow_gpus) {
      if (1.0 / g.speed_factor > factor) {
        factor = 1.0 / g.speed_factor;
        e.slowest = "rank " + std::to_string(g.rank);
      }
    }
    if (!faults.slow_gpus.empty()) {
      e.note = "GPU slowdown: step time scaled by 1/speed_factor (upper bound, no overlap)";
    }
    double link_factor = 1;
    for (const auto& l : faults.links) {
      if (l.down) {
        e.hang = true;
        e.hang_on = "link " + l.link;
        continue;
      }
      const double stretched = 1.0 + exposed_comm_share * (1.0 / l.bandwidth_factor - 1.0);
      if (stretched > factor) {
        factor = stretched;
        e.slowest = "link " + l.link;
      }
      link_factor = std::min(link_factor, l.bandwidth_factor);
    }
    if (!faults.links.empty() && exposed_comm_share == 0) {
      e.note += std::string(e.note.empty() ? "" : "; ") +
                "degraded link: no exposed communication share given, step time unchanged";
    }
    for (const auto& n : faults.lost_nodes) {
      e.hang = true;
      e.hang_on = "node " + std::to_string(n.node);
    }
    e.ib_bps *= link_factor;
    e.step_time_s = step_time_s * factor;
    e.mfu = mfu / factor;
    return e;
  };
}

}  // namespace clustersim::campaign
