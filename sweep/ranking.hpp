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

// The summary printed at the end of a sweep: counts, then one table per ranking.
std::string format_summary(const std::vector<SweepRecord>& records, int top);

}  // namespace clustersim::sweep
