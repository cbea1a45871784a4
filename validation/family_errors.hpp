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
  double mape_pct = 0;    // cross-validated where a fit exists
  double signed_pct = 0;  // mean of (predicted - reported) / reported
  double in_sample_mape_pct = 0;
  double in_sample_signed_pct = 0;
};

// One entry per family, in the order families first appear; cases that failed are left out.
std::vector<FamilyErrors> errors_by_family(const SuiteResult& result);

// Markdown table of errors_by_family, with the suite's totals.
std::string family_errors_markdown(const SuiteResult& result);

// Plain-text version for the terminal.
std::string family_errors_text(const SuiteResult& result);

// SVG: signed error (%) against the GPU count (log2), one series per family.
std::string signed_error_svg(const SuiteResult& result, const std::string& date);

}  // namespace clustersim::validation
