// The system-parameter fit (validation/system_fit.hpp): the box-constrained least squares and
// least absolute deviations it rests on, recovery of known parameters from runs generated with
// them, and cross-validation that really leaves each source out. Simulators here are closed forms,
// so every expected value is known by construction.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/json_reader.hpp"
#include "models/compute_cost.hpp"
#include "validation/system_fit.hpp"
#include "validation/system_fit_io.hpp"

using namespace clustersim;
using namespace clustersim::validation;

namespace {

constexpr auto kTensor = SystemParameterId::tensor_sustained_fraction;
constexpr auto kGap = SystemParameterId::kernel_gap_us;

// A step that spends g seconds in tensor-core kernels at the microbenchmark rate, launches k
// kernels and spends c seconds in everything else: g / f + k * gap + c.
struct ClosedFormRun {
  double g, k, c;
  double step(const SystemValues& v) const { return g / v.at(kTensor) + k * v.at(kGap) * 1e-6 + c; }
};

FitEvaluator evaluator(const std::vector<ClosedFormRun>& model) {
  return [model](const std::vector<FitQuery>& queries) {
    std::vector<double> t;
    for (const auto& q : queries)
      t.push_back(model[static_cast<std::size_t>(q.run)].step(q.values));
    return t;
  };
}

std::vector<FitRun> runs_from(const std::vector<ClosedFormRun>& model,
                              const std::vector<std::string>& sources,
                              const std::vector<SystemValues>& truth) {
  std::vector<FitRun> runs;
  for (std::size_t i = 0; i < model.size(); ++i) {
    runs.push_back(
        {"run" + std::to_string(i), sources[i], "gpu", model[i].step(truth[i]), i % 2 == 0});
  }
  return runs;
}

// Runs of different shapes: big-GEMM runs pin the tensor fraction, kernel-heavy runs the gap.
const std::vector<ClosedFormRun> kModel = {
    {10.0, 2e4, 1.0}, {4.0, 2e5, 0.5}, {1.0, 5e5, 0.2},  {8.0, 1e5, 2.0}, {2.0, 3e5, 0.1},
    {6.0, 5e4, 0.7},  {3.0, 4e5, 0.3}, {0.5, 6e5, 0.05}, {9.0, 1e4, 1.5},
};

SystemFitOptions options() {
  SystemFitOptions o;
  o.parameters = {kTensor, kGap};
  return o;
}

}  // namespace

TEST_CASE("Bounded least squares solves inside the box and clamps at a bound") {
  // x1 = 1, x2 = 2, x1 + x2 = 3: an exact solution (1, 2).
  const std::vector<std::vector<double>> A = {{1, 0}, {0, 1}, {1, 1}};
  const std::vector<double> b = {1, 2, 3};
  const auto x = bounded_least_squares(A, b, {0, 0}, {5, 5});
  CHECK(x[0] == Approx(1.0));
  CHECK(x[1] == Approx(2.0));
  // x2 <= 1.5: x2 = 1.5 and x1 minimises (x1 - 1)^2 + (x1 + 1.5 - 3)^2, so x1 = 1.25.
  const auto y = bounded_least_squares(A, b, {0, 0}, {5, 1.5});
  CHECK(y[0] == Approx(1.25));
  CHECK(y[1] == Approx(1.5));
}

TEST_CASE("Bounded least absolute deviations passes through the rows that agree") {
  // y = x0 + x1 t at t = 0..4 with y = 0, 1, 2, 3, 40: the last row is an outlier. The sum of
  // absolute errors is least on the line through the other four, (0, 1); least squares gives
  // the regression line of all five, x1 = (sum (t - 2)(y - 9.2)) / 10 = 82 / 10 = 8.2.
  const std::vector<std::vector<double>> A = {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}};
  const std::vector<double> b = {0, 1, 2, 3, 40};
  const auto lad = bounded_least_absolute(A, b, {-100, -100}, {100, 100});
  CHECK(lad[0] == Approx(0.0).margin(1e-4));
  CHECK(lad[1] == Approx(1.0).epsilon(1e-4));
  CHECK(bounded_least_squares(A, b, {-100, -100}, {100, 100})[1] == Approx(8.2));
  // With the slope capped at 0.5, the intercept minimises |x0| + |x0 + 0.5 - 1| + |x0 + 1 - 2|
  // + |x0 + 1.5 - 3| + |x0 + 2 - 40|: the median of 0, 0.5, 1, 1.5 and 38, x0 = 1.
  const auto capped = bounded_least_absolute(A, b, {-100, -100}, {100, 0.5});
  CHECK(capped[1] == Approx(0.5));
  CHECK(capped[0] == Approx(1.0).epsilon(1e-4));
}

