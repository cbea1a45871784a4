#include "sweep/regress.hpp"

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/data_root.hpp"
#include "core/errors.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

bool is_hash(const std::string& s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The optional fields --update records beside an entry's values.
void parse_record_fields(const JsonNode& item, BaselineEntry& e) {
  if (item.has("scenario_hash")) {
    const JsonNode h = item.at("scenario_hash");
    e.scenario_hash = h.as_string();
    if (!is_hash(e.scenario_hash)) h.fail("expected 16 lowercase hex digits (written by --update)");
  }
  e.simulator = item.string_or("simulator", "");
  if (const auto breakdown = item.find("breakdown")) {
    breakdown->require_object();
    for (const auto& [name, v] : breakdown->members()) e.breakdown[name] = v.as_number();
  }
}

BaselineEntry parse_entry(const JsonNode& item, const Baseline& b) {
  item.only_keys(
      {"scenario", "values", "tolerance_pct", "scenario_hash", "simulator", "breakdown"});
  BaselineEntry e;
  e.scenario = item.string_at("scenario");
  if (e.scenario.empty()) item.fail_at("scenario", "a scenario path cannot be empty");
  for (const auto& earlier : b.entries) {
    if (earlier.scenario == e.scenario)
      item.fail_at("scenario", "\"" + e.scenario + "\" is listed twice");
  }
  if (const auto values = item.find("values")) {
    values->require_object();
    for (const auto& [name, v] : values->members()) {
      if (std::find(b.metrics.begin(), b.metrics.end(), name) == b.metrics.end()) {
        v.fail("\"" + name + "\" is not one of the compared metrics (" + join_names(b.metrics) +
               ")");
      }
      e.values[name] = v.as_number();
    }
  }
  if (item.has("tolerance_pct")) e.tolerance_pct = item.at("tolerance_pct").as_non_negative();
  parse_record_fields(item, e);
  return e;
}

// The comparison of one metric that both the baseline and the evaluation have.
void compare_values(Comparison& c, const std::string& cause, const std::string& breakdown) {
  const double base = *c.baseline;
  const double diff = *c.current - base;
  c.change_pct = base != 0 ? 100 * diff / std::fabs(base) : (diff == 0 ? 0 : INFINITY);
  c.pass = std::fabs(c.change_pct) <= c.tolerance_pct;
  if (c.pass) return;
  c.message = c.metric + " changed by " + fmt("%+.2f", c.change_pct) + "% (" +
              show_metric(c.metric, c.baseline) + " -> " + show_metric(c.metric, c.current) +
              "), beyond the " + fmt("%g", c.tolerance_pct) + "% tolerance; " + cause;
  if (!breakdown.empty()) c.message += "; " + breakdown;
}

// The rows of one entry: one per metric, or one "scenario" row when it could not be read.
void compare_entry(const Baseline& baseline, const BaselineEntry& entry, const ScenarioRun& run,
                   std::optional<double> tolerance_override_pct, const std::string& simulator,
                   std::vector<Comparison>& rows) {
  const double tolerance =
      tolerance_override_pct.value_or(entry.tolerance_pct.value_or(baseline.tolerance_pct));
  if (!run.error.empty()) {
    Comparison c;
    c.scenario = entry.scenario;
    c.metric = "scenario";
    c.tolerance_pct = tolerance;
    c.message = run.error;
    rows.push_back(std::move(c));
    return;
  }
  const Evaluation& e = run.evaluation;
  const std::string cause = change_cause(entry, run, simulator);
  const std::string breakdown = breakdown_delta(entry.breakdown, e.breakdown);
  for (const auto& metric : baseline.metrics) {
    Comparison c;
    c.scenario = entry.scenario;
    c.metric = metric;
    c.tolerance_pct = tolerance;
    if (const auto it = entry.values.find(metric); it != entry.values.end())
      c.baseline = it->second;
    if (const auto it = e.metrics.find(metric); it != e.metrics.end() && it->is_number())
      c.current = it->get<double>();
    if (e.status != kStatusOk) {
      c.message = "evaluation " + e.status + ": " + e.reason + "; " + cause;
    } else if (!c.current) {
      c.message = "the evaluator reported no \"" + metric + "\"";
    } else if (!c.baseline) {
      c.message = "no stored value (run with --update to record one)";
    } else {
      compare_values(c, cause, breakdown);
    }
    rows.push_back(std::move(c));
  }
}

}  // namespace

