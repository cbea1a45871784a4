// Validation suites: published training runs expressed as scenarios (validation/suites/
// published-runs/) and published nccl-tests tables (validation/suites/microbench/), compared
// with what the simulator predicts. The simulators are handed in as callbacks so that this
// library depends on core only (tools/cmd_validate.cpp wires in the step simulator and the
// collective simulator).
//
// FLOP conventions (FLOPs per optimizer step of B sequences of s tokens; l layers, hidden h,
// a heads, g KV heads, FFN f, vocabulary V):
//   megatron_eq3       96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))       Narayanan et al. SC'21 eq. (3):
//                      counts the extra forward pass of full activation recomputation
//   korthikanti_model  72·B·l·s·h²·(1 + s/(6h) + V/(12·h·l))       Korthikanti et al. eq. (7),
//                      model FLOPs (no recomputation)
//   korthikanti_hw_selective 72·B·l·s·h²·(1 + s/(3h) + V/(12·h·l)) eq. (8), selective recompute
//   megatron_core      12·B·s·l·h²·((1 + g/a + s/h) + (f/h)·m + V/(2·l·h)), m = 3/2 for SwiGLU
//                      else 1: Megatron-LM megatron/training/training.py
//                      num_floating_point_operations (core r0.8); the GPT special case
//                      (g = a, f = 4h, m = 1) equals korthikanti_model.
//   megatron_core_v014 Megatron-LM core_v0.14 num_floating_point_operations, which counts MoE
//                      (top-k routed experts, shared experts, dense first layers), multi-head
//                      latent attention, multi-token prediction modules and only half of the
//                      causal score matrix (s/(2h) where megatron_core has s/h); see
//                      flops_per_step.
// A reported figure is compared in its own convention: the simulated step time is turned into
// the source's metric with the source's formula, never the reverse.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/scenario.hpp"