TEST_CASE("One run far off for another reason does not move the fit of the others") {
  // Nine runs generated with (0.85, 9 us); the first ran 50 % slower for a reason the two
  // parameters do not stand for. The sum of absolute errors still recovers the parameters within
  // 2 %; least squares spreads the outlier over every run.
  const SystemValues truth = {{kTensor, 0.85}, {kGap, 9.0}};
  const std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "c", "c", "c"};
  auto runs = runs_from(kModel, sources, std::vector<SystemValues>(kModel.size(), truth));
  runs[0].implied_step_s *= 1.5;
  const SystemValues& lad = fit_system(runs, evaluator(kModel), options()).groups.at("gpu").values;
  CHECK(lad.at(kTensor) == Approx(0.85).epsilon(0.02));
  CHECK(lad.at(kGap) == Approx(9.0).epsilon(0.02));
  SystemFitOptions squared = options();
  squared.loss = FitLoss::squared;
  const SystemValues& ls = fit_system(runs, evaluator(kModel), squared).groups.at("gpu").values;
  CHECK(std::abs(ls.at(kTensor) / 0.85 - 1) > 0.02);
}

TEST_CASE("The fit recovers parameters that generated the runs within 2%") {
  const SystemValues truth = {{kTensor, 0.85}, {kGap, 9.0}};
  const std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "c", "c", "c"};
  const auto runs = runs_from(kModel, sources, std::vector<SystemValues>(kModel.size(), truth));
  const SystemFitResult fit = fit_system(runs, evaluator(kModel), options());
  const SystemValues& v = fit.groups.at("gpu").values;
  CHECK(v.at(kTensor) == Approx(0.85).epsilon(0.02));
  CHECK(v.at(kGap) == Approx(9.0).epsilon(0.02));
  CHECK(*fit.in_sample_mape_pct < 0.5);
  CHECK(*fit.cross_validated_mape_pct < 0.5);  // every source tells the same story
}

TEST_CASE("A parameter no run of a group responds to is left out of that group's fit") {
  // Group "gpu" launches kernels; group "graphed" replays them (k = 0): its step does not move
  // with the gap, which it then does not carry, in its values or its folds.
  const SystemValues truth = {{kTensor, 0.85}, {kGap, 9.0}};
  std::vector<ClosedFormRun> model = kModel;
  const std::vector<ClosedFormRun> graphed = {{10.0, 0, 1.0}, {4.0, 0, 0.5}, {8.0, 0, 2.0}};
  model.insert(model.end(), graphed.begin(), graphed.end());
  std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "c", "c", "c", "a", "b", "c"};
  auto runs = runs_from(model, sources, std::vector<SystemValues>(model.size(), truth));
  for (std::size_t i = kModel.size(); i < model.size(); ++i) runs[i].group = "graphed";
  const SystemFitResult fit = fit_system(runs, evaluator(model), options());
  const SystemCalibration& g = fit.groups.at("graphed");
  CHECK_FALSE(g.find(kGap));
  CHECK(*g.find(kTensor) == Approx(0.85).epsilon(0.02));
  for (const auto& fold : g.folds) CHECK(fold.values.count(kGap) == 0);
  CHECK(fit.groups.at("gpu").find(kGap).has_value());
}

TEST_CASE("A parameter the runs want outside its range stays at the bound") {
  // Runs generated with a tensor fraction of 0.5, below the plausible 0.70.
  const SystemValues truth = {{kTensor, 0.5}, {kGap, 4.0}};
  const auto runs = runs_from(kModel, std::vector<std::string>(kModel.size(), "a"),
                              std::vector<SystemValues>(kModel.size(), truth));
  const SystemFitResult fit = fit_system(runs, evaluator(kModel), options());
  CHECK(fit.groups.at("gpu").values.at(kTensor) == Approx(0.70));
  CHECK(*fit.in_sample_mape_pct > 5);  // the range is not stretched to make the table match
}

