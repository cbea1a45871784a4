// Regression checks of predicted MFU and step time against a stored baseline.
//
// Baseline file (regress/baseline.json):
//   {"description": "...",
//    "tolerance_pct": 1.0,                 relative change allowed, percent
//    "evaluator": "run",                   evaluator.hpp
//    "metrics": ["mfu", "step_time_s"],    what is compared (and what --update stores)
//    "scenarios": [
//      {"scenario": "scenarios/seed-optimized-1024.json",
//       "values": {"mfu": 0.46, "step_time_s": 1.2},
//       "tolerance_pct": 2.0,              optional per-scenario tolerance
//       "scenario_hash": "0123456789abcdef",   written by --update: scenario_hash() below
//       "simulator": "clustersim 0.1.0 (commit ...)",  written by --update: who recorded it
//       "breakdown": {"compute_s": 1.0, ...}}, ...]}   written by --update: seconds per step
// A relative scenario path is looked up next to the baseline file first, then (for baselines
// written before that rule) in the data directory (core/data_root.hpp data_root()).
// scenario_hash, simulator and breakdown are optional: without them a failure's cause is
// "unknown" and no breakdown delta is printed.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "sweep/evaluator.hpp"

namespace clustersim::sweep {

struct BaselineEntry {
  std::string scenario;                  // as written in the file
  std::map<std::string, double> values;  // stored values by metric
  std::optional<double> tolerance_pct;
  std::string scenario_hash;                // "" when not recorded
  std::string simulator;                    // "" when not recorded
  std::map<std::string, double> breakdown;  // seconds per step by component; empty: unknown
};

struct Baseline {
  std::string file;
  std::string description;
  double tolerance_pct = 1.0;
  std::string evaluator = "run";
  std::vector<std::string> metrics = {"mfu", "step_time_s"};
  std::vector<BaselineEntry> entries;
};

// Reads and validates a baseline file; ConfigError on bad input. A scenario file that does
// not exist is not an input error here: it is one failing check of the run (ScenarioRun).
Baseline load_baseline(const std::string& path);
Baseline parse_baseline(const JsonDocument& document);

// A short name for a scenario path: its file name without ".json".
std::string scenario_short_name(const std::string& scenario);

// A metric value as people read it: MFU in percent ("46.000%"), names ending in "_s" in
// seconds ("1.2000 s"), others with 6 significant digits; "-" when absent.
std::string show_metric(const std::string& metric, const std::optional<double>& value);

// A baseline entry's scenario as found now.
struct ScenarioRun {
  std::string path;       // the file the scenario path names ("" when none exists)
  std::string error;      // non-empty: missing or unreadable, so not evaluated (why)
  std::string hash;       // scenario_hash() of the file; "" when its presets do not resolve
  Evaluation evaluation;  // the evaluator's result (status failed when `error` is set)
};

// Finds `scenario` (a baseline entry's path): an absolute path as it is; a relative one next
// to `baseline_file`, else below data_root(). Reads it and hashes it. Never throws for a
// missing or malformed file: the run's `error` says which places were looked at.
ScenarioRun locate_scenario(const std::string& scenario, const std::string& baseline_file);

// fnv1a64_hex (sweep_spec.hpp) of the canonical JSON of the scenario with its model, cluster
// and GPU presets inlined: changes when the scenario file or a preset it names is edited,
// not when the simulator or a calibration file changes. Throws ConfigError when a preset
// it names does not exist.
std::string scenario_hash(const JsonDocument& scenario);

// Locates every entry's scenario and evaluates the ones found in child processes, `jobs` at
// a time; one ScenarioRun per entry, in order. `on_done` (optional) is called once per entry as
// it is settled: a missing scenario at once, the others as their child ends.
// `max_memory`: each `run` evaluation's --max-memory (bytes as text), "" for its default.
std::vector<ScenarioRun> run_baseline(const Baseline& baseline, const std::string& executable,
                                      int jobs, double timeout_s, const std::string& max_memory,
                                      const std::function<void()>& on_done = {});

struct Comparison {
  std::string scenario;  // as in the baseline
  std::string metric;    // "scenario" for the one check of a missing or unreadable scenario
  std::optional<double> baseline;  // absent: no stored value yet
  std::optional<double> current;   // absent: the evaluation did not produce it
  double change_pct = 0;           // (current - baseline) / |baseline|, percent
  double tolerance_pct = 0;
  bool pass = false;
  std::string message;  // why it failed, with the likely cause (change_cause)
};

struct RegressReport {
  std::vector<Comparison> rows;
  double wall_s = 0;
  bool passed() const;
  std::size_t failures() const;
};

// Why an evaluation of `entry` differs from its record: "scenario edited since the baseline"
// when the hashes differ, else "simulator changed (...)" with both versions; "cause unknown"
// when the baseline or the scenario has no hash. `simulator` is this build's version.
std::string change_cause(const BaselineEntry& entry, const ScenarioRun& run,
                         const std::string& simulator);

// The components of the step-time breakdown that moved the most between the record and now,
// e.g. "breakdown: dp_s +0.300 s (0.200 -> 0.500), compute_s +0.010 s (...)"; "" when either
// side has no breakdown.
std::string breakdown_delta(const std::map<std::string, double>& recorded,
                            const nlohmann::json& current);

// Compares `current` (one run per baseline entry, same order) with the baseline.
// `tolerance_override_pct` (the --tolerance flag) replaces every stored tolerance; `simulator`
// is this build's version (for change_cause).
RegressReport compare_with_baseline(const Baseline& baseline,
                                    const std::vector<ScenarioRun>& current,
                                    std::optional<double> tolerance_override_pct,
                                    const std::string& simulator);

// The readable diff: one line per compared metric, columns as wide as their content,
// failures marked.
std::string format_report(const RegressReport& report);

// JUnit XML (one testsuite, one testcase per scenario and metric).
std::string junit_xml(const RegressReport& report);

// Metric names of `metrics` that no ok evaluation of `current` reports, and the sorted names
// that they do report (for the --update error).
std::vector<std::string> unknown_metrics(const std::vector<std::string>& metrics,
                                         const std::vector<ScenarioRun>& current,
                                         std::vector<std::string>& known);

// The baseline document with every entry's values, scenario_hash, simulator and breakdown
// replaced by those of `current` (same order), other fields kept as they were in the file.
nlohmann::json updated_baseline(const JsonDocument& original, const Baseline& baseline,
                                const std::vector<ScenarioRun>& current,
                                const std::string& simulator);

// Evaluates scenario files in child processes, `jobs` at a time; results in input order.
// `on_done` (optional) is called as each child ends.
std::vector<Evaluation> evaluate_files(const std::vector<std::string>& paths,
                                       const std::string& executable, const std::string& evaluator,
                                       int jobs, double timeout_s, const std::string& max_memory,
                                       const std::function<void()>& on_done = {});

}  // namespace clustersim::sweep
