// clustersim sweep: capacity-planning sweeps over layouts, cluster sizes and settings.

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/progress.hpp"
#include "core/units.hpp"
#include "input/scenario_loader.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"
#include "step/lower_bound.hpp"
#include "sweep/plots.hpp"
#include "sweep/ranking.hpp"
#include "sweep/sweep_runner.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/output.hpp"
#include "tools/step_inputs.hpp"
#include "tools/work_budget.hpp"

namespace clustersim::cli {

namespace {

namespace fs = std::filesystem;

// Set by SIGINT/SIGTERM/SIGHUP while a sweep runs; the pool stops, the records so far stay.
// A signal handler can only reach static storage, hence this one file-local flag.
volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) {
  g_stop = 1;
}

// Test hook (not a user option): milliseconds every evaluator child waits before it starts, so
// that a test can kill a sweep while points are in flight.
constexpr const char* kTestDelayEnv = "CLUSTERSIM_SWEEP_TEST_DELAY_MS";

const std::vector<OptionSpec>& sweep_options() {
  static const std::vector<OptionSpec> specs = {
      {"jobs", "j", true, false, "evaluations at a time (default: the CPUs available)"},
      {"out", "o", true, false,
       "results directory (default: sweep-results/NAME, with shard-I-of-N below it)"},
      {"shard", "", true, false,
       "run only shard I of N (points dealt out by a hash of their index)"},
      {"evaluate", "", true, false,
       "run (step simulation, default) or check (memory and FLOPs only, fast)"},
      {"point-timeout", "", true, false, "seconds one evaluation may take (default: none)"},
      {"no-plots", "", false, false, "do not write SVG plots at the end"},
      {"no-bound", "", false, false,
       "simulate every point of a ranked sweep (one whose ranking gives \"top\"), also those "
       "whose step-time lower bound keeps them out of every table's top (by default recorded "
       "\"bounded\", not simulated)"},
      {"dry-run", "", false, false, "list the points and their screening verdicts; run nothing"},
      {"quiet", "q", false, false, "no progress display and no ranked tables"},
      {"max-memory", "", true, false,
       "memory budget of each point's step simulation: a point estimated above it is refused "
       "(e.g. 512M, 4G; default: 50% of the machine's physical memory divided by --jobs)"},
  };
  return specs;
}

// The memory verdict (models/memory.hpp), before a child is spent on a point that cannot fit.
sweep::FeasibilityCheck feasibility_check() {
  return [](const Scenario& scenario) -> std::optional<sweep::Evaluation> {
    const models::MemoryEstimate mem = models::estimate_memory(scenario);
    if (mem.fits()) return std::nullopt;
    sweep::Evaluation e;
    e.status = sweep::kStatusInfeasible;
    e.reason = sweep::memory_verdict(mem.peak_bytes() / kGiB, mem.usable_bytes() / kGiB);
    e.metrics["memory_per_gpu_GiB"] = mem.peak_bytes() / kGiB;
    e.metrics["usable_GiB"] = mem.usable_bytes() / kGiB;
    e.metrics["hbm_GiB"] = mem.hbm_bytes / kGiB;
    return e;
  };
}

// A lower bound on each point's step time (step/lower_bound.hpp) and the MFU at it, in the
// convention `run` reports by default (Megatron's). A point whose calibration cannot be read
// gets none (its child reports the error).
sweep::BoundCheck bound_check() {
  return [](const Scenario& scenario) -> nlohmann::json {
    nlohmann::json m = nlohmann::json::object();
    try {
      const step::StepBound b =
          step::step_time_lower_bound(scenario, load_step_calibrations(scenario));
      if (!(b.step_time_s > 0)) return m;
      const double peak = scenario.cluster.gpu.peak(scenario.training.precision);
      m["step_time_s"] = b.step_time_s;
      m["mfu"] = models::flops_per_step(scenario, models::FlopConvention::megatron).model() /
                 (b.step_time_s * scenario.gpus * peak);
    } catch (const std::exception&) {
      return nlohmann::json::object();
    }
    return m;
  };
}

void print_summary(const std::vector<sweep::SweepRecord>& records, int top, std::ostream& os,
                   const nlohmann::json* reference = nullptr) {
  os << sweep::format_summary(records, top, reference);
}

int sweep_merge(const std::vector<std::string>& args) {
  const Args a(args, {}, -1);
  if (a.positional().size() < 3) throw UsageError("merge needs OUT and at least one PART");
  const std::string out = a.positional()[1];
  const std::vector<std::string> parts(a.positional().begin() + 2, a.positional().end());
  const auto merged = sweep::merge_results(out, parts);
  std::cout << "merged " << parts.size() << " parts into " << sweep::jsonl_path(out) << " and "
            << sweep::csv_path(out) << " (" << merged.size() << " points)\n";
  for (const auto& path : sweep::write_plots(merged, out + "/plots")) {
    std::cout << "plot: " << path << "\n";
  }
  std::cout << "\n";
  const auto base = sweep::reference_parameters(out);
  print_summary(merged, 10, std::cout, base ? &*base : nullptr);
  return 0;
}

// The records of a results directory or .jsonl file named on the command line.
struct StoredResults {
  std::string file;  // the .jsonl
  std::string dir;   // the directory holding it
  std::vector<sweep::SweepRecord> records;
};
StoredResults stored_results(const std::string& results) {
  StoredResults r;
  r.file = sweep::results_file_of(results);
  if (!fs::exists(r.file)) throw UsageError("no results at " + r.file);
  r.records = sweep::latest_per_key(sweep::read_results(r.file, false).records);
  r.dir = fs::is_directory(results) ? results : fs::path(results).parent_path().string();
  return r;
}

int sweep_summary(const std::vector<std::string>& args) {
  const Args a(args, {{"top", "", true, false, "rows per ranking (default 10)"}}, 2);
  if (a.positional().size() != 2) throw UsageError("summary needs RESULTS (a directory or .jsonl)");
  const StoredResults stored = stored_results(a.positional()[1]);
  const auto base = sweep::reference_parameters(stored.dir);
  const int top = static_cast<int>(a.int_or("top", 10));
  print_summary(stored.records, top, std::cout, base ? &*base : nullptr);
  return 0;
}

int sweep_plot(const std::vector<std::string>& args) {
  const Args a(args, {{"out", "o", true, false, "directory for the SVG files"}}, 2);
  if (a.positional().size() != 2) throw UsageError("plot needs RESULTS (a directory or .jsonl)");
  const StoredResults stored = stored_results(a.positional()[1]);
  const std::string dir = a.value_or("out", stored.dir + "/plots");
  OutputFiles().declare_directory(dir);
  const auto written = sweep::write_plots(stored.records, dir);
  if (written.empty()) {
    std::cerr << "no point with an MFU to plot in " << stored.file << "\n";
    return 1;
  }
  for (const auto& path : written) std::cout << "plot: " << path << "\n";
  return 0;
}

int sweep_dry_run(const sweep::SweepSpec& spec, int shard, int shards,
                  const std::string& evaluator) {
  const auto points = sweep::shard_points(sweep::enumerate_points(spec), shard, shards);
  const auto check = feasibility_check();
  // A ranked sweep prints each point's step-time lower bound too (what decides its order and
  // whether it is simulated).
  const bool ranked = evaluator == "run" && spec.ranking.top_given;
  const auto bound = bound_check();
  std::size_t runnable = 0;
  for (const auto& p : points) {
    std::optional<Scenario> scenario;
    const auto key = sweep::point_key(p.scenario, evaluator);
    const auto verdict = sweep::screen_point(spec, p, key, check, scenario);
    std::string what = verdict ? verdict->status + " (" + verdict->reason + ")" : "to run";
    if (!verdict && ranked) {
      const nlohmann::json b = bound(*scenario);
      if (b.contains("step_time_s")) {
        what += " (step time >= " + fixed(b["step_time_s"].get<double>(), 3) + " s)";
      }
    }
    std::cout << "#" << p.index << " " << key << " " << p.label << ": " << what
              << (p.what_if.empty() ? "" : " [uncited what-if hardware]") << "\n";
    runnable += !verdict;
  }
  std::cout << points.size() << " points, " << runnable << " to evaluate\n";
  return 0;
}

}  // namespace