TEST_CASE("Cross-validation fits each source's fold without that source's runs") {
  // Sources a and b agree (0.85, 9 us); source c ran a different system (0.72, 18 us).
  const SystemValues ab = {{kTensor, 0.85}, {kGap, 9.0}};
  const SystemValues c = {{kTensor, 0.72}, {kGap, 18.0}};
  const std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "c", "c", "c"};
  std::vector<SystemValues> truth(6, ab);
  truth.insert(truth.end(), 3, c);
  const auto runs = runs_from(kModel, sources, truth);
  const SystemFitResult fit = fit_system(runs, evaluator(kModel), options());
  const auto& group = fit.groups.at("gpu");
  const SystemFold* fold_c = nullptr;
  for (const auto& f : group.folds)
    if (f.held_out_source == "c") fold_c = &f;
  REQUIRE(fold_c != nullptr);
  CHECK(fold_c->held_out_cases == std::vector<std::string>{"run6", "run7", "run8"});
  // Without c the fold sees only a and b, which agree on (0.85, 9 us). The fold is one
  // Gauss-Newton step from the all-runs solution (its linearisation point), not a converged fit
  // of its own: within 3% here, where the step time is far from log-linear in the parameters.
  CHECK(fold_c->values.at(kTensor) == Approx(0.85).epsilon(0.03));
  CHECK(fold_c->values.at(kGap) == Approx(9.0).epsilon(0.03));
  // In sample, the sum of absolute errors stays where six of the nine runs agree (any move costs
  // more on them than it gains on c's three); least squares is pulled towards c's longer gap.
  CHECK(group.values.at(kTensor) == Approx(0.85).epsilon(0.03));
  CHECK(group.values.at(kGap) == Approx(9.0).epsilon(0.03));
  SystemFitOptions squared = options();
  squared.loss = FitLoss::squared;
  CHECK(fit_system(runs, evaluator(kModel), squared).groups.at("gpu").values.at(kGap) > 10.0);
  // c's runs are predicted with the fold's values, fitted on a and b alone, so they carry c's
  // disagreement in full: run8, the least kernel-bound, ran 9 / 0.72 + 0.18 + 1.5 = 14.18 s and
  // is predicted 9 / 0.85 + 0.09 + 1.5 = 12.18 s, 14 % off; the other two are further off.
  for (const auto& r : fit.runs) {
    if (r.run.source == "c") CHECK(std::abs(r.cv_error_pct) > 10.0);
  }
}

TEST_CASE("A fold's parameters equal a fit made without the held-out source") {
  // ln(step) linear in the parameters: the linearisation is exact, so the fold's values and a
  // separate fit on the other sources must agree to rounding.
  struct LogLinear {
    double s, beta, gamma;
  };
  const std::vector<LogLinear> model = {{10, -1.0, 0.1}, {5, -0.6, 0.5}, {2, -0.2, 0.9},
                                        {8, -0.9, 0.2},  {3, -0.4, 0.7}, {1, -0.1, 1.2}};
  const auto step = [&](std::size_t i, const SystemValues& v) {
    const auto& m = model[i];
    return m.s * std::exp(m.beta * (v.at(kTensor) - 1.0) + m.gamma * (v.at(kGap) - 4.0) / 20.0);
  };
  const FitEvaluator evaluate = [&](const std::vector<FitQuery>& queries) {
    std::vector<double> t;
    for (const auto& q : queries) t.push_back(step(static_cast<std::size_t>(q.run), q.values));
    return t;
  };
  const std::vector<SystemValues> truth = {
      {{kTensor, 0.9}, {kGap, 6}},  {{kTensor, 0.88}, {kGap, 7}},  {{kTensor, 0.9}, {kGap, 6}},
      {{kTensor, 0.92}, {kGap, 5}}, {{kTensor, 0.75}, {kGap, 15}}, {{kTensor, 0.8}, {kGap, 12}}};
  const std::vector<std::string> sources = {"a", "a", "b", "b", "c", "c"};
  std::vector<FitRun> runs;
  for (std::size_t i = 0; i < model.size(); ++i)
    runs.push_back({"r" + std::to_string(i), sources[i], "gpu", step(i, truth[i]), true});
  const SystemFitResult all = fit_system(runs, evaluate, options());
  const std::vector<FitRun> without_c(runs.begin(), runs.begin() + 4);
  const SystemFitResult ab = fit_system(without_c, evaluate, options());
  const SystemFold& fold_c = all.groups.at("gpu").folds.back();
  REQUIRE(fold_c.held_out_source == "c");
  CHECK(fold_c.values.at(kTensor) == Approx(ab.groups.at("gpu").values.at(kTensor)).margin(1e-6));
  CHECK(fold_c.values.at(kGap) == Approx(ab.groups.at("gpu").values.at(kGap)).margin(1e-4));
}

