#include "sweep/bounding.hpp"

#include <algorithm>
#include <cstdio>

#include "sweep/ranking.hpp"

namespace clustersim::sweep {

void TopThresholds::add(const SweepRecord& ok_record) {
  SweepRecord r;
  r.status = kStatusOk;
  r.index = ok_record.index;
  r.metrics = ok_record.metrics;
  ok_.push_back(std::move(r));
}

bool TopThresholds::excludes(const nlohmann::json& best_case) const {
  const auto top = static_cast<std::size_t>(top_);
  if (ok_.size() < top) return false;
  std::vector<const SweepRecord*> ok;
  ok.reserve(ok_.size());
  for (const auto& r : ok_) ok.push_back(&r);
  const auto metrics = ranked_metrics(ok);
  if (metrics.empty()) return false;
  for (const auto& m : metrics) {
    const auto it = best_case.find(m.metric);
    if (it == best_case.end() || !it->is_number()) return false;
    const double v = it->get<double>();
    std::vector<double> values;
    values.reserve(ok.size());
    for (const auto* r : ok) {
      if (r->has_metric(m.metric)) values.push_back(r->metric(m.metric));
    }
    if (values.size() < top) return false;
    // The N-th best: higher is better puts the best first.
    const auto nth = values.begin() + static_cast<long>(top - 1);
    if (m.higher_is_better) {
      std::nth_element(values.begin(), nth, values.end(), std::greater<double>());
      if (!(v < *nth)) return false;
    } else {
      std::nth_element(values.begin(), nth, values.end());
      if (!(v > *nth)) return false;
    }
  }
  return true;
}

void mark_bounded(SweepRecord& record, const nlohmann::json& best_case, int top) {
  record.status = kStatusBounded;
  const double bound = best_case.value("step_time_s", 0.0);
  record.metrics = nlohmann::json::object();
  record.metrics["step_time_bound_s"] = bound;
  for (const auto& [name, value] : best_case.items()) {
    if (name != "step_time_s" && value.is_number()) record.metrics[name + "_bound"] = value;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.4g", bound);
  record.reason = std::string("bounded, not simulated: step time >= ") + text +
                  " s (compute and pipeline bubble, no communication), so it cannot enter the "
                  "top " +
                  std::to_string(top) + " of any ranked table (sweep --no-bound simulates it)";
}

}  // namespace clustersim::sweep
