#include "validation/system_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace clustersim::validation {

double metric_error_pct(bool rate_metric, double simulated_step_s, double implied_step_s) {
  const double ratio =
      rate_metric ? implied_step_s / simulated_step_s : simulated_step_s / implied_step_s;
  return 100.0 * (ratio - 1.0);
}

namespace {

// Halvings of a step that made a group's loss worse, before the step is not taken.
constexpr int kBacktracks = 3;

// Tiny ridge towards the linearisation point: keeps the normal equations regular when a group
// has fewer runs than parameters or a parameter has no effect on its runs.
constexpr double kRidge = 1e-9;

// |A x - b|^2 for x with the variables of `fixed` held at their bound and the others solved.
// Returns +inf when the solution leaves the box.
double solve_with_bounds(const Eigen::MatrixXd& A, const Eigen::VectorXd& b,
                         const std::vector<int>& state, const std::vector<double>& low,
                         const std::vector<double>& high, Eigen::VectorXd& x) {
  const int n = static_cast<int>(state.size());
  x = Eigen::VectorXd::Zero(n);
  std::vector<int> free;
  for (int j = 0; j < n; ++j) {
    if (state[j] == 1) x[j] = low[j];
    if (state[j] == 2) x[j] = high[j];
    if (state[j] == 0) free.push_back(j);
  }
  if (!free.empty()) {
    Eigen::MatrixXd Af(A.rows(), static_cast<int>(free.size()));
    for (std::size_t k = 0; k < free.size(); ++k) Af.col(static_cast<int>(k)) = A.col(free[k]);
    const Eigen::VectorXd rhs = b - A * x;
    Eigen::MatrixXd N = Af.transpose() * Af;
    N.diagonal().array() += kRidge;
    const Eigen::VectorXd xf = N.ldlt().solve(Af.transpose() * rhs);
    for (std::size_t k = 0; k < free.size(); ++k) {
      const int j = free[k];
      x[j] = xf[static_cast<int>(k)];
      if (x[j] < low[j] - 1e-12 || x[j] > high[j] + 1e-12) {
        return std::numeric_limits<double>::infinity();
      }
    }
  }
  return (A * x - b).squaredNorm();
}

}  // namespace

std::vector<double> bounded_least_squares(const std::vector<std::vector<double>>& A,
                                          const std::vector<double>& b,
                                          const std::vector<double>& low,
                                          const std::vector<double>& high) {
  const int n = static_cast<int>(low.size());
  if (n == 0 || high.size() != low.size() || A.size() != b.size()) {
    throw std::invalid_argument("bounded_least_squares: inconsistent sizes");
  }
  Eigen::MatrixXd M(static_cast<int>(A.size()), n);
  for (std::size_t i = 0; i < A.size(); ++i) {
    if (static_cast<int>(A[i].size()) != n)
      throw std::invalid_argument("bounded_least_squares: ragged matrix");
    for (int j = 0; j < n; ++j) M(static_cast<int>(i), j) = A[i][static_cast<std::size_t>(j)];
  }
  const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(b.data(), static_cast<int>(b.size()));
  // Each variable free (0), at its lower bound (1) or at its upper bound (2): 3^n combinations.
  int combinations = 1;
  for (int j = 0; j < n; ++j) combinations *= 3;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_x = Eigen::VectorXd::Zero(n), x;
  for (int code = 0; code < combinations; ++code) {
    std::vector<int> state(static_cast<std::size_t>(n));
    for (int j = 0, c = code; j < n; ++j, c /= 3) state[static_cast<std::size_t>(j)] = c % 3;
    const double r = solve_with_bounds(M, v, state, low, high, x);
    if (r < best - 1e-15) {
      best = r;
      best_x = x;
    }
  }
  return std::vector<double>(best_x.data(), best_x.data() + n);
}

std::vector<double> bounded_least_absolute(const std::vector<std::vector<double>>& A,
                                           const std::vector<double>& b,
                                           const std::vector<double>& low,
                                           const std::vector<double>& high) {
  // Weighted least squares with w_i = 1 / |r_i| has the stationary points of sum |r_i|; a floor
  // on |r_i| keeps the rows a solution passes through finite.
  constexpr double kFloor = 1e-6;
  constexpr int kRounds = 200;
  std::vector<double> x = bounded_least_squares(A, b, low, high);
  const auto residual = [&](std::size_t i, const std::vector<double>& v) {
    double r = -b[i];
    for (std::size_t j = 0; j < v.size(); ++j) r += A[i][j] * v[j];
    return r;
  };
  const auto objective = [&](const std::vector<double>& v) {
    double sum = 0;
    for (std::size_t i = 0; i < A.size(); ++i) sum += std::abs(residual(i, v));
    return sum;
  };
  double best = objective(x);
  std::vector<double> best_x = x;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::vector<double>> Aw = A;
    std::vector<double> bw = b;
    for (std::size_t i = 0; i < A.size(); ++i) {
      const double w = 1.0 / std::sqrt(std::max(std::abs(residual(i, x)), kFloor));
      for (double& a : Aw[i]) a *= w;
      bw[i] *= w;
    }
    const std::vector<double> next = bounded_least_squares(Aw, bw, low, high);
    double step = 0;
    for (std::size_t j = 0; j < x.size(); ++j) step = std::max(step, std::abs(next[j] - x[j]));
    x = next;
    if (const double f = objective(x); f < best) {
      best = f;
      best_x = x;
    }
    if (step < 1e-12) break;
  }
  return best_x;
}

