#include "campaign/monte_carlo.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "campaign/checkpoint_policy.hpp"
#include "campaign/rng.hpp"

namespace clustersim::campaign {

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kSecondsPerDay = 86400;

double cause_weight(const ResolvedCause& c) {
  return c.rate_per_s;
}
double straggler_weight(const ResolvedStraggler& s) {
  return s.rate_per_s;
}

// Running state of one straggler or scripted slowdown.
struct Slowdown {
  bool active = false;
  double factor = 1;
  double ib_factor = 1;
  double end_t = kInfinity;
  double detect_t = kInfinity;  // planned replacement time, inf = never
  std::string cause;
};

enum class EventKind {
  done,
  failure,
  save_end,
  persist_end,
  checkpoint,
  spike,
  straggler_start,
  straggler_end,
  straggler_detect,
  scripted_start,
  scripted_end,
  scripted_detect,
  limit
};

class Trial {
 public:
  Trial(const CampaignModel& m, std::uint64_t seed, TrialTrace* trace)
      : m_(m), rng_(seed), trace_(trace), scripted_(m.scripted.size()) {}

  TrialResult run();

 private:
  double slowdown() const;
  double ib_factor() const;
  std::string slow_cause() const;
  void advance_to(double t_next);
  void segment(double t0, double t1, Phase phase, double progress0, double age0);
  void event(double t, std::string kind, std::string cause, std::string detail = "");
  // Unplanned interruption: detection, then restart, back to the last durable checkpoint.
  void interrupt(const std::string& cause, double detection_s, double restart_s,
                 const std::string& detail);
  // Planned replacement of a slow node: save a checkpoint, then restart without it.
  void replace(const std::string& cause);
  void after_restart();

  // The next event: the earliest candidate, ties going to the first in priority order.
  struct Next {
    double t = kInfinity;
    EventKind kind = EventKind::limit;
    std::size_t index = 0;  // scripted fault
  };
  Next next_event() const;
  void handle(EventKind kind, std::size_t index);
  void on_save_end();
  void on_persist_end();
  void on_checkpoint();
  void on_spike();
  void on_straggler_start();
  void on_scripted_start(std::size_t i);

  const CampaignModel& m_;
  Rng rng_;
  TrialTrace* trace_;
  TrialResult r_;

