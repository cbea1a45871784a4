// The system-parameter fit (validation/system_fit.hpp) on a published-runs suite: the runs it
// fits, the report it prints, and the `system` block it writes into compute-calibration files.
#pragma once

#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "validation/suite.hpp"
#include "validation/system_fit.hpp"

namespace clustersim::validation {

// One fit run per case, grouped by the compute-calibration file of the case's GPU, left out
// by its source family. `scenarios` receives the loaded scenarios (same order). Throws
// ConfigError when a scenario does not load.
std::vector<FitRun> fit_runs_from_suite(const PublishedSuite& suite,
                                        std::vector<Scenario>& scenarios);

// The starting values of each group: what its calibration file holds, with the parameters
// to fit reset to their nominal values (so a refit does not depend on the previous one).
std::map<std::string, SystemValues> fit_start_values(const std::vector<FitRun>& runs,
                                                     const std::vector<SystemParameterId>& fit);

// Human-readable report: per group the fitted values with their ranges and the folds; per
// source family the MAPE and mean signed error, cross-validated and in-sample; every run.
std::string format_system_fit(const SystemFitResult& fit,
                              const std::vector<SystemParameterId>& parameters);

// Replaces the `system` block of a compute-calibration file (other keys kept in their order),
// atomically; the result is checked with the simulator's loader before it is written.
void write_system_block(const std::string& calibration_file, const SystemCalibration& system,
                        const std::string& note);

}  // namespace clustersim::validation