TEST_CASE("Without verification the fit skips the cross-validated pass and reports no errors") {
  // 9 runs, 2 parameters, 2 linearisations: starting pass, then per linearisation one pass per
  // parameter and one at the new values, which checks the step made the loss no worse
  // (9 + 2 x (18 + 9) = 63), and the cross-validated pass (9): 72 with verification, 63 without.
  const SystemValues truth = {{kTensor, 0.85}, {kGap, 9.0}};
  const std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "c", "c", "c"};
  const auto runs = runs_from(kModel, sources, std::vector<SystemValues>(kModel.size(), truth));
  SystemFitOptions o = options();
  o.iterations = 2;
  const SystemFitResult verified = fit_system(runs, evaluator(kModel), o);
  o.verify = false;
  const SystemFitResult quick = fit_system(runs, evaluator(kModel), o);
  CHECK(verified.simulations == 72);
  CHECK(quick.simulations == 63);
  CHECK(quick.runs.empty());
  CHECK_FALSE(quick.cross_validated_mape_pct.has_value());
  CHECK_FALSE(quick.groups.at("gpu").in_sample_mape_pct.has_value());
  CHECK(quick.groups.at("gpu").values == verified.groups.at("gpu").values);
  CHECK(quick.groups.at("gpu").folds.size() == 3);
}

TEST_CASE("The fit stops once a step no longer moves the values") {
  // ln(step) linear in the parameters: the first step lands on the solution (its linearisation is
  // exact), the second moves nothing and ends the fit, well before the eight allowed.
  const std::vector<double> beta = {-1.0, -0.6, -0.2, -0.9};
  const std::vector<double> gamma = {0.1, 0.5, 0.9, 0.2};
  const auto step = [&](std::size_t i, const SystemValues& v) {
    return std::exp(beta[i] * (v.at(kTensor) - 1.0) + gamma[i] * (v.at(kGap) - 4.0) / 20.0);
  };
  const SystemValues truth = {{kTensor, 0.9}, {kGap, 6.0}};
  std::vector<FitRun> runs;
  for (std::size_t i = 0; i < beta.size(); ++i)
    runs.push_back({"run" + std::to_string(i), i < 2 ? "a" : "b", "gpu", step(i, truth), false});
  const FitEvaluator evaluate = [&](const std::vector<FitQuery>& queries) {
    std::vector<double> t;
    for (const auto& q : queries) t.push_back(step(static_cast<std::size_t>(q.run), q.values));
    return t;
  };
  const SystemFitResult fit = fit_system(runs, evaluate, options());
  CHECK(fit.converged);
  CHECK(fit.linearisations == 2);
  CHECK(fit.groups.at("gpu").values.at(kTensor) == Approx(0.9).epsilon(1e-6));
  // Allowed one step only, the fit cannot know it has arrived.
  SystemFitOptions once = options();
  once.iterations = 1;
  const SystemFitResult one = fit_system(runs, evaluate, once);
  CHECK_FALSE(one.converged);
  CHECK(one.linearisations == 1);
}

TEST_CASE("A step that makes the loss worse is halved, and the fit still converges") {
  // One run whose ln(step / implied) is tanh(20 (f - 0.9)) in the tensor fraction f: from the
  // nominal f = 1 (tanh 2 = 0.964), the linearised step lands at the range's bound 0.70, where
  // |tanh(-4)| = 0.999 is worse; halved, it lands at 0.85 (0.762, better). Taken whole, the
  // steps would swing between the bounds 0.70 and 1.00 for ever; halved when worse, they close
  // in on the root 0.9.
  const double implied = 10.0;
  const auto step = [&](const SystemValues& v) {
    return implied * std::exp(std::tanh(20.0 * (v.at(kTensor) - 0.9)));
  };
  const std::vector<FitRun> runs = {{"run0", "a", "gpu", implied, false}};
  const FitEvaluator evaluate = [&](const std::vector<FitQuery>& queries) {
    std::vector<double> t;
    for (const auto& q : queries) t.push_back(step(q.values));
    return t;
  };
  SystemFitOptions o;
  o.parameters = {kTensor};
  const SystemFitResult fit = fit_system(runs, evaluate, o);
  CHECK(fit.converged);
  CHECK(fit.groups.at("gpu").values.at(kTensor) == Approx(0.9).margin(1e-3));
}

