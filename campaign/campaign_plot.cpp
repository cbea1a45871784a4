#include "campaign/campaign_plot.hpp"

#include <cmath>

#include "core/svg_plot.hpp"

namespace clustersim::campaign {

namespace {
constexpr double kSecondsPerDay = 86400;
constexpr double kTokensPerMillion = 1e6;
}  // namespace

std::string trial_svg(const CampaignModel& model, const TrialTrace& trace,
                      const Monitoring& monitoring, const std::string& title) {
  svg::Series throughput{"throughput (M tokens/s)", {}, true, false};
  for (const auto& r : monitoring.rows) {
    const bool stepping = r.phase == "running" && !std::isnan(r.step_time_s);
    const double tps = stepping ? model.tokens_per_step / r.step_time_s : 0.0;
    throughput.points.push_back({r.t_s / kSecondsPerDay, tps / kTokensPerMillion, ""});
  }
  const double end_days = trace.segments.empty() ? 0 : trace.segments.back().t1 / kSecondsPerDay;
  svg::Series reference{"fault-free throughput", {}, true, false};
  reference.points.push_back({0, model.tokens_per_s() / kTokensPerMillion, ""});
  reference.points.push_back({end_days, model.tokens_per_s() / kTokensPerMillion, ""});

  std::vector<svg::Marker> markers;
  for (const auto& e : trace.events) {
    std::string kind;
    if (e.kind == "failure") kind = "failure";
    if (e.kind == "nan") kind = "NaN loss";
    if (e.kind == "restart") kind = "restart";
    if (e.kind == "checkpoint") kind = "checkpoint";
    if (e.kind == "replacement") kind = "replacement";
    if (e.kind == "slowdown_start" || e.kind == "straggler_start") kind = "slowdown";
    if (kind.empty()) continue;
    // Checkpoints come every few minutes: a lane of ticks under the plot, not lines across it.
    markers.push_back({e.t / kSecondsPerDay, kind, kind == "checkpoint"});
  }
  svg::Axes axes;
  axes.title = title;
  axes.x_label = "day";
  axes.y_label = "throughput, million tokens/s";
  axes.y_min = 0.0;
  axes.width = 1000;
  return svg::line_chart(axes, {throughput, reference}, markers);
}

}  // namespace clustersim::campaign