std::string usage_sweep() {
  return "usage: clustersim sweep SPEC [options]       run or resume a sweep\n"
         "       clustersim sweep merge OUT PARTS...  join results of shards (directories or "
         ".jsonl)\n"
         "       clustersim sweep plot RESULTS [--out DIR]  SVG plots of results\n"
         "       clustersim sweep summary RESULTS [--top N]  the ranked tables again, with\n"
         "         where the base scenario's own point ranks\n\n"
         "SPEC is a sweep file (sweeps/*.json): a base scenario and the axes to vary (gpus,\n"
         "layouts, micro_batch, zero_stage, recompute, grad_dtype, compression, nics_per_node,\n"
         "oversubscription, cluster, gpu, nvlink_GBps, nic_Gbps, ep, moe_dispatcher, ...;\n"
         "hardware values that differ from the cited preset are marked what-if). Points that do "
         "not load are recorded as invalid,\n"
         "points that do not fit in memory as infeasible, with the reason; the rest are\n"
         "evaluated in parallel child processes. Results are appended to OUT/results.jsonl and\n"
         "OUT/results.csv as they come; running the same command again resumes.\n\n"
         "options:\n" +
         describe_options(sweep_options()) +
         "\nexit status: 0 done, 1 some points failed, 2 bad input, 3 an output that cannot be "
         "written, 130 interrupted (rerun to resume)\n";
}

