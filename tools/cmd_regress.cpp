// clustersim regress: predicted MFU and step time against a committed baseline (CI).
#include <chrono>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "core/progress.hpp"
#include "sweep/process_pool.hpp"
#include "sweep/regress.hpp"
#include "sweep/results.hpp"
#include "tools/build_info.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/exit_codes.hpp"
#include "tools/output.hpp"
#include "tools/work_budget.hpp"

namespace clustersim::cli {

namespace {

const std::vector<OptionSpec>& regress_options() {
  static const std::vector<OptionSpec> specs = {
      {"baseline", "b", true, false, "baseline file (e.g. regress/baseline.json)"},
      {"tolerance", "t", true, false,
       "allowed relative change in percent (overrides the baseline's tolerance_pct)"},
      {"junit", "", true, false, "also write the result as JUnit XML to this file"},
      {"update", "", false, false, "store the current values in the baseline (atomically)"},
      {"jobs", "j", true, false, "evaluations at a time (default: the CPUs available)"},
      {"timeout", "", true, false, "seconds one scenario may take (default: 600)"},
      max_memory_option(),
      {"quiet", "q", false, false, "no progress on stderr"},
  };
  return specs;
}

// A scenario that takes longer than this is hung, not slow (targets: one step of 1024 ranks
// in under a second, docs/design.md#performance-targets).
constexpr double kDefaultTimeoutS = 600;

// This build as a baseline records it: "clustersim 0.1.0 (commit 0123456789ab)".
std::string simulator_version() {
  return std::string("clustersim ") + project_version() + " (commit " + build_commit() + ")";
}

// --update: stores the current values (with each scenario's hash, this build's version and the
// step breakdown) unless a metric is unknown (exit 2) or a scenario failed (exit 1).
int update_baseline(const std::string& file, const JsonDocument& document,
                    const sweep::Baseline& baseline, const std::vector<sweep::ScenarioRun>& current,
                    const sweep::RegressReport& report, OutputFiles& outputs) {
  std::vector<std::string> known;
  const auto unknown = sweep::unknown_metrics(baseline.metrics, current, known);
  if (!unknown.empty()) {
    throw ConfigError(file, "/metrics",
                      "unknown metric " + join_names(unknown) + ": the " + baseline.evaluator +
                          " evaluator reports " + join_names(known) + "; baseline not updated");
  }
  for (std::size_t i = 0; i < current.size(); ++i) {
    const sweep::Evaluation& e = current[i].evaluation;
    if (e.status != sweep::kStatusOk) {
      std::cerr << "error: " << baseline.entries[i].scenario << ": " << e.status << ": " << e.reason
                << "\nbaseline not updated\n";
      return kExitNegativeVerdict;
    }
  }
  outputs.set(file,
              json_text(sweep::updated_baseline(document, baseline, current, simulator_version())));
  outputs.commit();
  for (const auto& row : report.rows) {
    std::cout << "  " << sweep::scenario_short_name(row.scenario) << " " << row.metric << ": "
              << (row.current ? fixed(*row.current, 6) : std::string("-")) << " (was "
              << (row.baseline ? fixed(*row.baseline, 6) : std::string("unset")) << ")\n";
  }
  std::cout << "baseline " << file << " updated (" << baseline.entries.size() << " scenarios)\n";
  return 0;
}

}  // namespace

std::string usage_regress() {
  return "usage: clustersim regress --baseline FILE [--tolerance PCT] [--junit FILE] "
         "[--update] [--max-memory SIZE] [--quiet]\n\n"
         "Runs every scenario the baseline lists (each in its own process), compares the\n"
         "metrics it names (MFU and step time) with the stored values and prints a diff.\n"
         "A relative scenario path is looked up next to the baseline file, then in the data\n"
         "directory (CLUSTERSIM_DATA_DIR or the source tree). A scenario that is missing or\n"
         "unreadable is one failed check; the others still run. --update also records each\n"
         "scenario's hash (scenario and presets), this build's version and the step breakdown,\n"
         "so that a failure says whether the scenario was edited or the simulator changed and\n"
         "which part of the step moved most.\n\noptions:\n" +
         describe_options(regress_options()) +
         "\nexit status: 0 all within tolerance (or --update done), 1 a regression or a "
         "scenario that failed or is missing, 2 bad input (with --update: a metric the "
         "evaluator does not report), 3 an output that cannot be written\n";
}

int cmd_regress(const std::vector<std::string>& args) {
  const Args a(args, regress_options(), 0);
  const auto file = a.value("baseline");
  if (!file) throw UsageError("--baseline FILE is required");
  std::optional<double> tolerance;
  if (a.value("tolerance")) {
    tolerance = a.number_or("tolerance", 0);
    if (*tolerance < 0) throw UsageError("--tolerance must be >= 0");
  }
  const long long jobs = a.int_or("jobs", sweep::available_cpus());
  if (jobs < 1 || jobs > 4096) throw UsageError("--jobs must be between 1 and 4096");
  const double timeout = a.number_or("timeout", kDefaultTimeoutS);

  const JsonDocument document = JsonDocument::load(*file);
  const sweep::Baseline baseline = sweep::parse_baseline(document);

  OutputFiles outputs;
  if (a.flag("update")) outputs.declare(*file);
  if (const auto junit = a.value("junit")) outputs.declare(*junit);

  const auto start = std::chrono::steady_clock::now();
  ProgressReporter progress(std::cerr, stderr_progress_style(a.flag("quiet")), "regress",
                            "scenarios", baseline.entries.size());
  const auto current = sweep::run_baseline(
      baseline, sweep::self_executable(), static_cast<int>(jobs), timeout,
      child_max_memory(a, static_cast<int>(jobs)), [&progress] { progress.advance(); });
  progress.finish();
  const std::string simulator = simulator_version();
  sweep::RegressReport report =
      sweep::compare_with_baseline(baseline, current, tolerance, simulator);
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (a.flag("update")) return update_baseline(*file, document, baseline, current, report, outputs);
  std::cout << sweep::format_report(report);
  if (const auto junit = a.value("junit")) outputs.set(*junit, sweep::junit_xml(report));
  outputs.commit();
  return report.passed() ? 0 : 1;
}

}  // namespace clustersim::cli
