// `clustersim campaign SCENARIO [--trials N] [--seed S] [--json FILE] [--csv FILE]
//  [--alerts FILE] [--svg FILE] [--trace-trial K]`: the whole training run with faults, as a
// Monte Carlo over seeded trials (campaign/monte_carlo.hpp): days to finish, failures by cause,
// GPU-hours lost by cause, goodput and cost; plus the seed's monitoring metrics and alerts of
// one trial (CSV) and a plot of it (SVG).
//
// Exit code 0 on success, 2 for bad input (then nothing is written).
#include <chrono>
#include <iostream>
#include <optional>

#include "campaign/campaign_plot.hpp"
#include "campaign/campaign_report.hpp"
#include "campaign/monitoring.hpp"
#include "campaign/monte_carlo.hpp"
#include "campaign/simulated_step.hpp"
#include "campaign/step_model.hpp"
#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "core/progress.hpp"
#include "models/transformer.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/load.hpp"
#include "tools/output.hpp"
#include "tools/work_budget.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::cli {

namespace {

const std::vector<OptionSpec>& campaign_options() {
  static const std::vector<OptionSpec> specs = {
      {"trials", "n", true, false, "Monte Carlo trials (default: campaign.trials, else 1000)"},
      {"seed", "", true, false, "seed of the trials (default: campaign.seed, else 1)"},
      {"json", "", true, false, "write the summary as JSON to FILE"},
      {"csv", "", true, false, "write the monitoring time series of one trial as CSV to FILE"},
      {"alerts", "", true, false, "write that trial's alerts as CSV to FILE"},
      {"svg", "", true, false,
       "write a plot of that trial (throughput, failures, restarts, "
       "checkpoints) to FILE"},
      {"trace-trial", "", true, false,
       "the trial to monitor and plot (default: campaign.trace_trial, else 0)"},
      max_memory_option(),
      {"quiet", "q", false, false, "no progress on stderr"},
  };
  return specs;
}

// The NIC link of rank 0's GPU: where link stragglers are simulated.
std::string representative_link(const topologies::ClusterGraph& graph) {
  const int nic = graph.nic_of_gpu(0);
  const std::string name = graph.vertex(graph.nic_vertex(nic)).name + "-leaf";
  return graph.find_link(name) ? name : graph.links().front().name;
}

// The simulated step model with each simulation that takes a while reported on stderr (a
// repeated fault set is remembered by the model and returns at once, unreported).
campaign::StepModel reported_step_model(campaign::StepModel step, ProgressStyle style) {
  return [step = std::move(step), style](const StepFaults& faults) {
    ProgressTask task(std::cerr, style, "campaign");
    task.describe(faults.empty() ? "simulating the fault-free step"
                                 : "simulating the step with a fault or straggler");
    const campaign::StepEstimate estimate = step(faults);
    task.finish();
    return estimate;
  };
}

}  // namespace

std::string usage_campaign() {
  return "usage: clustersim campaign [SCENARIO] [--trials N] [--seed S] [--json FILE] "
         "[--csv FILE] [--alerts FILE] [--svg FILE] [--trace-trial K] [--quiet]\n\n"
         "Simulates the whole training run of SCENARIO (default: " +
         default_scenario_path() +
         ") with faults: training.tokens_total at the step time, failure processes per "
         "component (scenario \"faults\"), checkpoints and restarts (\"checkpointing\"), "
         "stragglers, NaN rollbacks, slow drift and their mitigations; a Monte Carlo over "
         "seeded trials gives days to finish (mean, p10, p50, p90), failures and GPU-hours lost "
         "by cause, goodput and cost (\"cost\"). One trial is replayed as the seed's monitoring "
         "metrics with the alerts its thresholds raise (--csv, --alerts) and plotted (--svg). "
         "The step time is campaign.step_time_s when the scenario gives it.\n"
         "Exit codes as `clustersim --help` lists them; nothing is written unless all "
         "succeeds.\n\noptions:\n" +
         describe_options(campaign_options());
}

