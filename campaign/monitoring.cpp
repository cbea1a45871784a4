#include "campaign/monitoring.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "campaign/rng.hpp"

namespace clustersim::campaign {

namespace {

constexpr double kSecondsPerDay = 86400;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Chinchilla (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models",
// eq. 10, Approach 3 fit): L(N, D) = E + A / N^alpha + B / D^beta.
constexpr double kChinchillaE = 1.69;
constexpr double kChinchillaA = 406.4;
constexpr double kChinchillaB = 410.7;
constexpr double kChinchillaAlpha = 0.34;
constexpr double kChinchillaBeta = 0.28;
// Step-to-step loss noise, relative [assumption: logged per-step losses scatter by ~1%].
constexpr double kLossNoiseRelative = 0.01;
// Gradient norm per unit of reducible loss (L - E), and its lognormal scatter [assumption:
// a qualitative model giving pre-clip norms of a few units early and ~0.3 late in training,
// the range Llama/OPT logbooks show; no published law relates them].
constexpr double kGradNormPerLossGap = 1.5;
constexpr double kGradNormSigma = 0.15;

// Share of a healthy step with a kernel running: small host gaps between kernels and steps
// [assumption].
constexpr double kKernelBusyFraction = 0.98;

// Temperature model (hottest GPU):
// Data-centre inlet air at the top of ASHRAE TC9.9's recommended envelope (18-27 C) minus
// margin [assumption: 25 C].
constexpr double kInletTemp_C = 25;
// Daily swing of the inlet temperature [assumption; Llama 3 §3.3.4 reports a diurnal 1-2%
// throughput swing from temperature, so a swing exists, its amplitude is not published].
constexpr double kDiurnalAmplitude_C = 2;
// Board power: H100/H800 SXM TDP 700 W (NVIDIA H100 datasheet; docs/hardware.md#h100-sxm); idle
// [U: ~70-100 W on nvidia-smi for an idle SXM H100].
constexpr double kTdp_W = 700;
constexpr double kIdle_W = 90;
// Thermal resistance from inlet air to GPU die [assumption: chosen so that a GPU at TDP sits
// near 65 C, the middle of the 60-75 C that air-cooled HGX H100 report under load].
constexpr double kThermalResistance_C_per_W = 0.057;
// Hottest of ~1000 GPUs above the average one [assumption: airflow position in the chassis].
constexpr double kHottestOffset_C = 5;
// Power of communication kernels relative to compute kernels at the same utilisation
// [assumption: NCCL kernels use few SMs and no tensor cores].
constexpr double kCommKernelPowerFraction = 0.4;
// A failing thermal interface heats its GPU before the failure [assumption].
constexpr double kThermalFaultPeak_C = 92;
constexpr double kThermalFaultRamp_s = 1800;

const TraceSegment* segment_at(const TrialTrace& trace, double t) {
  const auto& segs = trace.segments;
  auto it = std::upper_bound(segs.begin(), segs.end(), t,
                             [](double x, const TraceSegment& s) { return x < s.t0; });
  if (it == segs.begin()) return nullptr;
  --it;
  if (t > it->t1) return nullptr;
  return &*it;
}

std::string format(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

double chinchilla_loss(double parameters, double tokens) {
  return kChinchillaE + kChinchillaA / std::pow(parameters, kChinchillaAlpha) +
         kChinchillaB / std::pow(tokens, kChinchillaBeta);
}

namespace {

// When to sample a trial: the regular grid plus the events worth a row, each with whether to
// look just before it (a NaN row belongs to the step that produced it, and the last moment of
// a hang, when it is detected, to the hang).
struct SampleTimes {
  std::vector<std::pair<double, bool>> times;  // (t, look just before t), in time order
  std::vector<double> thermal_failures;
  std::vector<double> nan_times;
};

SampleTimes sample_times(const TrialTrace& trace, double interval_s) {
  SampleTimes out;
  const double end_t = trace.segments.back().t1;
  for (double t = 0; t <= end_t; t += interval_s) out.times.emplace_back(t, false);
  for (const auto& s : trace.segments) {
    if (s.phase == Phase::hung) out.times.emplace_back(s.t1, true);
  }
  for (const auto& e : trace.events) {
    if (e.kind == "checkpoint" || e.kind == "finished" || e.kind == "limit") continue;
    out.times.emplace_back(e.t, e.kind == "nan");
    if (e.kind == "nan") out.nan_times.push_back(e.t);
    if (e.kind == "failure" && e.cause == "gpu_thermal") out.thermal_failures.push_back(e.t);
  }
  std::stable_sort(out.times.begin(), out.times.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Step time, MFU, utilisation and bandwidths at time t of segment s; returns the progress
// made by then and sets `power_fraction` (0 idle .. 1 TDP).
double step_metrics(MonitorRow& row, const CampaignModel& model, const TraceSegment& s, double t,
                    double& power_fraction) {
  const auto& base = model.baseline;
  const double g = model.drift_growth_per_s;
  double progress = s.progress0;
  power_fraction = 0;
  row.step_time_s = kNaN;
  switch (s.phase) {
    case Phase::running: {
      const double age = s.age0 + (t - s.t0);
      const double k = model.mitigation_factor * s.slowdown;
      progress += progress_over(s.age0, t - s.t0, k, g);
      const double drift = 1.0 + g * age;
      row.step_time_s = base.step_time_s * k * drift;
      row.mfu = base.mfu * base.step_time_s / row.step_time_s;
      row.gpu_util = (kKernelBusyFraction + s.slowdown - 1.0) / (k * drift);
      // Share of wall time in compute kernels; the rest of the busy time is communication.
      const double compute = base.compute_share * kKernelBusyFraction / (k * drift);
      power_fraction = compute + (row.gpu_util - compute) * kCommKernelPowerFraction;
      row.nvlink_GBps = base.nvlink_Bps / 1e9;
      row.ib_Gbps = base.ib_bps * s.ib_factor / 1e9;
      break;
    }
    case Phase::hung:
      // Every rank spins in the stuck collective: busy, little power, no traffic.
      row.step_time_s = base.step_time_s + (t - s.t0);
      row.gpu_util = 1.0;
      power_fraction = kCommKernelPowerFraction;
      break;
    case Phase::checkpoint:
    case Phase::restarting: break;
  }
  row.gpu_util = std::clamp(row.gpu_util, 0.0, 1.0);
  return progress;
}

// The hottest GPU at time t drawing `power_fraction` of its TDP range.
double gpu_temperature_C(double t, double power_fraction,
                         const std::vector<double>& thermal_failures) {
  const double power_W = kIdle_W + (kTdp_W - kIdle_W) * std::clamp(power_fraction, 0.0, 1.0);
  const double inlet =
      kInletTemp_C + kDiurnalAmplitude_C * std::sin(2.0 * 3.14159265358979 * t / kSecondsPerDay);
  double temp = inlet + kThermalResistance_C_per_W * power_W + kHottestOffset_C;
  for (double tf : thermal_failures) {
    if (t > tf - kThermalFaultRamp_s && t <= tf) {
      const double x = (t - (tf - kThermalFaultRamp_s)) / kThermalFaultRamp_s;
      temp = std::max(temp, temp + x * (kThermalFaultPeak_C - temp));
    }
  }
  return temp;
}

// Raises an alert each time a metric's level changes (warning, critical, resolved).
class AlertWatch {
 public:
  enum Level { ok = 0, warning = 1, critical = 2 };
  explicit AlertWatch(const char* metric) : metric_(metric) {}
  Level level() const { return level_; }
  void update(std::vector<Alert>& alerts, Level now, double t, double value, double warn,
              double crit, const std::string& what) {
    static const char* const names[] = {"resolved", "warning", "critical"};
    if (now == level_) return;
    Alert a;
    a.t_s = t;
    a.metric = metric_;
    a.level = names[now];
    a.value = value;
    a.threshold = now == critical ? crit : warn;
    a.message = now == ok ? what + " back to normal" : what;
    level_ = now;
    alerts.push_back(std::move(a));
  }

 private:
  const char* metric_;
  Level level_ = ok;
};

void raise_alerts(Monitoring& out, const StepEstimate& base, const AlertThresholds& th) {
  using Level = AlertWatch::Level;
  AlertWatch step("step_time"), temp("gpu_temp"), ib("ib_bw");
  for (const auto& r : out.rows) {
    const bool stepping = r.phase == "running" || r.phase == "hung";
    const double ratio = stepping ? r.step_time_s / base.step_time_s : 0.0;
    const Level l = ratio > th.step_time_critical  ? AlertWatch::critical
                    : ratio > th.step_time_warning ? AlertWatch::warning
                                                   : AlertWatch::ok;
    // A hang only gets worse until it is detected: it never resolves an alert.
    if (stepping && !(r.phase == "hung" && l < step.level())) {
      step.update(out.alerts, l, r.t_s, r.step_time_s, th.step_time_warning * base.step_time_s,
                  th.step_time_critical * base.step_time_s,
                  "step time " + format(ratio, 2) + "x the baseline " +
                      format(base.step_time_s, 3) + " s" + (r.phase == "hung" ? " (hung)" : ""));
    }
    const Level lt = r.gpu_temp_C > th.gpu_temp_critical_C  ? AlertWatch::critical
                     : r.gpu_temp_C > th.gpu_temp_warning_C ? AlertWatch::warning
                                                            : AlertWatch::ok;
    temp.update(out.alerts, lt, r.t_s, r.gpu_temp_C, th.gpu_temp_warning_C, th.gpu_temp_critical_C,
                "hottest GPU at " + format(r.gpu_temp_C, 1) + " C");
    if (r.phase == "running") {
      const Level li = r.ib_Gbps < th.ib_critical_Gbps  ? AlertWatch::critical
                       : r.ib_Gbps < th.ib_warning_Gbps ? AlertWatch::warning
                                                        : AlertWatch::ok;
      ib.update(out.alerts, li, r.t_s, r.ib_Gbps, th.ib_warning_Gbps, th.ib_critical_Gbps,
                "InfiniBand at " + format(r.ib_Gbps, 0) + " Gb/s");
    }
    if (std::isnan(r.loss)) {
      out.alerts.push_back(
          {r.t_s, "loss", "critical", kNaN, kNaN, "loss is NaN: stop and roll back"});
    }
  }
}

}  // namespace

Monitoring monitor_trial(const CampaignModel& model, const TrialTrace& trace, double interval_s,
                         std::uint64_t seed, const AlertThresholds& th) {
  Monitoring out;
  if (trace.segments.empty()) return out;
  const SampleTimes samples = sample_times(trace, interval_s);
  Rng rng(seed);
  for (const auto& [t, before] : samples.times) {
    const TraceSegment* s = segment_at(trace, before ? std::max(0.0, t - 1e-6) : t);
    if (!s) continue;
    MonitorRow row;
    row.t_s = t;
    row.phase = to_string(s->phase);
    double power_fraction = 0;
    const double progress = step_metrics(row, model, *s, t, power_fraction);
    row.gpu_temp_C = gpu_temperature_C(t, power_fraction, samples.thermal_failures);
    const double tokens = std::max(model.tokens_per_step, progress * model.tokens_per_s());
    const double clean = chinchilla_loss(model.model_parameters, tokens);
    row.loss = clean * (1.0 + kLossNoiseRelative * rng.normal());
    row.grad_norm =
        kGradNormPerLossGap * (clean - kChinchillaE) * std::exp(kGradNormSigma * rng.normal());
    const auto& nans = samples.nan_times;
    if (before && std::find(nans.begin(), nans.end(), t) != nans.end()) {
      row.loss = kNaN;
      row.grad_norm = kNaN;
    }
    out.rows.push_back(std::move(row));
  }
  raise_alerts(out, model.baseline, th);
  return out;
}

std::string monitoring_csv(const Monitoring& m) {
  std::string out =
      "time_s,day,phase,step_time_s,mfu,gpu_util_pct,gpu_temp_C,nvlink_bw_GBps,ib_bw_Gbps,loss,"
      "grad_norm\n";
  for (const auto& r : m.rows) {
    const bool step = !std::isnan(r.step_time_s);
    out += format(r.t_s, 1) + "," + format(r.t_s / kSecondsPerDay, 4) + "," + r.phase + "," +
           (step ? format(r.step_time_s, 4) : "") + "," + format(r.mfu, 4) + "," +
           format(100.0 * r.gpu_util, 1) + "," + format(r.gpu_temp_C, 1) + "," +
           format(r.nvlink_GBps, 1) + "," + format(r.ib_Gbps, 1) + "," + format(r.loss, 4) + "," +
           format(r.grad_norm, 4) + "\n";
  }
  return out;
}

std::string alerts_csv(const Monitoring& m) {
  std::string out = "time_s,day,metric,level,value,threshold,message\n";
  for (const auto& a : m.alerts) {
    std::string message = a.message;
    std::replace(message.begin(), message.end(), ',', ';');
    out += format(a.t_s, 1) + "," + format(a.t_s / kSecondsPerDay, 4) + "," + a.metric + "," +
           a.level + "," + (std::isnan(a.value) ? "nan" : format(a.value, 3)) + "," +
           (std::isnan(a.threshold) ? "" : format(a.threshold, 3)) + "," + message + "\n";
  }
  return out;
}

}  // namespace clustersim::campaign
