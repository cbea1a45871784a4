// `clustersim validate`: compares predictions with published training runs (suite
// "published-runs") and published nccl-tests tables (suite "microbench"), prints the error per
// case and the MAPE, writes JSON and a Markdown report with an SVG plot on request, and exits 1
// when the MAPE is above the threshold.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "core/atomic_file.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "validation/suite.hpp"

namespace clustersim::cli {
namespace {

const std::vector<OptionSpec>& validate_options() {
  static const std::vector<OptionSpec> specs = {
      {"suite", "", true, true, "published-runs, microbench (default: both)"},
      {"json", "", true, false, "write the results as JSON to FILE"},
      {"threshold", "", true, false, "MAPE limit in percent (default: the suite's, 10)"},
      {"report", "", true, false, "write REPORT.md and the SVG plot into DIR (e.g. validation)"},
      {"date", "", true, false, "date recorded in the outputs (default: today, UTC)"},
  };
  return specs;
}

std::string today_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The step simulator (sim/step_simulator.hpp) is wired in here once it is built; until then
// every case reports why it was not simulated.
validation::StepPrediction predict_step(const Scenario&) {
  throw std::runtime_error("the step simulator (sim/step_simulator.hpp) is not built yet");
}

// The collective simulator (`clustersim collective`) is wired in here once it is built.
double predict_collective(const validation::CollectiveQuery&) {
  throw std::runtime_error("the collective simulator (clustersim collective) is not built yet");
}

}  // namespace

std::string usage_validate() {
  return "usage: clustersim validate [--suite NAME...] [--json FILE] [--threshold PCT]\n"
         "                           [--report DIR]\n\n"
         "Suites: published-runs (validation/suites/published-runs: published training runs as\n"
         "scenarios, compared in the source's own FLOP convention) and microbench\n"
         "(validation/suites/microbench: nccl-tests tables simulated size by size).\n"
         "Exit status: 0 when every suite's MAPE is within the threshold, 1 otherwise.\n\n" +
         describe_options(validate_options());
}

int cmd_validate(const std::vector<std::string>& argv) {
  const Args args(argv, validate_options(), 0);
  std::vector<std::string> suites = args.values("suite");
  if (suites.empty()) suites = {"published-runs", "microbench"};
  for (const auto& s : suites)
    if (s != "published-runs" && s != "microbench")
      throw UsageError("unknown suite \"" + s + "\" (published-runs, microbench)");
  const auto threshold = args.value("threshold");
  const double threshold_pct = args.number_or("threshold", 10);
  if (threshold && !(threshold_pct > 0)) throw UsageError("--threshold must be positive");
  const std::string date = args.value_or("date", today_utc());

  std::vector<validation::SuiteResult> results;
  for (const auto& name : suites) {
    validation::SuiteResult r;
    if (name == "published-runs") {
      const auto suite =
          validation::load_published_suite(data_path("validation/suites/published-runs/suite.json"));
      r = validation::run_published_suite(suite, predict_step);
    } else {
      const auto suite =
          validation::load_microbench_suite(data_path("validation/suites/microbench/suite.json"));
      r = validation::run_microbench_suite(suite, predict_collective);
    }
    if (threshold) r.threshold_pct = threshold_pct;
    std::cout << validation::format_table(r) << "\n";
    results.push_back(std::move(r));
  }
  if (const auto json = args.value("json"))
    write_file_atomically(*json, validation::to_json_text(results, date));
  if (const auto dir = args.value("report")) {
    std::filesystem::create_directories(*dir);
    std::string command = "clustersim validate";
    for (const auto& a : argv) command += " " + a;
    const std::string svg_name = "validation-published-runs.svg";
    for (const auto& r : results)
      if (r.suite == "published-runs")
        write_file_atomically(*dir + "/" + svg_name, validation::report_svg(r));
      else
        write_file_atomically(*dir + "/validation-microbench.svg", validation::report_svg(r));
    write_file_atomically(*dir + "/REPORT.md",
                          validation::report_markdown(results, date, command, svg_name));
    std::cout << "wrote " << *dir << "/REPORT.md\n";
  }
  bool all_passed = true;
  for (const auto& r : results) all_passed = all_passed && r.passed();
  return all_passed ? 0 : 1;
}

}  // namespace clustersim::cli