int cmd_sweep(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "merge") return sweep_merge(args);
  if (!args.empty() && args[0] == "plot") return sweep_plot(args);
  if (!args.empty() && args[0] == "summary") return sweep_summary(args);
  const Args a(args, sweep_options(), 1);
  if (a.positional().size() != 1) throw UsageError("name one sweep file");
  int shard = 1;
  int shards = 1;
  if (const auto s = a.value("shard")) {
    try {
      std::tie(shard, shards) = sweep::parse_shard(*s);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--shard: ") + e.what());
    }
  }
  const std::string evaluator = a.value_or("evaluate", "run");
  if (evaluator != "run" && evaluator != "check") {
    throw UsageError("--evaluate: \"" + evaluator + "\" is not run or check");
  }
  const long long jobs = a.int_or("jobs", sweep::available_cpus());
  if (jobs < 1 || jobs > 4096) throw UsageError("--jobs must be between 1 and 4096");
  const double timeout = a.number_or("point-timeout", 0);
  if (timeout < 0) throw UsageError("--point-timeout must be >= 0");

  const sweep::SweepSpec spec = sweep::load_sweep_spec(a.positional()[0]);
  if (a.flag("dry-run")) return sweep_dry_run(spec, shard, shards, evaluator);

  sweep::SweepOptions options;
  std::string out = a.value_or("out", "sweep-results/" + spec.name);
  if (!a.value("out") && shards > 1) {
    out += "/shard-" + std::to_string(shard) + "-of-" + std::to_string(shards);
  }
  // The results directory (and the plots') must be writable before any point is evaluated.
  OutputFiles().declare_directory(out);
  if (!a.flag("no-plots")) OutputFiles().declare_directory(out + "/plots");
  options.out_dir = out;
  options.jobs = static_cast<int>(jobs);
  options.shard = shard;
  options.shards = shards;
  options.executable = sweep::self_executable();
  options.build = sweep::executable_fingerprint(options.executable);
  options.evaluator = evaluator;
  options.max_memory = child_max_memory(a, static_cast<int>(jobs));
  options.point_timeout_s = timeout;
  options.bound = !a.flag("no-bound");
  const bool quiet = a.flag("quiet");
  options.progress = &std::cerr;
  options.progress_style = stderr_progress_style(quiet);
  if (const char* delay = std::getenv(kTestDelayEnv)) {
    options.test_delay_ms = static_cast<unsigned>(std::strtoul(delay, nullptr, 10));
  }
  g_stop = 0;
  options.stop = &g_stop;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{};
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  ::sigaction(SIGHUP, &action, &old_hup);
  sweep::SweepOutcome outcome;
  try {
    outcome = sweep::run_sweep(spec, options, feasibility_check(), bound_check());
  } catch (...) {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::sigaction(SIGHUP, &old_hup, nullptr);
    throw;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);

  if (outcome.interrupted) {
    std::cerr << "sweep interrupted after " << outcome.evaluated
              << " evaluations; the results so far are in " << out
              << "; run the same command again to resume\n";
    return 130;
  }
  if (!quiet) {
    std::cout << "sweep " << spec.name;
    if (shards > 1) std::cout << " shard " << shard << "/" << shards;
    std::cout << ": " << outcome.points_in_shard << " points (" << outcome.already_done
              << " already done, " << outcome.evaluated << " evaluated";
    if (outcome.bounded > 0) std::cout << ", " << outcome.bounded << " bounded, not simulated";
    std::cout << ") in " << fixed(outcome.wall_s, 1) << " s; results in " << sweep::jsonl_path(out)
              << "\n";
  }
  if (!a.flag("no-plots")) {
    for (const auto& path : sweep::write_plots(outcome.records, out + "/plots")) {
      if (!quiet) std::cout << "plot: " << path << "\n";
    }
  }
  if (!quiet) {
    std::cout << "\n";
    const nlohmann::json base = sweep::sweep_parameters(spec, spec.base);
    print_summary(outcome.records, spec.ranking.top, std::cout, &base);
  }
  return outcome.failed > 0 ? 1 : 0;
}

}  // namespace clustersim::cli