Baseline load_baseline(const std::string& path) {
  return parse_baseline(JsonDocument::load(path));
}

Baseline parse_baseline(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  root.only_keys({"description", "tolerance_pct", "evaluator", "metrics", "scenarios"});
  Baseline b;
  b.file = document.file();
  b.description = root.string_or("description", "");
  b.tolerance_pct = root.non_negative_or("tolerance_pct", b.tolerance_pct);
  b.evaluator = root.enum_or("evaluator", evaluator_names(), b.evaluator);
  if (const auto metrics = root.find("metrics")) {
    b.metrics.clear();
    for (const auto& m : metrics->items()) {
      const std::string name = m.as_string();
      if (name.empty()) m.fail("a metric name cannot be empty");
      if (std::find(b.metrics.begin(), b.metrics.end(), name) != b.metrics.end()) {
        m.fail("\"" + name + "\" is listed twice");
      }
      b.metrics.push_back(name);
    }
    if (b.metrics.empty()) metrics->fail("name at least one metric to compare");
  }
  const JsonNode scenarios = root.at("scenarios");
  for (const auto& item : scenarios.items()) b.entries.push_back(parse_entry(item, b));
  if (b.entries.empty()) scenarios.fail("a baseline needs at least one scenario");
  return b;
}

std::string scenario_short_name(const std::string& scenario) {
  return fs::path(scenario).stem().string();
}

std::string scenario_hash(const JsonDocument& scenario) {
  const json resolved = inline_presets(scenario.root().raw(), scenario.root());
  return fnv1a64_hex("clustersim-regress-scenario v1\n" + canonical_json(resolved));
}

ScenarioRun locate_scenario(const std::string& scenario, const std::string& baseline_file) {
  ScenarioRun run;
  if (fs::path(scenario).is_absolute()) {
    if (fs::exists(scenario)) {
      run.path = scenario;
    } else {
      run.error = "scenario \"" + scenario + "\" does not exist";
    }
  } else {
    const fs::path beside = fs::path(baseline_file).parent_path() / scenario;
    const fs::path in_data = fs::path(data_root()) / scenario;
    if (fs::exists(beside)) {
      run.path = beside.string();
    } else if (fs::exists(in_data)) {
      run.path = in_data.string();
    } else {
      run.error = "scenario \"" + scenario + "\" is neither next to the baseline file (" +
                  beside.string() + ") nor in the data directory (" + in_data.string() + ")";
    }
  }
  if (!run.error.empty()) return run;
  try {
    const JsonDocument document = JsonDocument::load(run.path);
    try {
      run.hash = scenario_hash(document);
    } catch (const ConfigError&) {
      // A preset it names is missing: the evaluation reports that; the cause stays unknown.
    }
  } catch (const ConfigError& e) {
    run.error = std::string("scenario cannot be read: ") + e.what();
  }
  return run;
}

std::vector<ScenarioRun> run_baseline(const Baseline& baseline, const std::string& executable,
                                      int jobs, double timeout_s, const std::string& max_memory,
                                      const std::function<void()>& on_done) {
  std::vector<ScenarioRun> runs;
  std::vector<std::string> paths;
  for (const auto& entry : baseline.entries) {
    runs.push_back(locate_scenario(entry.scenario, baseline.file));
    if (runs.back().error.empty()) {
      paths.push_back(runs.back().path);
    } else if (on_done) {
      on_done();
    }
  }
  const auto evaluations =
      evaluate_files(paths, executable, baseline.evaluator, jobs, timeout_s, max_memory, on_done);
  std::size_t next = 0;
  for (auto& run : runs) {
    if (run.error.empty()) {
      run.evaluation = evaluations.at(next++);
    } else {
      run.evaluation.status = kStatusFailed;
      run.evaluation.reason = run.error;
    }
  }
  return runs;
}

bool RegressReport::passed() const {
  return failures() == 0;
}

std::size_t RegressReport::failures() const {
  std::size_t n = 0;
  for (const auto& r : rows) n += !r.pass;
  return n;
}

