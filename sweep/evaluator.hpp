// Evaluating scenarios in child processes and reading what they report.
//
// An evaluator is a subcommand of the clustersim binary that writes its results as JSON to
// the file given after --json (its stdout, the human report, is not read):
//   "run"    `clustersim run FILE --json OUT`: the step simulation (step_time_s, mfu,
//            breakdown, memory)
//   "check"  `clustersim check FILE --json OUT`: the analytic check only (params_total,
//            flops_per_step, memory_per_gpu_GiB, fits); fast, no simulation
// Each evaluation is its own process (SimGrid keeps one engine per process); see
// process_pool.hpp.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "sweep/process_pool.hpp"

namespace clustersim::sweep {

// The evaluator names, for messages and validation.
const std::vector<std::string>& evaluator_names();

// argv of the child that evaluates the scenario file `scenario_path` with `evaluator` and
// writes its JSON to `json_path`; a "run" child gets `--max-memory max_memory` when it is not
// empty (its memory budget, step/work_estimate.hpp), and `--quiet` (the parent shows the
// progress). Throws std::invalid_argument for an unknown evaluator name.
std::vector<std::string> evaluator_argv(const std::string& executable, const std::string& evaluator,
                                        const std::string& scenario_path,
                                        const std::string& json_path,
                                        const std::string& max_memory = "");

// What one evaluation produced.
struct Evaluation {
  std::string status;                                   // kStatus* of results.hpp
  std::string reason;                                   // for non-ok statuses
  nlohmann::json metrics = nlohmann::json::object();    // numbers by name
  nlohmann::json breakdown = nlohmann::json::object();  // seconds per step by component
  std::vector<std::string> warnings;
};

// Reads a finished child: the JSON it wrote to `json_path` (numbers at the top level become
// metrics, numbers of nested objects "outer.inner" metrics, "breakdown" the breakdown;
// "fits": false or "feasible": false makes the point infeasible) or, if it failed, why.
Evaluation interpret_child(const ProcessResult& result, const std::string& json_path);

// Adds metrics derived from the step time and the scenario: tokens_per_s,
// time_to_train_days (tokens_total / throughput; only when tokens_total is set), gpu_hours
// (for the whole run) and cost_usd (gpu_hours x usd_per_gpu_hour, when the price is > 0).
void add_derived_metrics(nlohmann::json& metrics, const Scenario& scenario,
                         double usd_per_gpu_hour);

// What the derived metrics depend on besides the step time.
struct RunSize {
  double tokens_per_step = 0;
  double tokens_total = 0;  // 0: not set
  double gpus = 0;
};
// The run size of a resolved scenario's JSON (a sweep point).
RunSize run_size(const nlohmann::json& scenario);
// Replaces the derived metrics with those of `size` and the price (a reused result whose
// scenario changed only in tokens or price).
void add_derived_metrics(nlohmann::json& metrics, const RunSize& size, double usd_per_gpu_hour);

// "needs 95.20 GiB per GPU but only 75.24 GiB is usable: 19.96 GiB over".
std::string memory_verdict(double need_GiB, double usable_GiB);

// An in-process feasibility verdict (the memory model), consulted before any child runs.
// Returns an Evaluation with status infeasible (and its numbers) or nullopt when it fits.
using FeasibilityCheck = std::function<std::optional<Evaluation>(const Scenario&)>;

// An in-process lower bound on a point's step time, needing no simulation
// (step/lower_bound.hpp): the metrics the point would have at that step time, "step_time_s" and
// "mfu" (derived metrics are added by the caller); an empty object when there is no bound.
using BoundCheck = std::function<nlohmann::json(const Scenario&)>;

}  // namespace clustersim::sweep
