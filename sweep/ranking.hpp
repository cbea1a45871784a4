// Ranked tables of a sweep's results, and why the runners-up lose to the winner.
#pragma once

#include <string>
#include <vector>

#include "sweep/results.hpp"

namespace clustersim::sweep {

struct RankedRow {
  const SweepRecord* record = nullptr;
  double value = 0;        // the ranked metric
  std::string why_behind;  // runner-ups only: what costs them against the winner
};

struct Ranking {
  std::string title;   // "best MFU"
  std::string metric;  // metrics key
  bool higher_is_better = true;
  std::vector<RankedRow> rows;  // best first, at most `top`
};

// A ranked table's metric: what rank_records() ranks `records` by.
struct RankedMetric {
  std::string title;
  std::string metric;
  bool higher_is_better = true;
};
std::vector<RankedMetric> ranked_metrics(const std::vector<const SweepRecord*>& ok);

// The rankings a sweep's ok records support: best MFU, best time to train (or throughput
// when the scenario gives no tokens_total), best cost (USD when a price is set, else
// GPU-hours); lowest memory per GPU when no record has an MFU (the "check" evaluator).
// Ties break by point index. `records` must outlive the result.
std::vector<Ranking> rank_records(const std::vector<SweepRecord>& records, int top);

// Why `runner_up` is behind `winner`, from their step-time breakdowns compared as GPU-seconds
// per token (so that different GPU counts compare fairly): the component that grew most, and
// the next one if it is also large. With the same GPU count and batch:
// "pipeline bubble +0.410 s/step (+23.0%)" (the share of the winner's step); otherwise
// "exposed DP comm +8.0% GPU-time per token; 1024 vs 512 GPUs". Empty without breakdowns.
std::string loss_reason(const SweepRecord& runner_up, const SweepRecord& winner);

// A readable name of a breakdown component: "exposed_dp_s" -> "exposed DP".
std::string component_label(const std::string& component);

// Where one point stands — the point whose parameters equal `parameters`, e.g. the base
// scenario's own layout: its rank by every ranking's metric among all ok points, and why the
// best of each beats it. A point that is not ok gets its status and reason; parameters that
// match no point say so. `what` names the point ("the base scenario").
std::string format_reference(const std::vector<SweepRecord>& records,
                             const nlohmann::json& parameters, const std::string& what);

// The summary printed at the end of a sweep: counts, then one table per ranking, then, when
// `reference` is given, format_reference() of it (as "the base scenario").
std::string format_summary(const std::vector<SweepRecord>& records, int top,
                           const nlohmann::json* reference = nullptr);

}  // namespace clustersim::sweep