std::string change_cause(const BaselineEntry& entry, const ScenarioRun& run,
                         const std::string& simulator) {
  if (entry.scenario_hash.empty()) {
    return "cause unknown: the baseline has no scenario hash (--update records one)";
  }
  if (run.hash.empty()) return "cause unknown: the scenario's presets do not resolve";
  if (entry.scenario_hash != run.hash) return "scenario edited since the baseline";
  const std::string recorded = entry.simulator.empty() ? "unknown" : entry.simulator;
  if (recorded == simulator) {
    return "scenario unchanged: the simulator or its calibration data changed (both " + simulator +
           ")";
  }
  return "scenario unchanged: simulator changed (baseline " + recorded + ", now " + simulator + ")";
}

RegressReport compare_with_baseline(const Baseline& baseline,
                                    const std::vector<ScenarioRun>& current,
                                    std::optional<double> tolerance_override_pct,
                                    const std::string& simulator) {
  RegressReport report;
  for (std::size_t i = 0; i < baseline.entries.size(); ++i) {
    compare_entry(baseline, baseline.entries[i], current.at(i), tolerance_override_pct, simulator,
                  report.rows);
  }
  return report;
}

std::vector<std::string> unknown_metrics(const std::vector<std::string>& metrics,
                                         const std::vector<ScenarioRun>& current,
                                         std::vector<std::string>& known) {
  std::set<std::string> reported;
  for (const auto& run : current) {
    if (run.evaluation.status != kStatusOk) continue;
    for (const auto& [name, value] : run.evaluation.metrics.items()) {
      if (value.is_number()) reported.insert(name);
    }
  }
  known.assign(reported.begin(), reported.end());
  std::vector<std::string> unknown;
  if (reported.empty()) return unknown;  // nothing evaluated: nothing to judge by
  for (const auto& m : metrics) {
    if (!reported.count(m)) unknown.push_back(m);
  }
  return unknown;
}

json updated_baseline(const JsonDocument& original, const Baseline& baseline,
                      const std::vector<ScenarioRun>& current, const std::string& simulator) {
  json doc = original.root().raw();
  for (std::size_t i = 0; i < baseline.entries.size(); ++i) {
    const Evaluation& e = current.at(i).evaluation;
    json values = json::object();
    for (const auto& metric : baseline.metrics) {
      const auto it = e.metrics.find(metric);
      if (it != e.metrics.end() && it->is_number()) values[metric] = *it;
    }
    json& entry = doc["scenarios"][i];
    entry["values"] = values;
    entry.erase("scenario_hash");
    if (!current.at(i).hash.empty()) entry["scenario_hash"] = current.at(i).hash;
    entry["simulator"] = simulator;
    entry.erase("breakdown");
    if (!e.breakdown.empty()) entry["breakdown"] = e.breakdown;
  }
  return doc;
}

std::vector<Evaluation> evaluate_files(const std::vector<std::string>& paths,
                                       const std::string& executable, const std::string& evaluator,
                                       int jobs, double timeout_s, const std::string& max_memory,
                                       const std::function<void()>& on_done) {
  std::vector<Evaluation> out(paths.size());
  if (paths.empty()) return out;
  // The children's JSON goes to a private temporary directory, removed afterwards.
  std::string pattern = (fs::temp_directory_path() / "clustersim-regress-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory");
  const std::string tmp = pattern;
  auto json_of = [&](std::size_t i) { return tmp + "/" + std::to_string(i) + ".json"; };
  std::size_t cursor = 0;
  auto next = [&]() -> std::optional<std::pair<std::size_t, ProcessJob>> {
    if (cursor >= paths.size()) return std::nullopt;
    ProcessJob job;
    job.argv = evaluator_argv(executable, evaluator, paths[cursor], json_of(cursor), max_memory);
    return std::make_pair(cursor++, std::move(job));
  };
  PoolOptions pool;
  pool.parallel = jobs;
  pool.timeout_s = timeout_s;
  try {
    run_processes(
        next,
        [&](std::size_t i, ProcessResult&& r) {
          out[i] = interpret_child(r, json_of(i));
          if (on_done) on_done();
        },
        pool);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return out;
}

}  // namespace clustersim::sweep