int cmd_campaign(const std::vector<std::string>& argv) {
  const Args args(argv, campaign_options(), 1);
  const std::string path =
      args.positional().empty() ? default_scenario_path() : args.positional().front();
  const CommandInput input = load_command_input(path);
  const Scenario& scenario = input.scenario;
  const CampaignSettings& settings = input.campaign;
  const long long trials = args.int_or("trials", settings.trials);
  if (trials < 1 || trials > 10'000'000) throw UsageError("--trials must be in 1..10000000");
  const long long seed = args.int_or("seed", static_cast<long long>(settings.seed));
  if (seed < 0) throw UsageError("--seed must not be negative");
  const long long trace_trial = args.int_or("trace-trial", settings.trace_trial);
  if (trace_trial < 0 || trace_trial >= trials) {
    throw UsageError("--trace-trial must name one of the trials, 0.." + std::to_string(trials - 1));
  }

  OutputFiles outputs;
  for (const char* option : {"json", "csv", "alerts", "svg"}) {
    if (const auto file = args.value(option)) outputs.declare(*file);
  }

  // Inputs that do not depend on the step time are refused before any step is simulated.
  campaign::check_campaign_job(scenario);
  const ProgressStyle style = stderr_progress_style(args.flag("quiet"));
  const double parameters = models::count_parameters(scenario.model).total();
  const CheckpointConfig& checkpoint = input.checkpointing;
  const auto graph = topologies::ClusterGraph::build(scenario.cluster, scenario.gpus);

  campaign::StepModel step;
  if (settings.step_time_s) {
    step = campaign::fixed_step_model(scenario, *settings.step_time_s, *settings.mfu,
                                      settings.exposed_comm_share);
  } else {
    step = reported_step_model(
        campaign::simulated_step_model(scenario, input.calibrations, work_budget(args)), style);
  }
  const campaign::StepEstimate baseline = step(StepFaults{});
  check_fault_times(input.faults, campaign::fault_free_duration_s(scenario, baseline.step_time_s));
  const campaign::CampaignModel model =
      campaign::build_campaign_model(scenario, settings, input.faults, checkpoint, input.cost, step,
                                     baseline, parameters, representative_link(graph));

  const auto start = std::chrono::steady_clock::now();
  ProgressReporter progress(std::cerr, style, "campaign", "trials",
                            static_cast<std::size_t>(trials));
  const campaign::CampaignSummary summary =
      campaign::run_campaign(model, static_cast<int>(trials), static_cast<std::uint64_t>(seed),
                             [&progress] { progress.advance(); });
  progress.finish();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  campaign::TrialTrace trace;
  const auto traced_seed =
      campaign::trial_seed(static_cast<std::uint64_t>(seed), static_cast<int>(trace_trial));
  campaign::run_trial(model, traced_seed, &trace);
  const campaign::Monitoring monitoring =
      campaign::monitor_trial(model, trace, settings.monitor_interval_s, traced_seed);

  std::cout << campaign::summary_text(scenario.name, model, summary);
  std::cout << "  monitoring (trial " << trace_trial << "): " << monitoring.rows.size() << " rows, "
            << monitoring.alerts.size() << " alerts\n";
  std::cout << "  " << trials << " trials in " << fixed(elapsed, 3) << " s\n";

  if (const auto file = args.value("json")) {
    auto j = campaign::summary_json(scenario.name, model, summary, &monitoring,
                                    static_cast<int>(trace_trial));
    j["wall_seconds"] = elapsed;
    outputs.set(*file, json_text(j));
  }
  if (const auto file = args.value("csv")) outputs.set(*file, campaign::monitoring_csv(monitoring));
  if (const auto file = args.value("alerts")) outputs.set(*file, campaign::alerts_csv(monitoring));
  if (const auto file = args.value("svg")) {
    outputs.set(*file,
                campaign::trial_svg(model, trace, monitoring,
                                    scenario.name + ", trial " + std::to_string(trace_trial)));
  }
  outputs.commit();
  return 0;
}

}  // namespace clustersim::cli
