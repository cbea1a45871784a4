// `clustersim calibrate --runs SUITE`: fits the system parameters of each GPU generation
// (core/system_calibration.hpp) to measured end-to-end runs, with leave-one-source-out
// cross-validation (validation/system_fit.hpp), and optionally writes them into the
// compute-calibration files the GPU presets name.
#include <iostream>
#include <map>

#include "core/json_reader.hpp"
#include "core/progress.hpp"
#include "input/scenario_loader.hpp"
#include "sim/isolated.hpp"
#include "step/simulate_step.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/step_inputs.hpp"
#include "tools/work_budget.hpp"
#include "validation/suite.hpp"
#include "validation/system_fit_io.hpp"

namespace clustersim::cli {
namespace {

const std::vector<OptionSpec>& runs_options() {
  static const std::vector<OptionSpec> specs = {
      {"runs", "", true, false,
       "suite.json of measured runs (the format of validation/suites/published-runs), or "
       "\"published-runs\" for the shipped suite"},
      {"fit", "", true, false,
       "parameters to fit, comma-separated (default: "
       "tensor_sustained_fraction,elementwise_hbm_fraction,host_us_per_kernel; kernel_gap_us "
       "may be added)"},
      {"case", "", true, true, "fit only these cases (ids as in suite.json)"},
      {"iterations", "", true, false,
       "most Gauss-Newton linearisations; the fit stops sooner once a step moves no value by "
       "more than a thousandth of its range (default 8)"},
      {"loss", "", true, false,
       "what the fit minimises over the runs' errors in ln(step time): absolute (the default: "
       "the sum of absolute errors, as the suite's MAPE scores them) or squared (least "
       "squares)"},
      {"jobs", "j", true, false, "simulations at a time (default: the CPUs available)"},
      {"update", "", false, false,
       "write the fitted `system` block into each group's compute-calibration file"},
      {"date", "", true, false, "date recorded in the files (default: today, UTC)"},
      {"skip-verify", "", false, false,
       "do not simulate the runs at their folds' values (one pass fewer) and report no "
       "errors; `clustersim validate` reports them"},
      max_memory_option(),
      {"quiet", "q", false, false, "no progress on stderr"},
  };
  return specs;
}

// The parameters fitted unless --fit names others (docs/system-calibration.md).
constexpr const char* kDefaultFit =
    "tensor_sustained_fraction,elementwise_hbm_fraction,host_us_per_kernel";

std::vector<SystemParameterId> parse_fit_list(const std::string& text) {
  std::vector<SystemParameterId> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const auto id = parse_system_parameter(name);
    if (!id)
      throw UsageError("--fit: unknown parameter \"" + name +
                       "\" (known: " + system_parameter_names() + ")");
    out.push_back(*id);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string usage_calibrate_runs() {
  return "usage: clustersim calibrate --runs SUITE [--fit P1,P2] [--case ID...] [--jobs N]\n"
         "                            [--iterations N] [--loss absolute|squared] [--skip-verify]\n"
         "                            [--update] [--quiet]\n\n"
         "Fits the system parameters of each GPU generation (the compute-calibration file its\n"
         "preset names) to measured runs, each parameter bounded to its plausible range, with\n"
         "leave-one-source-out cross-validation: every source family's runs are predicted\n"
         "with parameters fitted without them. Prints the fitted values, the folds and the\n"
         "cross-validated and in-sample errors; --update writes them into the files.\n"
         "Parameters: " +
         system_parameter_names() + "\n\n" + describe_options(runs_options());
}

int calibrate_runs(const std::vector<std::string>& argv) {
  const Args args(argv, runs_options(), 0);
  std::string path = args.value_or("runs", "");
  if (path == "published-runs") path = data_path("validation/suites/published-runs/suite.json");
  validation::PublishedSuite suite = validation::load_published_suite(path);
  if (const auto ids = args.values("case"); !ids.empty()) {
    const auto unmatched = validation::select_cases(suite, ids);
    if (!unmatched.empty())
      throw UsageError("--case " + unmatched.front() + ": no such case in " + suite.file);
  }
  validation::SystemFitOptions options;
  options.parameters = parse_fit_list(args.value_or("fit", kDefaultFit));
  const std::string loss = args.value_or("loss", "absolute");
  const auto parsed_loss = validation::kFitLossNames.find(loss);
  if (!parsed_loss) {
    throw UsageError("--loss: \"" + loss + "\" is not one of " +
                     join_names(validation::kFitLossNames.names()));
  }
  options.loss = *parsed_loss;
  options.iterations = static_cast<int>(args.int_or("iterations", 8));
  if (options.iterations < 1) throw UsageError("--iterations must be at least 1");
  options.verify = !args.flag("skip-verify");
  const int jobs = static_cast<int>(args.int_or("jobs", 2));
  const step::WorkBudget budget = work_budget(args);
  if (jobs < 1) throw UsageError("--jobs must be at least 1");

  std::vector<Scenario> scenarios;
  const auto runs = validation::fit_runs_from_suite(suite, scenarios);
  options.start = validation::fit_start_values(runs, options.parameters);
  std::vector<step::StepCalibrations> calibrations;
  for (const auto& sc : scenarios) calibrations.push_back(load_step_calibrations(sc));
  const ProgressStyle style = stderr_progress_style(args.flag("quiet"));
  int pass = 0;
  const validation::FitEvaluator evaluate = [&](const std::vector<validation::FitQuery>& qs) {
    ProgressReporter progress(std::cerr, style, "calibrate pass " + std::to_string(++pass),
                              "simulations", qs.size());
    const auto simulate = [&](std::size_t k) {
      const auto run = static_cast<std::size_t>(qs[k].run);
      Scenario sc = scenarios[run];
      sc.cluster.gpu.system_override = qs[k].values;
      step::StepOptions step;
      step.record_trace = false;
      step.budget = budget;
      const step::StepReport report = step::simulate_step(sc, calibrations[run], step);
      if (!report.completed) throw std::runtime_error(sc.name + ": the simulated step hung");
      return std::vector<double>{report.step_time_s};
    };
    const auto out = sim::run_isolated_all(qs.size(), jobs, simulate,
                                           [&progress](std::size_t) { progress.advance(); });
    progress.finish();
    std::vector<double> t;
    for (const auto& v : out) t.push_back(v.at(0));
    return t;
  };
  const validation::SystemFitResult fit = validation::fit_system(runs, evaluate, options);
  std::cout << validation::format_system_fit(fit, options.parameters);
  if (args.flag("update")) {
    const std::string note = "clustersim calibrate --runs " + args.value_or("runs", "") +
                             " --loss " + loss + " --update, " +
                             args.value_or("date", utc_now("%Y-%m-%d"));
    for (const auto& [file, system] : fit.groups) {
      // Leave-one-source-out needs a second source: a group measured by one family only is
      // fitted in-sample, which the fidelity rules do not accept, so its file keeps what it
      // had. (A file that borrows its block, system_from, is no group of its own: its runs are
      // fitted in the group of the file it borrows from, validation/system_fit_io.cpp.)
      if (system.folds.size() < 2) {
        std::cout << "not written: " << file << " (its runs come from one source family, "
                  << (system.folds.empty() ? std::string("none")
                                           : system.folds.front().held_out_source)
                  << ", so its fit cannot be cross-validated; it keeps what it had)\n";
        continue;
      }
      validation::write_system_block(file, system, note);
      std::cout << "wrote the system block of " << file << "\n";
    }
  }
  return 0;
}

}  // namespace clustersim::cli