namespace {

struct Group {
  std::vector<int> runs;  // indices into the run list
};

// The fit state: one value vector per group, over the fitted parameters.
using Point = std::map<std::string, SystemValues>;

class Fitter {
 public:
  Fitter(const std::vector<FitRun>& runs, const FitEvaluator& evaluate,
         const SystemFitOptions& options)
      : runs_(runs), evaluate_(evaluate), options_(options) {
    for (std::size_t i = 0; i < runs_.size(); ++i)
      groups_[runs_[i].group].runs.push_back(static_cast<int>(i));
    for (const auto& [name, group] : groups_) start_[name] = start_values(name);
  }

  SystemFitResult run();

 private:
  SystemValues start_values(const std::string& group) const;
  // Simulated step time of every run at `point` (each at its own group's values).
  std::vector<double> simulate(const Point& point);
  std::vector<double> simulate(const std::vector<FitQuery>& queries);
  // d ln(step) / d u for every run and fitted parameter, u the parameter scaled to [0, 1].
  std::vector<std::vector<double>> jacobian(const Point& at, const std::vector<double>& base);
  // Values of `group` minimising the linearised residuals of the runs in `use`.
  SystemValues solve(const std::string& group, const std::vector<int>& use, const Point& at,
                     const std::vector<double>& base, const std::vector<std::vector<double>>& J);
  SystemFitResult result(const Point& fitted, const std::map<std::string, Point>& folds);
  // The fit's loss over one group's runs at the step times `t` (every run's).
  double loss(const std::string& group, const std::vector<double>& t) const;
  // Each run's errors at the fitted (in-sample) and its fold's (cross-validated) values.
  void add_errors(SystemFitResult& out, const std::vector<double>& in_sample,
                  const std::vector<double>& cv) const;

  double scale(SystemParameterId id) const {
    const auto& s = system_parameter(id);
    return s.high - s.low;
  }

  // Parameters the first linearisation found without effect on any run of a group (an
  // element-wise share measured for that GPU, say): left out of its values.
  void find_inert(const std::vector<std::vector<double>>& J);