  double t_ = 0;  // wall clock
  double p_ = 0;  // progress, productive seconds
  double p_durable_ = 0;
  double age_ = 0;  // process age, for drift
  double next_failure_t_ = kInfinity;
  double next_checkpoint_t_ = kInfinity;
  bool saving_ = false;
  double save_end_t_ = 0;
  bool save_makes_durable_ = false;  // blocking save: durable at its end
  double save_progress_ = 0;
  bool persisting_ = false;
  double persist_end_t_ = 0;
  double persist_progress_ = 0;
  double next_straggler_t_ = kInfinity;
  Slowdown straggler_;
  std::vector<Slowdown> scripted_;
  std::vector<int> scripted_stage_;  // per scripted fault: 0 pending, 1 active, 2 done
  double next_spike_p_ = kInfinity;
};

double Trial::slowdown() const {
  double f = straggler_.active ? straggler_.factor : 1.0;
  for (const auto& s : scripted_) {
    if (s.active) f = std::max(f, s.factor);
  }
  return f;
}

double Trial::ib_factor() const {
  double f = straggler_.active ? straggler_.ib_factor : 1.0;
  for (const auto& s : scripted_) {
    if (s.active) f = std::min(f, s.ib_factor);
  }
  return f;
}

std::string Trial::slow_cause() const {
  double f = 1.0;
  std::string cause;
  if (straggler_.active) {
    f = straggler_.factor;
    cause = straggler_.cause;
  }
  for (const auto& s : scripted_) {
    if (s.active && s.factor > f) {
      f = s.factor;
      cause = s.cause;
    }
  }
  return cause;
}

void Trial::segment(double t0, double t1, Phase phase, double progress0, double age0) {
  if (!trace_ || !(t1 > t0)) return;
  TraceSegment s;
  s.t0 = t0;
  s.t1 = t1;
  s.phase = phase;
  s.progress0 = progress0;
  s.age0 = age0;
  if (phase == Phase::running || phase == Phase::checkpoint) {
    s.slowdown = slowdown();
    s.ib_factor = ib_factor();
    s.slow_cause = slow_cause();
  }
  trace_->segments.push_back(std::move(s));
}

void Trial::event(double t, std::string kind, std::string cause, std::string detail) {
  if (!trace_) return;
  trace_->events.push_back({t, std::move(kind), std::move(cause), std::move(detail)});
}

void Trial::advance_to(double t_next) {
  const double dt = t_next - t_;
  if (dt <= 0) return;
  if (saving_) {
    segment(t_, t_next, Phase::checkpoint, p_, age_);
    r_.lost_s_by_cause["checkpoint_save"] += dt;
  } else {
    const double f = slowdown();
    const double k = m_.mitigation_factor * f;
    const double dp = progress_over(age_, dt, k, m_.drift_growth_per_s);
    segment(t_, t_next, Phase::running, p_, age_);
    // Attribution of the extra wall time: mitigations first, then the slowest rank or link,
    // the rest (including the cross term) to drift.
    const double mitigation = dp * (m_.mitigation_factor - 1.0);
    const double slow = dp * m_.mitigation_factor * (f - 1.0);
    const double drift = std::max(0.0, dt - dp * k);
    if (mitigation > 0) r_.lost_s_by_cause["mitigation"] += mitigation;
    if (slow > 0) r_.lost_s_by_cause["slowdown: " + slow_cause()] += slow;
    if (drift > 0) r_.lost_s_by_cause["drift"] += drift;
    p_ += dp;
  }
  t_ = t_next;
  age_ += dt;
}

void Trial::after_restart() {
  if (m_.drift_resets_on_restart) age_ = 0;
  saving_ = false;
  persisting_ = false;
  next_checkpoint_t_ = t_ + m_.interval_s;
  // Memoryless failure processes: resampling after the downtime is exact, and failures do
  // not strike while the job is down.
  next_failure_t_ = t_ + rng_.exponential(m_.failure_rate_per_s);
  // A slow node found before the restart is left out of the new allocation.
  if (straggler_.active && (straggler_.detect_t <= t_ || straggler_.end_t <= t_)) {
    straggler_.active = false;
  }
  for (std::size_t i = 0; i < scripted_.size(); ++i) {
    auto& s = scripted_[i];
    if (s.active && (s.detect_t <= t_ || s.end_t <= t_)) {
      s.active = false;
      scripted_stage_[i] = 2;
    }
  }
}

void Trial::interrupt(const std::string& cause, double detection_s, double restart_s,
                      const std::string& detail) {
  const double lost = p_ - p_durable_;
  ++r_.interruptions;
  ++r_.interruptions_by_cause[cause];
  r_.lost_s_by_cause[cause] += lost + detection_s + restart_s;
  event(t_, "failure", cause, detail);
  segment(t_, t_ + detection_s, Phase::hung, p_, age_);
  segment(t_ + detection_s, t_ + detection_s + restart_s, Phase::restarting, p_durable_, 0);
  t_ += detection_s + restart_s;
  p_ = p_durable_;
  event(t_, "restart", cause,
        "resumed from the checkpoint at " + std::to_string(p_durable_ / kSecondsPerDay) +
            " productive days");
  after_restart();
}

void Trial::replace(const std::string& cause) {
  ++r_.interruptions;
  ++r_.interruptions_by_cause["replacement: " + cause];
  const double save = m_.checkpoint.save_s;
  r_.lost_s_by_cause["replacement: " + cause] += save + m_.restart_s;
  event(t_, "replacement", cause, "checkpoint, then restart without the slow node");
  segment(t_, t_ + save, Phase::checkpoint, p_, age_);
  segment(t_ + save, t_ + save + m_.restart_s, Phase::restarting, p_, 0);
  t_ += save + m_.restart_s;
  p_durable_ = p_;
  ++r_.checkpoints;
  event(t_, "restart", cause, "after replacing the slow node");
  after_restart();
}

TrialResult Trial::run() {
  scripted_stage_.assign(m_.scripted.size(), 0);
  next_failure_t_ = rng_.exponential(m_.failure_rate_per_s);
  next_checkpoint_t_ = m_.interval_s;
  next_straggler_t_ = rng_.exponential(m_.straggler_rate_per_s);
  next_spike_p_ = rng_.exponential(m_.spike_rate_per_progress_s);
  while (true) {
    if (p_ >= m_.productive_s) {
      r_.finished = true;
      event(t_, "finished", "", "");
      break;
    }
    Next next = next_event();
    if (m_.max_wall_s < next.t) {
      next.t = m_.max_wall_s;
      next.kind = EventKind::limit;
    }
    advance_to(std::max(next.t, t_));
    if (next.kind == EventKind::limit) {
      event(t_, "limit", "", "the run did not finish within max_days");
      r_.finished = false;
      break;
    }
    handle(next.kind, next.index);
  }
  r_.wall_s = t_;
  r_.progress_s = p_;
  r_.goodput = t_ > 0 ? std::min(p_, m_.productive_s) / t_ : 0.0;
  return r_;
}

Trial::Next Trial::next_event() const {
  const double f = slowdown();
  const double k = m_.mitigation_factor * f;
  const double g = m_.drift_growth_per_s;
  const bool can_replace = m_.policy.replace && m_.checkpoint.policy != IntervalPolicy::none;
  Next best;
  const auto consider = [&](double when, EventKind kind, std::size_t index = 0) {
    if (when < best.t) best = {when, kind, index};
  };
  // Candidate times, in priority order for ties.
  if (!saving_) consider(t_ + wall_for(age_, m_.productive_s - p_, k, g), EventKind::done);
  consider(next_failure_t_, EventKind::failure);
  if (saving_) consider(save_end_t_, EventKind::save_end);
  if (persisting_) consider(persist_end_t_, EventKind::persist_end);
  if (!saving_ && !persisting_) consider(next_checkpoint_t_, EventKind::checkpoint);
  if (!saving_ && next_spike_p_ < kInfinity) {
    consider(t_ + wall_for(age_, next_spike_p_ - p_, k, g), EventKind::spike);
  }
  consider(next_straggler_t_, EventKind::straggler_start);
  if (straggler_.active) {
    consider(straggler_.end_t, EventKind::straggler_end);
    if (can_replace) consider(straggler_.detect_t, EventKind::straggler_detect);
  }
  for (std::size_t i = 0; i < m_.scripted.size(); ++i) {
    if (scripted_stage_[i] == 0)
      consider(std::max(t_, m_.scripted[i].spec.from_s), EventKind::scripted_start, i);
    if (scripted_[i].active) {
      consider(scripted_[i].end_t, EventKind::scripted_end, i);
      if (can_replace) consider(scripted_[i].detect_t, EventKind::scripted_detect, i);
    }
  }
  return best;
}

void Trial::handle(EventKind kind, std::size_t index) {
  switch (kind) {
    case EventKind::limit: break;
    case EventKind::done: p_ = m_.productive_s; break;
    case EventKind::failure: {
      const auto i = rng_.pick(m_.causes, m_.failure_rate_per_s, cause_weight);
      const auto& c = m_.causes[i];
      interrupt(c.name, c.detection_s, m_.restart_s, to_string(c.detection));
      break;
    }
    case EventKind::save_end: on_save_end(); break;
    case EventKind::persist_end: on_persist_end(); break;
    case EventKind::checkpoint: on_checkpoint(); break;
    case EventKind::spike: on_spike(); break;
    case EventKind::straggler_start: on_straggler_start(); break;
    case EventKind::straggler_end:
      straggler_.active = false;
      event(t_, "straggler_end", straggler_.cause);
      break;
    case EventKind::straggler_detect:
      straggler_.active = false;
      replace(straggler_.cause);
      break;
    case EventKind::scripted_start: on_scripted_start(index); break;
    case EventKind::scripted_end:
      scripted_[index].active = false;
      scripted_stage_[index] = 2;
      event(t_, "slowdown_end", scripted_[index].cause);
      break;
    case EventKind::scripted_detect:
      scripted_[index].active = false;
      scripted_stage_[index] = 2;
      replace(scripted_[index].cause);
      break;
  }
}

void Trial::on_save_end() {
  saving_ = false;
  if (save_makes_durable_) {
    p_durable_ = save_progress_;
    ++r_.checkpoints;
    event(t_, "checkpoint", "", "durable");
  } else {
    persisting_ = true;
    persist_end_t_ = t_ + m_.persist_s;
    persist_progress_ = save_progress_;
  }
  next_checkpoint_t_ = t_ + m_.interval_s;
}

void Trial::on_persist_end() {
  persisting_ = false;
  p_durable_ = persist_progress_;
  ++r_.checkpoints;
  event(t_, "checkpoint", "", "durable (async)");
  next_checkpoint_t_ = std::max(next_checkpoint_t_, t_);
}

void Trial::on_checkpoint() {
  saving_ = true;
  save_progress_ = p_;
  save_end_t_ = t_ + m_.stall_s;
  save_makes_durable_ = m_.checkpoint.mode == SaveMode::blocking;
}

void Trial::on_spike() {
  p_ = std::max(p_, next_spike_p_);
  const double spike_at = next_spike_p_;
  r_.skipped_tokens += m_.spikes.skip_batches * m_.tokens_per_step;
  event(t_, "nan", "loss_nan",
        "loss became NaN; rolling back and skipping " + std::to_string(m_.spikes.skip_batches) +
            " batches");
  interrupt("loss_nan", m_.spikes.response_s, m_.rollback_s, "NaN loss");
  next_spike_p_ = spike_at + rng_.exponential(m_.spike_rate_per_progress_s);
}

void Trial::on_straggler_start() {
  const auto i = rng_.pick(m_.stragglers, m_.straggler_rate_per_s, straggler_weight);
  const auto& s = m_.stragglers[i];
  const double duration =
      s.spec.duration_median_s * std::exp(s.spec.duration_sigma * rng_.normal());
  if (!straggler_.active || s.slowdown > straggler_.factor) {
    straggler_.factor = s.slowdown;
    straggler_.ib_factor = s.ib_factor;
    straggler_.cause = "straggler " + s.spec.name;
    straggler_.detect_t =
        s.slowdown >= m_.policy.threshold ? t_ + m_.policy.detect_after_s : kInfinity;
  }
  straggler_.end_t = std::max(straggler_.active ? straggler_.end_t : t_, t_ + duration);
  straggler_.active = true;
  event(t_, "straggler_start", straggler_.cause,
        "step x" + std::to_string(s.slowdown) + " for " +
            std::to_string(duration / kSecondsPerHour) + " h");
  next_straggler_t_ = t_ + rng_.exponential(m_.straggler_rate_per_s);
}

void Trial::on_scripted_start(std::size_t i) {
  const auto& s = m_.scripted[i];
  scripted_stage_[i] = 1;
  if (s.crashes) {
    scripted_stage_[i] = 2;
    interrupt(s.spec.cause, s.detection_s, m_.restart_s, s.spec.target());
    return;
  }
  auto& state = scripted_[i];
  state.active = true;
  state.factor = s.slowdown;
  state.ib_factor = s.ib_factor;
  state.end_t = s.spec.until_s;
  state.detect_t = s.slowdown >= m_.policy.threshold ? t_ + m_.policy.detect_after_s : kInfinity;
  state.cause = s.spec.cause + " (" + s.spec.target() + ")";
  event(t_, "slowdown_start", state.cause,
        "step x" + std::to_string(s.slowdown) +
            (s.step.slowest.empty() ? "" : "; slowest: " + s.step.slowest));
}

}  // namespace

