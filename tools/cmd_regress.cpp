// clustersim regress: predicted MFU and step time against a committed baseline (CI).
#include <chrono>
#include <iostream>

#include "core/atomic_file.hpp"
#include "sweep/process_pool.hpp"
#include "sweep/regress.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"

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
  };
  return specs;
}

// A scenario that takes longer than this is hung, not slow (targets: one step of 1024 ranks
// in under a second, docs/design.md#performance-targets).
constexpr double kDefaultTimeoutS = 600;

}  // namespace

std::string usage_regress() {
  return "usage: clustersim regress --baseline FILE [--tolerance PCT] [--junit FILE] "
         "[--update]\n\n"
         "Runs every scenario the baseline lists (each in its own process), compares the\n"
         "metrics it names (MFU and step time) with the stored values and prints a diff.\n"
         "Scenario paths in the baseline are relative to the data directory\n"
         "(CLUSTERSIM_DATA_DIR or the source tree).\n\noptions:\n" +
         describe_options(regress_options()) +
         "\nexit status: 0 all within tolerance (or --update done), 1 a regression or a "
         "scenario that failed, 2 bad input, 3 an output that cannot be written\n";
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
  std::vector<std::string> paths;
  for (const auto& e : baseline.entries) paths.push_back(sweep::baseline_scenario_path(e.scenario));

  OutputFiles outputs;
  if (a.flag("update")) outputs.declare(*file);
  if (const auto junit = a.value("junit")) outputs.declare(*junit);

  const auto start = std::chrono::steady_clock::now();
  const auto current = sweep::evaluate_files(paths, sweep::self_executable(), baseline.evaluator,
                                             static_cast<int>(jobs), timeout);
  sweep::RegressReport report = sweep::compare_with_baseline(baseline, current, tolerance);
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (a.flag("update")) {
    for (std::size_t i = 0; i < current.size(); ++i) {
      if (current[i].status != "ok") {
        std::cerr << "error: " << baseline.entries[i].scenario << ": " << current[i].status << ": "
                  << current[i].reason << "\nbaseline not updated\n";
        return 1;
      }
    }
    outputs.set(*file, json_text(sweep::updated_baseline(document, baseline, current)));
    outputs.commit();
    for (const auto& row : report.rows) {
      std::cout << "  " << sweep::scenario_short_name(row.scenario) << " " << row.metric << ": "
                << (row.current ? fixed(*row.current, 6) : std::string("-")) << " (was "
                << (row.baseline ? fixed(*row.baseline, 6) : std::string("unset")) << ")\n";
    }
    std::cout << "baseline " << *file << " updated (" << baseline.entries.size() << " scenarios)\n";
    return 0;
  }
  std::cout << sweep::format_report(report);
  if (const auto junit = a.value("junit")) outputs.set(*junit, sweep::junit_xml(report));
  outputs.commit();
  return report.passed() ? 0 : 1;
}

}  // namespace clustersim::cli
