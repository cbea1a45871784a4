// Fitting the system parameters (core/system_calibration.hpp) to measured end-to-end runs,
// with leave-one-source-out cross-validation. `clustersim calibrate --runs SUITE` drives it;
// the simulator is handed in as a callback, so this file knows nothing of SimGrid.
//
// Method. Parameters are fitted per group (the compute-calibration file a run's GPU uses: one
// GPU generation and its software) to minimise the sum over runs of
//     |r_i(theta)|,   r_i = ln(simulated step time_i(theta) / step time implied by run i),
// (FitLoss::absolute, the default; r_i^2 with FitLoss::squared) within each parameter's
// plausible range. The simulator is linearised by finite differences (one extra simulation of
// every run per parameter), the box-constrained linear problem is solved (least squares exactly,
// least absolute deviations by reweighted least squares), and the linearisation is repeated at
// the solution (Gauss-Newton) until a step moves no value by more than a thousandth of its range,
// at most `iterations` times. Cross-validation: for every source
// (publication), the parameters of each group are refitted on that group's runs of the other
// sources only, and the source's runs are then simulated with those values. The cross-validated
// error is the one to publish; the in-sample error (every run simulated at the values fitted on all
// runs) is shown beside it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/name_table.hpp"
#include "core/system_calibration.hpp"

namespace clustersim::validation {

// One measured run.
struct FitRun {
  std::string id;
  std::string source;         // the publication: what cross-validation leaves out
  std::string group;          // compute-calibration file of its GPU: parameters are per group
  double implied_step_s = 0;  // the step time its reported figure implies (> 0)
  // The reported metric is a rate (tokens/s, TFLOP/s, MFU: error = implied / simulated - 1) or
  // a time (error = simulated / implied - 1).
  bool rate_metric = true;
};

// Simulates run `run` with the system values `values` (all of its group's parameters).
struct FitQuery {
  int run = 0;
  SystemValues values;
};
// Returns the simulated step time (s) of every query, in order. May evaluate them in parallel.
using FitEvaluator = std::function<std::vector<double>(const std::vector<FitQuery>&)>;

// What a fit minimises over the runs' linearised errors r = ln(simulated / implied step time).
// `absolute`, sum |r|, is the error the suite is scored by (a mean absolute percentage error), and
// a handful of runs far off for a reason the fitted parameters do not stand for cannot pull every
// other run with them; `squared`, sum r^2, is ordinary least squares, which they can.
enum class FitLoss { absolute, squared };
inline const NameTable<FitLoss> kFitLossNames = {{FitLoss::absolute, "absolute"},
                                                 {FitLoss::squared, "squared"}};

// A fit has converged when a Gauss-Newton step moves no value by more than this fraction of its
// parameter's range (0.0003 of the tensor fraction, 0.02 us of the kernel gap).
constexpr double kConvergedFraction = 1e-3;

struct SystemFitOptions {
  std::vector<SystemParameterId> parameters;  // fitted; at least one
  FitLoss loss = FitLoss::absolute;
  // Starting values per group (a parameter absent there starts at its spec's nominal value).
  std::map<std::string, SystemValues> start;
  // Most linearisations (Gauss-Newton steps); the fit stops before when a step moves no value
  // of any group by more than kConvergedFraction of its parameter's range.
  int iterations = 8;
  // Simulate every run at its fold's values as well, for the cross-validated errors. Without it
  // no errors or MAPEs are reported (every step is simulated anyway, to check it): one pass
  // fewer, for when `clustersim validate` simulates the folds anyway.
  bool verify = true;
};

struct RunFit {  // errors only when SystemFitOptions::verify
  FitRun run;
  double in_sample_step_s = 0;     // simulated at its group's values fitted on every run
  double cv_step_s = 0;            // simulated at the values fitted without its source
  double in_sample_error_pct = 0;  // in the reported metric, 100 (predicted - reported)/reported
  double cv_error_pct = 0;
};

struct SystemFitResult {
  // Values, fitted_on, folds and MAPEs. A parameter no run of a group responds to (its value
  // moves no simulated step time) is absent from that group's values and folds.
  std::map<std::string, SystemCalibration> groups;
  std::vector<RunFit> runs;                  // same order as the input; empty when not verified
  std::optional<double> in_sample_mape_pct;  // when verified
  std::optional<double> cross_validated_mape_pct;
  int simulations = 0;     // evaluator queries made
  int linearisations = 0;  // Gauss-Newton steps taken
  bool converged = false;  // the last step moved no value by more than kConvergedFraction
};

// Throws std::invalid_argument on empty input, a non-positive implied step time, or no
// parameters; std::runtime_error when the evaluator returns a non-positive or non-finite time.
SystemFitResult fit_system(const std::vector<FitRun>& runs, const FitEvaluator& evaluate,
                           const SystemFitOptions& options);

// Error of a prediction in the reported metric, percent.
double metric_error_pct(bool rate_metric, double simulated_step_s, double implied_step_s);

// min |A x - b|^2 subject to low <= x <= high, for a handful of columns (exact: every
// combination of free and bound variables is tried). A is row-major, rows x low.size().
std::vector<double> bounded_least_squares(const std::vector<std::vector<double>>& A,
                                          const std::vector<double>& b,
                                          const std::vector<double>& low,
                                          const std::vector<double>& high);

// min sum |A x - b| subject to low <= x <= high (least absolute deviations), by iteratively
// reweighted bounded least squares: each row weighted by 1 / max(|residual|, 1e-6).
std::vector<double> bounded_least_absolute(const std::vector<std::vector<double>>& A,
                                           const std::vector<double>& b,
                                           const std::vector<double>& low,
                                           const std::vector<double>& high);

}  // namespace clustersim::validation
