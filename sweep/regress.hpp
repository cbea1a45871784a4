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
//       "tolerance_pct": 2.0}, ...]}       optional per-scenario tolerance
// Scenario paths are relative to the data directory (core/data_root.hpp data_root()),
// so that CLUSTERSIM_DATA_DIR can point a baseline at another copy of the presets.
#pragma once

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
};

struct Baseline {
  std::string file;
  std::string description;
  double tolerance_pct = 1.0;
  std::string evaluator = "run";
  std::vector<std::string> metrics = {"mfu", "step_time_s"};
  std::vector<BaselineEntry> entries;
};

// Reads and validates a baseline file; ConfigError on bad input.
Baseline load_baseline(const std::string& path);
Baseline parse_baseline(const JsonDocument& document);

// The file a baseline entry's scenario path names (absolute, or below data_root()).
std::string baseline_scenario_path(const std::string& scenario);

// A short name for a scenario path: its file name without ".json".
std::string scenario_short_name(const std::string& scenario);

struct Comparison {
  std::string scenario;  // as in the baseline
  std::string metric;
  std::optional<double> baseline;  // absent: no stored value yet
  std::optional<double> current;   // absent: the evaluation did not produce it
  double change_pct = 0;           // (current - baseline) / |baseline|, percent
  double tolerance_pct = 0;
  bool pass = false;
  std::string message;  // why it failed
};

struct RegressReport {
  std::vector<Comparison> rows;
  double wall_s = 0;
  bool passed() const;
  std::size_t failures() const;
};

// Compares `current` (one evaluation per baseline entry, same order) with the baseline.
// `tolerance_override_pct` (the --tolerance flag) replaces every stored tolerance.
RegressReport compare_with_baseline(const Baseline& baseline,
                                    const std::vector<Evaluation>& current,
                                    std::optional<double> tolerance_override_pct);

// The readable diff: one line per compared metric, failures marked.
std::string format_report(const RegressReport& report);

// JUnit XML (one testsuite, one testcase per scenario and metric).
std::string junit_xml(const RegressReport& report);

// The baseline document with every entry's values replaced by `current` (same order), other
// fields kept as they were in the file.
nlohmann::json updated_baseline(const JsonDocument& original, const Baseline& baseline,
                                const std::vector<Evaluation>& current);

// Evaluates scenario files in child processes, `jobs` at a time; results in input order.
std::vector<Evaluation> evaluate_files(const std::vector<std::string>& paths,
                                       const std::string& executable, const std::string& evaluator,
                                       int jobs, double timeout_s);

}  // namespace clustersim::sweep