// Progress (productive seconds) made in `dt` wall seconds from process age `age`, when each
// step takes k (1 + g age) times the baseline step: the integral of 1 / (k (1 + g a)).
double progress_over(double age, double dt, double k, double g) {
  if (g * (age + dt) < 1e-12) return dt / k;
  return std::log1p(g * dt / (1.0 + g * age)) / (g * k);
}

// Inverse of progress_over: wall seconds to make `dp` productive seconds from age `age`.
double wall_for(double age, double dp, double k, double g) {
  if (dp <= 0) return 0;
  const double x = g * k * dp;
  if (x < 1e-12) return dp * k;
  if (x > 700) return kInfinity;
  return (1.0 + g * age) * std::expm1(x) / g;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::running: return "running";
    case Phase::checkpoint: return "checkpoint";
    case Phase::hung: return "hung";
    case Phase::restarting: return "restarting";
  }
  return "?";
}

std::uint64_t trial_seed(std::uint64_t seed, int trial) {
  // SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014)
  // of the seed offset by the trial: neighbouring trials get unrelated streams.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(trial) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

TrialResult run_trial(const CampaignModel& model, std::uint64_t seed, TrialTrace* trace) {
  Trial trial(model, seed, trace);
  return trial.run();
}

Stats describe(std::vector<double> values) {
  Stats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.stddev = values.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  const auto quantile = [&](double q) {
    const double h = (n - 1) * q;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const auto hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (h - std::floor(h)) * (values[hi] - values[lo]);
  };
  s.p10 = quantile(0.10);
  s.p50 = quantile(0.50);
  s.p90 = quantile(0.90);
  s.min = values.front();
  s.max = values.back();
  return s;
}

CampaignSummary run_campaign(const CampaignModel& model, int trials, std::uint64_t seed,
                             const std::function<void()>& on_trial) {
  if (trials < 1) throw std::invalid_argument("run_campaign: trials must be >= 1");
  CampaignSummary out;
  out.trials = trials;
  out.seed = seed;
  std::vector<double> days, cost, goodput, interruptions;
  std::map<std::string, double> by_cause, lost_by_cause;
  int unfinished = 0;
  double checkpoints = 0, skipped = 0;
  for (int i = 0; i < trials; ++i) {
    const TrialResult r = run_trial(model, trial_seed(seed, i), nullptr);
    days.push_back(r.wall_s / kSecondsPerDay);
    cost.push_back(r.wall_s / kSecondsPerHour * model.gpus * model.usd_per_gpu_hour);
    goodput.push_back(r.goodput);
    interruptions.push_back(r.interruptions);
    for (const auto& [cause, n] : r.interruptions_by_cause) by_cause[cause] += n;
    for (const auto& [cause, s] : r.lost_s_by_cause) lost_by_cause[cause] += s;
    if (!r.finished) ++unfinished;
    checkpoints += r.checkpoints;
    skipped += r.skipped_tokens;
    if (on_trial) on_trial();
  }
  out.days = describe(days);
  out.cost_usd = describe(cost);
  out.goodput = describe(goodput);
  out.interruptions = describe(interruptions);
  out.unfinished_fraction = static_cast<double>(unfinished) / trials;
  out.days_standard_error = out.days.stddev / std::sqrt(static_cast<double>(trials));
  for (const auto& [cause, n] : by_cause) out.interruptions_by_cause[cause] = n / trials;
  for (const auto& [cause, s] : lost_by_cause) {
    out.gpu_hours_lost_by_cause[cause] = s / kSecondsPerHour * model.gpus / trials;
  }
  out.checkpoints = checkpoints / trials;
  out.skipped_tokens = skipped / trials;
  return out;
}

}  // namespace clustersim::campaign
