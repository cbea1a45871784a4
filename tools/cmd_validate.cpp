// `clustersim validate`: compares predictions with published training runs (suite
// "published-runs") and published nccl-tests tables (suite "microbench"), prints the error per
// case and the MAPE, writes JSON and a Markdown report with an SVG plot on request, and exits 1
// when the MAPE is above the threshold.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/atomic_file.hpp"
#include "core/progress.hpp"
#include "core/units.hpp"
#include "input/scenario_loader.hpp"
#include "nccl/collectives.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "step/simulate_step.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/step_inputs.hpp"
#include "tools/work_budget.hpp"
#include "topologies/cluster_graph.hpp"
#include "validation/calibration.hpp"
#include "validation/family_errors.hpp"
#include "validation/suite.hpp"

namespace clustersim::cli {
namespace {

const std::vector<OptionSpec>& validate_options() {
  static const std::vector<OptionSpec> specs = {
      {"suite", "", true, true, "published-runs, microbench (default: both)"},
      {"case", "", true, true,
       "simulate only these published-run cases (ids as in suite.json; the microbench suite is "
       "not filtered)"},
      {"json", "", true, false, "write the results as JSON to FILE"},
      {"threshold", "", true, false, "MAPE limit in percent (default: the suite's, 10)"},
      {"report", "", true, false, "write REPORT.md and the SVG plot into DIR (e.g. validation)"},
      {"date", "", true, false, "date recorded in the outputs (default: today, UTC)"},
      {"jobs", "j", true, false, "published-run simulations at a time (default 1)"},
      max_memory_option(),
      {"quiet", "q", false, false, "no progress on stderr"},
  };
  return specs;
}

validation::StepPrediction prediction_of(const step::StepReport& report) {
  if (!report.completed) throw std::runtime_error("the simulated step hung");
  validation::StepPrediction p;
  p.step_time_s = report.step_time_s;
  p.mfu = report.mfu;
  p.hfu = report.hfu;
  const step::TimeBreakdown& b = report.breakdown;
  p.breakdown = {b.compute_s, b.tp_s, b.pp_s, b.dp_s, b.bubble_s, b.optimizer_s, b.idle_s};
  p.fits_in_memory = report.fits_in_memory;
  p.memory_per_gpu_GiB = report.memory_per_gpu_bytes / kGiB;
  p.memory_usable_GiB = report.memory_usable_bytes / kGiB;
  p.memory_physical_GiB = report.memory_physical_bytes / kGiB;
  return p;
}

step::StepOptions untraced(const step::WorkBudget& budget) {
  step::StepOptions options;
  options.record_trace = false;
  options.budget = budget;
  return options;
}

// One step of the scenario, in a child process (SimGrid allows one engine per process).
validation::StepPredictor step_predictor(const step::WorkBudget& budget) {
  return [budget](const Scenario& scenario) {
    return prediction_of(
        step::simulate_step_isolated(scenario, load_step_calibrations(scenario), untraced(budget)));
  };
}

// A prediction as numbers (it crosses a pipe from the child that simulated it), and back.
std::vector<double> prediction_numbers(const validation::StepPrediction& p) {
  const auto& b = p.breakdown;
  return {p.step_time_s,
          p.mfu,
          p.hfu,
          b.compute_s,
          b.tp_s,
          b.pp_s,
          b.dp_s,
          b.bubble_s,
          b.optimizer_s,
          b.idle_s,
          p.fits_in_memory ? 1.0 : 0.0,
          p.memory_per_gpu_GiB,
          p.memory_usable_GiB,
          p.memory_physical_GiB};
}
validation::StepPrediction prediction_from(const std::vector<double>& v) {
  if (v.size() != 14) throw std::runtime_error("a simulation child returned a partial answer");
  validation::StepPrediction p;
  p.step_time_s = v[0];
  p.mfu = v[1];
  p.hfu = v[2];
  p.breakdown = {v[3], v[4], v[5], v[6], v[7], v[8], v[9]};
  p.fits_in_memory = v[10] != 0.0;
  p.memory_per_gpu_GiB = v[11];
  p.memory_usable_GiB = v[12];
  p.memory_physical_GiB = v[13];
  return p;
}

// Every scenario of the suite, `jobs` child processes at a time; the calibration files are read
// here, so a malformed one fails every case that names it with the file's own message.
std::vector<validation::PredictionOutcome> predict_parallel(const std::vector<Scenario>& scenarios,
                                                            int jobs,
                                                            const step::WorkBudget& budget,
                                                            ProgressReporter& progress) {
  std::vector<validation::PredictionOutcome> out(scenarios.size());
  std::vector<step::StepCalibrations> calibrations(scenarios.size());
  std::vector<std::size_t> ready;
  for (std::size_t k = 0; k < scenarios.size(); ++k) {
    try {
      calibrations[k] = load_step_calibrations(scenarios[k]);
      ready.push_back(k);
    } catch (const std::exception& e) {
      out[k].failure = e.what();
      progress.advance();
    }
  }
  const auto outcomes = sim::run_isolated_each(
      ready.size(), jobs,
      [&](std::size_t i) {
        const std::size_t k = ready[i];
        return prediction_numbers(
            prediction_of(step::simulate_step(scenarios[k], calibrations[k], untraced(budget))));
      },
      [&](std::size_t) { progress.advance(); });
  for (std::size_t i = 0; i < ready.size(); ++i) {
    if (!outcomes[i].error) {
      out[ready[i]].prediction = prediction_from(outcomes[i].values);
    } else {
      out[ready[i]].failure = outcomes[i].message;
    }
  }
  return out;
}

// The suite's simulations, one at a time (jobs 1) or in parallel, counted on stderr as each
// ends.
validation::BatchStepPredictor counted_predictor(int jobs, const step::WorkBudget& budget,
                                                 ProgressStyle style) {
  return [jobs, budget, style](const std::vector<Scenario>& scenarios) {
    ProgressReporter progress(std::cerr, style, "validate published-runs", "simulations",
                              scenarios.size());
    const validation::StepPredictor predict = step_predictor(budget);
    const auto one = [&](const Scenario& scenario) {
      try {
        const validation::StepPrediction p = predict(scenario);
        progress.advance();
        return p;
      } catch (...) {
        progress.advance();
        throw;
      }
    };
    auto out = jobs == 1 ? validation::predict_each(scenarios, one)
                         : predict_parallel(scenarios, jobs, budget, progress);
    progress.finish();
    return out;
  };
}

// One nccl-tests table: every size simulated alone on an idle cluster, members 0..n-1
// (node-major, as mpirun places one rank per GPU), float data as nccl-tests' default.
std::vector<double> predict_collective(const validation::CollectiveQuery& q) {
  std::string name;
  for (char c : q.op)
    if (c != '_') name += c;  // all_reduce -> allreduce (the CLI's spelling)
  const auto op = nccl::parse_collective_op(name);
  if (!op) throw std::runtime_error("the collective simulator has no operation " + q.op);
  const ClusterSpec spec = load_cluster_preset(q.cluster);
  const std::vector<NetworkCalibration> network = validation::load_network_calibration(spec);
  return sim::run_isolated_numbers([&]() {
    const auto graph = topologies::ClusterGraph::build(spec, q.nranks);
    std::vector<nccl::CollectiveRequest> requests;
    for (const double bytes : q.sizes_bytes) {
      nccl::CollectiveRequest r;
      r.op = *op;
      for (int g = 0; g < q.nranks; ++g) r.gpus.push_back(g);
      r.bytes = bytes;
      r.dtype = Dtype::fp32;
      requests.push_back(r);
    }
    sim::SimulationOptions options;
    options.network_calibration = network;
    const auto results = sim::simulate_collectives(graph, requests, options);
    std::vector<double> times_us;
    for (const auto& res : results) {
      if (!res.completed) throw std::runtime_error("a simulated collective did not complete");
      times_us.push_back(res.time_s() * 1e6);
    }
    return times_us;
  });
}

}  // namespace

std::string usage_validate() {
  return "usage: clustersim validate [--suite NAME...] [--case ID...] [--json FILE]\n"
         "                           [--threshold PCT] [--report DIR] [--jobs N] [--quiet]\n\n"
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
  const std::string date = args.value_or("date", utc_now("%Y-%m-%d"));
  const std::vector<std::string> case_ids = args.values("case");
  if (!case_ids.empty() &&
      std::find(suites.begin(), suites.end(), "published-runs") == suites.end())
    throw UsageError("--case selects published-runs cases; add --suite published-runs");

  OutputFiles outputs;
  if (const auto json = args.value("json")) outputs.declare(*json);
  if (const auto dir = args.value("report")) outputs.declare_directory(*dir);

  std::vector<validation::SuiteResult> results;
  for (const auto& name : suites) {
    validation::SuiteResult r;
    if (name == "published-runs") {
      auto suite = validation::load_published_suite(
          data_path("validation/suites/published-runs/suite.json"));
      if (!case_ids.empty()) {
        const auto unmatched = validation::select_cases(suite, case_ids);
        if (!unmatched.empty())
          throw UsageError("--case " + unmatched.front() + ": no such case in " + suite.file);
      }
      const int jobs = static_cast<int>(args.int_or("jobs", 1));
      if (jobs < 1) throw UsageError("--jobs must be at least 1");
      const step::WorkBudget budget = work_budget(args, jobs);
      r = validation::run_published_suite(
          suite, counted_predictor(jobs, budget, stderr_progress_style(args.flag("quiet"))));
    } else {
      const auto suite =
          validation::load_microbench_suite(data_path("validation/suites/microbench/suite.json"));
      r = validation::run_microbench_suite(suite, predict_collective);
    }
    if (threshold) r.threshold_pct = threshold_pct;
    std::cout << validation::format_table(r) << "\n";
    results.push_back(std::move(r));
  }
  if (const auto json = args.value("json")) {
    outputs.set(*json, validation::to_json_text(results, date));
  }
  if (const auto dir = args.value("report")) {
    std::string command = "clustersim validate";
    for (const auto& a : argv) command += " " + a;
    // The hand-written analysis of the previous report survives regeneration.
    std::string analysis;
    if (std::ifstream previous(*dir + "/REPORT.md"); previous) {
      std::ostringstream text;
      text << previous.rdbuf();
      analysis = validation::extract_analysis(text.str());
    }
    std::map<std::string, std::string> svg_names;
    for (const auto& r : results) {
      const std::string svg_name = "validation-" + r.suite + ".svg";
      outputs.set(*dir + "/" + svg_name, validation::report_svg(r, date));
      svg_names[r.suite] = svg_name;
      if (r.suite != "published-runs") continue;
      const std::string signed_name = "validation-" + r.suite + "-signed.svg";
      outputs.set(*dir + "/" + signed_name, validation::signed_error_svg(r, date));
      svg_names[r.suite + "-signed"] = signed_name;
    }
    outputs.set(*dir + "/REPORT.md",
                validation::report_markdown(results, date, command, svg_names, analysis));
  }
  outputs.commit();
  if (const auto dir = args.value("report")) std::cout << "wrote " << *dir << "/REPORT.md\n";
  bool all_passed = true;
  for (const auto& r : results) all_passed = all_passed && r.passed();
  return all_passed ? 0 : 1;
}

}  // namespace clustersim::cli
