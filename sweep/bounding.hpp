// Bounded, not simulated: the points of a ranked sweep that cannot enter the top of any table.
//
// A point's lower bound on its step time (evaluator.hpp BoundCheck) gives, through the same
// derived metrics as a simulated point (add_derived_metrics), the best each ranked metric could
// be: MFU, throughput and cost are monotone in the step time at a fixed GPU count, batch and
// price. Once N points are ok, a point whose best possible value is strictly worse than the
// N-th best of every ranked table cannot be in any table's top N (a tie could be, by index);
// so it is recorded "bounded" with its bound instead of simulated.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sweep/results.hpp"

namespace clustersim::sweep {

// The N-th best value of each ranked metric (ranking.hpp ranked_metrics) among the ok records
// added so far.
class TopThresholds {
 public:
  explicit TopThresholds(int top) : top_(top) {}
  void add(const SweepRecord& ok_record);
  // True when, for every ranked metric, at least N records are ok and `best_case` (the metrics
  // at the bound, derived metrics included) is strictly worse than the N-th best.
  bool excludes(const nlohmann::json& best_case) const;

 private:
  int top_;
  std::vector<SweepRecord> ok_;  // metrics only
};

// The record of a point bounded out: status bounded, the bound as metrics step_time_bound_s
// and NAME_bound for each ranked metric in `best_case`, and the reason.
void mark_bounded(SweepRecord& record, const nlohmann::json& best_case, int top);

}  // namespace clustersim::sweep
