// Errors per source family of a published-runs suite: the MAPE and the mean *signed* error
// (a simulator that is always optimistic misleads budgets even when its MAPE looks fine),
// cross-validated and in-sample, and a plot of the signed error against the GPU count.
#pragma once

#include <string>
#include <vector>

#include "validation/suite.hpp"

namespace clustersim::validation {

struct FamilyErrors {
  std::string family;  // PublishedCase::family
  std::string group;   // the publication, as the report names it
  int cases = 0;
  double mape_pct = 0;  // cross-validated where a fit exists
  // Mean speed error, one sign for every metric: 100 (reported step time / predicted step time
  // - 1), positive = predicted faster than the run went (faster_pct).
  double signed_pct = 0;
  double in_sample_mape_pct = 0;
  double in_sample_signed_pct = 0;
};

// A case's error as a speed error: positive = predicted faster. A rate metric's error already is
// one; a time metric's (step or collective time, positive = predicted slower) is turned round:
// 100 (1 / (1 + error/100) - 1).
double faster_pct(const CaseResult& c, double error_pct);

// One entry per family, in the order families first appear; cases that failed are left out.
std::vector<FamilyErrors> errors_by_family(const SuiteResult& result);

// Markdown table of errors_by_family, with the suite's totals.
std::string family_errors_markdown(const SuiteResult& result);

// Plain-text version for the terminal.
std::string family_errors_text(const SuiteResult& result);

// SVG: the speed error (faster_pct) against the GPU count (log2), one series per family.
std::string signed_error_svg(const SuiteResult& result, const std::string& date);

}  // namespace clustersim::validation