namespace clustersim::validation {

enum class FlopConvention {
  megatron_eq3,
  korthikanti_model,
  korthikanti_hw_selective,
  megatron_core,
  megatron_core_v014
};
const char* to_string(FlopConvention c);
std::vector<std::string> flop_convention_names();

// FLOPs of one optimizer step (global_batch sequences of seq_len tokens) in a convention.
double flops_per_step(FlopConvention convention, const ModelSpec& model, double global_batch,
                      double seq_len);

// collective_time_us: one nccl-tests row (microbench suite), in microseconds.
enum class Metric { step_time_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, collective_time_us };
const char* to_string(Metric m);

// Where the simulated step's time goes on its critical path (seconds; the parts add up to the
// step time). Mirrors sim::TimeBreakdown so that this library stays independent of sim/.
struct StepBreakdown {
  double compute_s = 0;    // kernels, recomputation included
  double tp_s = 0;         // exposed tensor-/context-parallel collectives
  double pp_s = 0;         // exposed pipeline transfers
  double dp_s = 0;         // exposed gradient reductions and ZeRO parameter gathers
  double bubble_s = 0;     // pipeline bubble
  double optimizer_s = 0;  // optimizer update
  double idle_s = 0;       // waiting for the slowest rank
};

// What the step simulator says about one scenario.
struct StepPrediction {
  double step_time_s = 0;
  double mfu = 0;  // in clustersim's own convention (model FLOPs / peak of the scenario's dtype)
  double hfu = 0;
  StepBreakdown breakdown;
  // The memory model's verdict (models/memory.hpp). A case is simulated either way: the
  // published run did fit, so a "does not fit" here is a finding about the memory model or
  // the scenario, reported next to the case.
  bool fits_in_memory = true;
  double memory_per_gpu_GiB = 0;
  double memory_usable_GiB = 0;
  double memory_physical_GiB = 0;  // HBM less the CUDA context: above usable is "tight"
};
using StepPredictor = std::function<StepPrediction(const Scenario&)>;

// How much of a published run's configuration the source itself gives: all of its layout and
// batch (`specified`), or some of it filled in by a named rule of tools/gen_validation_suite.py,
// fixed before the case was first simulated and stated in its assumptions (`rule`).
enum class Completion { specified, rule };
const char* to_string(Completion c);

struct PublishedCase {
  std::string id;
  std::string family;  // the publication's family of cases (default: the id up to its first '_')
  std::string source;
  std::string source_table;
  std::string scenario_path;  // resolved
  Metric metric = Metric::step_time_s;
  double reported = 0;
  FlopConvention convention = FlopConvention::megatron_core;
  double peak_tflops = 0;  // for Metric::mfu
  Completion completion = Completion::specified;
  std::vector<std::string> completion_rules;  // names of the rules that completed it
  std::vector<std::string> assumptions;
  // Peak memory per GPU the source reports for the run, GiB (0: none): PyTorch's caching
  // allocator's peak reserved, the largest over GPUs, for torchtitan's tables. At or above what
  // was allocated, so the memory model's figure should not exceed it.
  double reported_memory_GiB = 0;
};

struct NotExpressible {
  std::string id;
  std::string source;
  std::string reason;
};

struct PublishedSuite {
  std::string name;
  std::string file;
  double threshold_pct = 10;
  std::vector<PublishedCase> cases;
  std::vector<NotExpressible> not_expressible;
};

// Reads suite.json (strict; ConfigError with file and pointer).
PublishedSuite load_published_suite(const std::string& path);

// Converts a simulated step time into the case's metric (its own FLOP convention).
double predicted_metric(const PublishedCase& c, const Scenario& scenario, double step_time_s);
// The step time the reported figure implies (same conventions), for like-with-like MFU.
double implied_step_time_s(const PublishedCase& c, const Scenario& scenario);

struct CaseResult {
  std::string id;
  std::string family;  // published runs: the case's source family (PublishedCase::family)
  int gpus = 0;        // published runs: the scenario's GPU count
  std::string group;   // the publication (published runs) or the table (microbench)
  std::string source;
  Metric metric = Metric::step_time_s;
  std::string convention;
  double reported = 0;
  double predicted = 0;
  double error_pct = 0;  // 100·(predicted − reported) / reported
  double predicted_step_time_s = 0;
  double reported_step_time_s = 0;  // implied by the reported figure
  double predicted_mfu = 0;         // ours
  double reported_mfu_ours = 0;     // the reported run's MFU in our convention
  std::vector<std::string> assumptions;
  StepBreakdown breakdown;     // of the simulated step (published runs)
  bool fits_in_memory = true;  // the memory model's verdict on the scenario
  double memory_per_gpu_GiB = 0;
  double reported_memory_GiB = 0;  // PublishedCase::reported_memory_GiB
  double memory_usable_GiB = 0;
  double memory_physical_GiB = 0;
  Completion completion = Completion::specified;
  std::string failure;  // non-empty: the case could not be simulated (message)
  // When the GPU's calibration holds fitted system parameters: `predicted` and `error_pct` use
  // the values fitted without this case's source family (cross-validated), these the values
  // fitted on every run (in-sample). Without a fit both are the one prediction.
  bool cross_validated = false;
  double in_sample_predicted = 0;
  double in_sample_error_pct = 0;
  bool ok() const { return failure.empty(); }
};

// MAPE over the cases that ran, of one kind.
struct Mape {
  double pct = 0;
  int ran = 0;
};

struct SuiteResult {
  std::string suite;
  std::vector<CaseResult> cases;
  std::vector<NotExpressible> not_expressible;
  double mape_pct = 0;            // over the cases that ran (cross-validated where a fit exists)
  double in_sample_mape_pct = 0;  // the same with every case at the in-sample fit
  int ran = 0;
  Mape specified;  // over the cases whose source gives their whole layout and batch
  Mape by_rule;    // over the cases completed by a rule
  double threshold_pct = 10;
  bool passed() const { return ran > 0 && mape_pct <= threshold_pct; }
};

// A prediction, or why there is none.
struct PredictionOutcome {
  std::optional<StepPrediction> prediction;
  std::string failure;
};
// Predicts every scenario of the list, in order; free to run them at the same time.
using BatchStepPredictor =
    std::function<std::vector<PredictionOutcome>(const std::vector<Scenario>&)>;

// Runs every case through `predict_all` (one call for the whole suite: each case's scenario,
// and beside it the in-sample one when a cross-validated fit exists). A case whose scenario
// fails to load or simulate is kept with its failure message (and left out of the MAPE).
SuiteResult run_published_suite(const PublishedSuite& suite, const BatchStepPredictor& predict_all);
// The same, one scenario at a time.
SuiteResult run_published_suite(const PublishedSuite& suite, const StepPredictor& predict);
// A BatchStepPredictor's work done one scenario at a time with `predict`, in order; a scenario
// whose prediction throws keeps the message as its failure.
std::vector<PredictionOutcome> predict_each(const std::vector<Scenario>& scenarios,
                                            const StepPredictor& predict);

// The suite's MAPEs (all, specified, by rule, in-sample) over the cases that ran.
void summarise_suite(SuiteResult& r);

// Keeps only the cases whose id is in `ids` (suite order kept; not_expressible unchanged).
// Returns the ids that matched no case.
std::vector<std::string> select_cases(PublishedSuite& suite, const std::vector<std::string>& ids);

// ---- Microbenchmark suite ------------------------------------------------------------------

struct MicrobenchCase {
  std::string id;
  std::string log_path;  // resolved
  std::string cluster;   // cluster preset name
  std::string description;
};

struct MicrobenchSuite {
  std::string name;
  std::string file;
  double threshold_pct = 10;
  std::vector<MicrobenchCase> cases;
  std::vector<NotExpressible> not_expressible;
};

MicrobenchSuite load_microbench_suite(const std::string& path);

// Simulated times in µs of one nccl-tests table: op (nccl-tests name), ranks and nodes on the
// named cluster preset, one time per size (same order). Throws std::runtime_error when it cannot
// simulate. Batched so that one simulation engine serves a whole table.
struct CollectiveQuery {
  std::string cluster;
  std::string op;  // "all_reduce", ...
  int nranks = 0;
  int nodes = 0;
  std::vector<double> sizes_bytes;
};
using CollectivePredictor = std::function<std::vector<double>(const CollectiveQuery&)>;

// One case per measured row (size) of every table of every log.
SuiteResult run_microbench_suite(const MicrobenchSuite& suite, const CollectivePredictor& predict);

// ---- Output --------------------------------------------------------------------------------

std::string format_table(const SuiteResult& result);
// JSON of a result (for --json).
std::string to_json_text(const std::vector<SuiteResult>& results, const std::string& date);
// validation/REPORT.md text and the SVG of predicted against reported (relative to reported).
// `analysis` is the hand-written analysis kept between kAnalysisBegin and kAnalysisEnd of the
// previous report (extract_analysis): regenerating the report keeps it, everything else is
// rewritten. `svg_names` maps a suite name to its plot's file name.
inline constexpr const char* kAnalysisBegin = "<!-- analysis: begin (kept when regenerated) -->";
inline constexpr const char* kAnalysisEnd = "<!-- analysis: end -->";
std::string extract_analysis(const std::string& previous_report);
std::string report_markdown(const std::vector<SuiteResult>& results, const std::string& date,
                            const std::string& command,
                            const std::map<std::string, std::string>& svg_names,
                            const std::string& analysis);
std::string report_svg(const SuiteResult& result, const std::string& date);

}  // namespace clustersim::validation
