// Running the published-runs suite: each case's scenario loaded, the cross-validated fold
// chosen, every prediction asked for in one batch, each case judged in its own metric.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "input/scenario_loader.hpp"
#include "models/compute_cost.hpp"
#include "validation/suite.hpp"

namespace clustersim::validation {

namespace {

// The scenario with the system parameters fitted without `family`, when the GPU's calibration
// holds a fit whose folds left that family out; nullopt otherwise.
std::optional<Scenario> cross_validated(const Scenario& sc, const std::string& family) {
  const models::ComputeCalibration cal =
      models::load_compute_calibration(models::compute_calibration_path(sc.cluster.gpu));
  const SystemFold* fold = cal.system.fold(family);
  if (!fold) return std::nullopt;
  Scenario cv = sc;
  cv.cluster.gpu.system_override = fold->values;
  return cv;
}

// A case on its way through the suite: what it says, its scenarios, where their predictions
// will be in the batch.
struct PendingCase {
  const PublishedCase* c = nullptr;
  CaseResult result;
  std::optional<Scenario> scenario;
  int in_sample = -1;  // index of the in-sample prediction (cross-validated cases)
  int predicted = -1;  // index of the prediction the case is judged by
};

CaseResult describe_case(const PublishedCase& c, const std::vector<PendingCase>& earlier) {
  CaseResult cr;
  cr.id = c.id;
  cr.family = c.family;
  cr.completion = c.completion;
  // One group per family ("sc21", "korthikanti", "nemo2407"), named by the source of its first
  // case (one paper may be cited in two spellings).
  const auto named = std::find_if(earlier.begin(), earlier.end(), [&](const PendingCase& o) {
    return o.result.family == c.family;
  });
  cr.group = named != earlier.end() ? named->result.group : c.source;
  cr.source = c.source_table.empty() ? c.source : c.source + ", " + c.source_table;
  cr.metric = c.metric;
  cr.convention = to_string(c.convention);
  cr.reported = c.reported;
  cr.reported_memory_GiB = c.reported_memory_GiB;
  cr.assumptions = c.assumptions;
  return cr;
}

// Loads the case's scenario and queues what is to be predicted.
void queue_case(PendingCase& pc, std::vector<Scenario>& batch) {
  try {
    pc.scenario = load_scenario(pc.c->scenario_path);
    pc.result.gpus = pc.scenario->gpus;
    const std::optional<Scenario> cv = cross_validated(*pc.scenario, pc.c->family);
    if (cv) {
      pc.in_sample = static_cast<int>(batch.size());
      batch.push_back(*pc.scenario);
    }
    pc.predicted = static_cast<int>(batch.size());
    batch.push_back(cv ? *cv : *pc.scenario);
  } catch (const std::exception& e) {
    pc.result.failure = e.what();
  }
}

const StepPrediction& prediction_at(const std::vector<PredictionOutcome>& outcomes, int k) {
  const PredictionOutcome& o = outcomes.at(static_cast<std::size_t>(k));
  if (!o.prediction) throw std::runtime_error(o.failure);
  const StepPrediction& p = *o.prediction;
  if (!(p.step_time_s > 0) || !std::isfinite(p.step_time_s))
    throw std::runtime_error("the step simulator returned step time " +
                             std::to_string(p.step_time_s));
  return p;
}

// The case's figures from its predictions.
void judge_case(PendingCase& pc, const std::vector<PredictionOutcome>& outcomes) {
  if (pc.predicted < 0) return;
  const PublishedCase& c = *pc.c;
  const Scenario& sc = *pc.scenario;
  CaseResult& cr = pc.result;
  try {
    if (pc.in_sample >= 0) {
      const StepPrediction& in = prediction_at(outcomes, pc.in_sample);
      cr.cross_validated = true;
      cr.in_sample_predicted = predicted_metric(c, sc, in.step_time_s);
      cr.in_sample_error_pct = 100.0 * (cr.in_sample_predicted - c.reported) / c.reported;
    }
    const StepPrediction& p = prediction_at(outcomes, pc.predicted);
    cr.predicted_step_time_s = p.step_time_s;
    cr.predicted = predicted_metric(c, sc, p.step_time_s);
    cr.error_pct = 100.0 * (cr.predicted - cr.reported) / cr.reported;
    cr.reported_step_time_s = implied_step_time_s(c, sc);
    cr.predicted_mfu = p.mfu;
    // Same model FLOPs (ours) over the reported run's step time.
    cr.reported_mfu_ours = p.mfu * p.step_time_s / cr.reported_step_time_s;
    cr.breakdown = p.breakdown;
    cr.fits_in_memory = p.fits_in_memory;
    cr.memory_per_gpu_GiB = p.memory_per_gpu_GiB;
    cr.memory_usable_GiB = p.memory_usable_GiB;
    cr.memory_physical_GiB = p.memory_physical_GiB;
  } catch (const std::exception& e) {
    cr.failure = e.what();
  }
}

}  // namespace

SuiteResult run_published_suite(const PublishedSuite& suite,
                                const BatchStepPredictor& predict_all) {
  SuiteResult r;
  r.suite = suite.name;
  r.threshold_pct = suite.threshold_pct;
  r.not_expressible = suite.not_expressible;
  std::vector<PendingCase> pending;
  std::vector<Scenario> batch;
  for (const auto& c : suite.cases) {
    PendingCase pc;
    pc.c = &c;
    pc.result = describe_case(c, pending);
    queue_case(pc, batch);
    pending.push_back(std::move(pc));
  }
  const std::vector<PredictionOutcome> outcomes = predict_all(batch);
  if (outcomes.size() != batch.size())
    throw std::logic_error("run_published_suite: the predictor returned the wrong count");
  for (auto& pc : pending) {
    judge_case(pc, outcomes);
    r.cases.push_back(std::move(pc.result));
  }
  summarise_suite(r);
  return r;
}

std::vector<PredictionOutcome> predict_each(const std::vector<Scenario>& scenarios,
                                            const StepPredictor& predict) {
  std::vector<PredictionOutcome> out;
  for (const auto& sc : scenarios) {
    PredictionOutcome o;
    try {
      o.prediction = predict(sc);
    } catch (const std::exception& e) {
      o.failure = e.what();
    }
    out.push_back(std::move(o));
  }
  return out;
}

SuiteResult run_published_suite(const PublishedSuite& suite, const StepPredictor& predict) {
  return run_published_suite(suite, [&](const std::vector<Scenario>& scenarios) {
    return predict_each(scenarios, predict);
  });
}

}  // namespace clustersim::validation