  const std::vector<FitRun>& runs_;
  const FitEvaluator& evaluate_;
  const SystemFitOptions& options_;
  std::map<std::string, Group> groups_;
  Point start_;
  std::map<std::string, std::set<SystemParameterId>> inert_;
  int simulations_ = 0;
  int linearisations_ = 0;
  bool converged_ = false;
};

SystemValues Fitter::start_values(const std::string& group) const {
  SystemValues v;
  if (const auto it = options_.start.find(group); it != options_.start.end()) v = it->second;
  for (SystemParameterId id : options_.parameters) {
    const auto& spec = system_parameter(id);
    double& x = v.try_emplace(id, spec.nominal).first->second;
    x = std::clamp(x, spec.low, spec.high);
  }
  return v;
}

std::vector<double> Fitter::simulate(const std::vector<FitQuery>& queries) {
  std::vector<double> t = evaluate_(queries);
  simulations_ += static_cast<int>(queries.size());
  if (t.size() != queries.size())
    throw std::runtime_error("system fit: the simulator returned the wrong number of results");
  for (std::size_t q = 0; q < t.size(); ++q) {
    if (!(t[q] > 0) || !std::isfinite(t[q])) {
      throw std::runtime_error("system fit: run " + runs_[queries[q].run].id +
                               " simulated to a step time of " + std::to_string(t[q]));
    }
  }
  return t;
}

std::vector<double> Fitter::simulate(const Point& point) {
  std::vector<FitQuery> q;
  for (std::size_t i = 0; i < runs_.size(); ++i)
    q.push_back({static_cast<int>(i), point.at(runs_[i].group)});
  return simulate(q);
}

std::vector<std::vector<double>> Fitter::jacobian(const Point& at,
                                                  const std::vector<double>& base) {
  const std::size_t P = options_.parameters.size();
  std::vector<std::vector<double>> J(runs_.size(), std::vector<double>(P, 0.0));
  for (std::size_t p = 0; p < P; ++p) {
    const SystemParameterId id = options_.parameters[p];
    const auto& spec = system_parameter(id);
    // A step of a tenth of the range, inwards from a bound.
    Point moved = at;
    std::map<std::string, double> du;
    for (auto& [name, values] : moved) {
      double& x = values[id];
      const double step = 0.1 * scale(id) * (x + 0.1 * scale(id) > spec.high ? -1 : 1);
      x += step;
      du[name] = step / scale(id);
    }
    const std::vector<double> t = simulate(moved);
    for (std::size_t i = 0; i < runs_.size(); ++i)
      J[i][p] = (std::log(t[i]) - std::log(base[i])) / du.at(runs_[i].group);
  }
  return J;
}

SystemValues Fitter::solve(const std::string& group, const std::vector<int>& use, const Point& at,
                           const std::vector<double>& base,
                           const std::vector<std::vector<double>>& J) {
  const SystemValues& x0 = at.at(group);
  if (use.empty()) return start_.at(group);  // nothing to fit on: the starting values
  const std::size_t P = options_.parameters.size();
  std::vector<std::vector<double>> A;
  std::vector<double> b, low(P), high(P);
  for (std::size_t p = 0; p < P; ++p) {
    const SystemParameterId id = options_.parameters[p];
    const auto& spec = system_parameter(id);
    // Unknown: the change du of the scaled parameter from the linearisation point.
    low[p] = (spec.low - x0.at(id)) / scale(id);
    high[p] = (spec.high - x0.at(id)) / scale(id);
  }
  for (int i : use) {
    A.push_back(J[static_cast<std::size_t>(i)]);
    b.push_back(std::log(runs_[static_cast<std::size_t>(i)].implied_step_s) -
                std::log(base[static_cast<std::size_t>(i)]));
  }
  const std::vector<double> du = options_.loss == FitLoss::absolute
                                     ? bounded_least_absolute(A, b, low, high)
                                     : bounded_least_squares(A, b, low, high);
  SystemValues x = x0;
  for (std::size_t p = 0; p < P; ++p) {
    const SystemParameterId id = options_.parameters[p];
    const auto& spec = system_parameter(id);
    x[id] = std::clamp(x0.at(id) + du[p] * scale(id), spec.low, spec.high);
  }
  return x;
}

double Fitter::loss(const std::string& group, const std::vector<double>& t) const {
  double sum = 0;
  for (int i : groups_.at(group).runs) {
    const auto k = static_cast<std::size_t>(i);
    const double r = std::log(t[k] / runs_[k].implied_step_s);
    sum += options_.loss == FitLoss::absolute ? std::abs(r) : r * r;
  }
  return sum;
}

SystemFitResult Fitter::run() {
  std::set<std::string> sources;
  for (const auto& r : runs_) sources.insert(r.source);
  Point point = start_;
  std::vector<double> base = simulate(point);
  std::map<std::string, Point> folds;
  for (int it = 0; it < std::max(1, options_.iterations); ++it) {
    const auto J = jacobian(point, base);
    if (it == 0) find_inert(J);
    Point next;
    for (const auto& [name, group] : groups_) next[name] = solve(name, group.runs, point, base, J);
    // Folds on the same linearisation: every group refitted without the source's runs.
    folds.clear();
    for (const auto& source : sources) {
      for (const auto& [name, group] : groups_) {
        std::vector<int> use;
        for (int i : group.runs)
          if (runs_[static_cast<std::size_t>(i)].source != source) use.push_back(i);
        folds[source][name] =
            use.size() == group.runs.size() ? next.at(name) : solve(name, use, point, base, J);
      }
    }
    // A step the simulator says made a group's loss worse is halved, up to kBacktracks times, and
    // then not taken: in a flat valley the linearised solution can jump across the minimum.
    std::vector<double> trial = simulate(next);
    for (int halving = 0;; ++halving) {
      std::vector<FitQuery> redo;
      for (auto& [name, values] : next) {
        if (loss(name, trial) <= loss(name, base)) continue;
        for (SystemParameterId id : options_.parameters) {
          values[id] = halving < kBacktracks ? 0.5 * (values[id] + point.at(name).at(id))
                                             : point.at(name).at(id);
        }
        for (int i : groups_.at(name).runs) redo.push_back({i, values});
      }
      if (redo.empty()) break;
      if (halving == kBacktracks) {  // not taken: those runs keep their times at `point`
        for (const auto& q : redo) {
          const auto k = static_cast<std::size_t>(q.run);
          trial[k] = base[k];
        }
        break;
      }
      const std::vector<double> t = simulate(redo);
      for (std::size_t q = 0; q < redo.size(); ++q)
        trial[static_cast<std::size_t>(redo[q].run)] = t[q];
    }
    double moved = 0;
    for (const auto& [name, values] : next) {
      for (SystemParameterId id : options_.parameters)
        moved = std::max(moved, std::abs(values.at(id) - point.at(name).at(id)) / scale(id));
    }
    point = next;
    base = trial;
    linearisations_ = it + 1;
    converged_ = moved <= kConvergedFraction;
    if (converged_) break;
  }
  if (!options_.verify) return result(point, folds);
  std::vector<FitQuery> cv_queries;
  for (std::size_t i = 0; i < runs_.size(); ++i)
    cv_queries.push_back({static_cast<int>(i), folds.at(runs_[i].source).at(runs_[i].group)});
  SystemFitResult out = result(point, folds);
  add_errors(out, base, simulate(cv_queries));
  return out;
}

void Fitter::find_inert(const std::vector<std::vector<double>>& J) {
  for (const auto& [name, group] : groups_) {
    for (std::size_t p = 0; p < options_.parameters.size(); ++p) {
      const bool moves = std::any_of(group.runs.begin(), group.runs.end(), [&](int i) {
        return J[static_cast<std::size_t>(i)][p] != 0.0;
      });
      if (!moves) inert_[name].insert(options_.parameters[p]);
    }
  }
}

SystemFitResult Fitter::result(const Point& fitted, const std::map<std::string, Point>& folds) {
  SystemFitResult out;
  for (const auto& [name, group] : groups_) {
    SystemCalibration& g = out.groups[name];
    g.values = fitted.at(name);
    const auto drop_inert = [&](SystemValues& v) {
      if (const auto it = inert_.find(name); it != inert_.end())
        for (SystemParameterId id : it->second) v.erase(id);
    };
    drop_inert(g.values);
    for (int i : group.runs) g.fitted_on.push_back(runs_[static_cast<std::size_t>(i)].id);
    for (const auto& [source, point] : folds) {
      SystemFold fold{source, {}, point.at(name)};
      drop_inert(fold.values);
      for (int i : group.runs)
        if (runs_[static_cast<std::size_t>(i)].source == source)
          fold.held_out_cases.push_back(runs_[static_cast<std::size_t>(i)].id);
      if (!fold.held_out_cases.empty()) g.folds.push_back(std::move(fold));
    }
  }
  out.simulations = simulations_;
  out.linearisations = linearisations_;
  out.converged = converged_;
  return out;
}

void Fitter::add_errors(SystemFitResult& out, const std::vector<double>& in_sample,
                        const std::vector<double>& cv) const {
  std::map<std::string, std::pair<double, double>> sums;  // group -> (in-sample, cv) |error|
  double in_all = 0, cv_all = 0;
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    RunFit f{runs_[i], in_sample[i], cv[i], 0, 0};
    f.in_sample_error_pct =
        metric_error_pct(runs_[i].rate_metric, in_sample[i], runs_[i].implied_step_s);
    f.cv_error_pct = metric_error_pct(runs_[i].rate_metric, cv[i], runs_[i].implied_step_s);
    in_all += std::abs(f.in_sample_error_pct);
    cv_all += std::abs(f.cv_error_pct);
    sums[runs_[i].group].first += std::abs(f.in_sample_error_pct);
    sums[runs_[i].group].second += std::abs(f.cv_error_pct);
    out.runs.push_back(f);
  }
  out.in_sample_mape_pct = in_all / static_cast<double>(runs_.size());
  out.cross_validated_mape_pct = cv_all / static_cast<double>(runs_.size());
  for (const auto& [name, group] : groups_) {
    const double n = static_cast<double>(group.runs.size());
    out.groups[name].in_sample_mape_pct = sums[name].first / n;
    out.groups[name].cross_validated_mape_pct = sums[name].second / n;
  }
  out.simulations = simulations_;
}

}  // namespace

SystemFitResult fit_system(const std::vector<FitRun>& runs, const FitEvaluator& evaluate,
                           const SystemFitOptions& options) {
  if (runs.empty()) throw std::invalid_argument("system fit: no runs to fit");
  if (options.parameters.empty()) throw std::invalid_argument("system fit: no parameter to fit");
  for (const auto& r : runs) {
    if (!(r.implied_step_s > 0) || !std::isfinite(r.implied_step_s)) {
      throw std::invalid_argument("system fit: run " + r.id + " has no positive step time");
    }
  }
  Fitter fitter(runs, evaluate, options);
  return fitter.run();
}

}  // namespace clustersim::validation