namespace {

constexpr auto kHost = SystemParameterId::host_us_per_kernel;

// p passes of g seconds of GPU work issued as n kernels, and c seconds besides.
struct HostBoundRun {
  double g, n, p, c;
  double step(const SystemValues& v) const {
    return p * std::max(g / v.at(kTensor), n * v.at(kHost) * 1e-6) + c;
  }
};

}  // namespace

TEST_CASE("The host time per kernel is recovered from the runs that wait for the host only") {
  // A pass of g seconds of GPU work issued as n kernels by a host spending h per kernel takes
  // max(g, n h) (workload/host_dispatch.cpp); a step is p such passes plus c seconds. Dense runs
  // (long kernels) never wait and pin the tensor fraction; MoE-like runs from two sources wait
  // and pin h. Each source's fold is fitted on the other's waiting runs and still finds h.
  const std::vector<HostBoundRun> model = {
      {5e-3, 20, 400, 1.0},    {8e-3, 30, 300, 0.5},   {2e-3, 10, 900, 0.2},    // dense, source a
      {6e-3, 25, 500, 0.8},    {3e-3, 12, 700, 0.3},                            // dense, source b
      {1e-3, 100, 600, 0.4},   {2e-3, 150, 400, 0.6},  {0.5e-3, 60, 800, 0.1},  // MoE, source b
      {1.5e-3, 120, 500, 0.5}, {0.8e-3, 90, 700, 0.2},                          // MoE, source c
  };
  const std::vector<std::string> sources = {"a", "a", "a", "b", "b", "b", "b", "b", "c", "c"};
  const SystemValues truth = {{kTensor, 0.9}, {kHost, 40.0}};
  std::vector<FitRun> runs;
  for (std::size_t i = 0; i < model.size(); ++i)
    runs.push_back({"run" + std::to_string(i), sources[i], "gpu", model[i].step(truth), true});
  const FitEvaluator evaluate = [&model](const std::vector<FitQuery>& queries) {
    std::vector<double> t;
    for (const auto& q : queries)
      t.push_back(model[static_cast<std::size_t>(q.run)].step(q.values));
    return t;
  };
  SystemFitOptions o;
  o.parameters = {kTensor, kHost};
  const SystemFitResult fit = fit_system(runs, evaluate, o);
  const SystemCalibration& g = fit.groups.at("gpu");
  CHECK(*g.find(kTensor) == Approx(0.9).epsilon(0.02));
  CHECK(*g.find(kHost) == Approx(40.0).epsilon(0.02));
  for (const auto& fold : g.folds) {
    INFO("without " << fold.held_out_source);
    CHECK(fold.values.at(kHost) == Approx(40.0).epsilon(0.02));
  }
  CHECK(*fit.cross_validated_mape_pct < 0.5);
}

TEST_CASE("Writing a fit into a file based on another keeps the base and takes the fit") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "clustersim-test-system-block";
  fs::create_directories(dir);
  const fs::path hopper =
      fs::path(CLUSTERSIM_SOURCE_DIR) / "validation/data/compute_efficiency.json";
  fs::copy_file(hopper, dir / "hopper.json", fs::copy_options::overwrite_existing);
  const std::string part = (dir / "part.json").string();
  std::ofstream(part) << R"({"base": {"file": "hopper.json", "why": "the same die"}})";
  SystemCalibration fitted;
  fitted.values = {{kTensor, 0.85}};
  fitted.fitted_on = {"a", "b"};
  write_system_block(part, fitted, "test");
  const JsonDocument written = JsonDocument::load(part);
  CHECK(written.root().raw().at("base").at("file") == "hopper.json");
  const models::ComputeCalibration cal = models::load_compute_calibration(part);
  const models::ComputeCalibration base = models::load_compute_calibration(hopper.string());
  CHECK(cal.system.find(kTensor) == 0.85);
  CHECK(cal.system.borrowed_from.empty());
  CHECK(cal.hbm_efficiency == base.hbm_efficiency);
  fs::remove_all(dir);
}
