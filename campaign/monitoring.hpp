// The seed's monitoring (its §5) replayed on one simulated trial: a time series of
// step_time, mfu, gpu_util, gpu_temp, nvlink_bw, ib_bw, loss and grad_norm, and the alerts
// its thresholds raise:
//   step_time > 1.5x baseline warning, > 2x critical;  GPU temperature > 80 C / > 85 C;
//   loss NaN critical;  InfiniBand bandwidth < 300 Gb/s warning, < 200 Gb/s critical.
//
// How each metric is modelled (constants and sources in monitoring.cpp):
//   step_time  the trial's step time: baseline x mitigation cost x slowest-rank factor x
//              (1 + drift growth x process age); while hung, the time spent in the stuck step.
//   mfu        baseline MFU x baseline step / step time.
//   gpu_util   share of wall time with a kernel running (what nvidia-smi reports): kernels fill
//              the baseline step; ranks waiting for a straggler spin in NCCL kernels (busy);
//              drift and mitigation time is host-side (idle); a hang spins (100%).
//   gpu_temp   hottest GPU: inlet temperature with a daily swing + thermal resistance x board
//              power, power from idle to TDP with the kernel mix; a failing thermal interface
//              heats its GPU before the failure.
//   nvlink_bw, ib_bw  bandwidth achieved while collectives run (step model), ib_bw scaled by
//              degraded links; 0 when no step runs.
//   loss       Chinchilla's fit L(N, D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022,
//              eq. 10) at the tokens trained so far (rolled back with the checkpoint), with
//              small seeded noise; NaN at the trial's NaN events.
//   grad_norm  proportional to the reducible loss L - E, with seeded lognormal noise (a
//              qualitative model: no published law), NaN with the loss.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "campaign/monte_carlo.hpp"

namespace clustersim::campaign {

struct MonitorRow {
  double t_s = 0;
  std::string phase;       // running, checkpoint, hung, restarting
  double step_time_s = 0;  // NaN when no step runs (restarting, checkpoint stall)
  double mfu = 0;
  double gpu_util = 0;  // 0..1
  double gpu_temp_C = 0;
  double nvlink_GBps = 0;
  double ib_Gbps = 0;
  double loss = 0;  // NaN at a NaN event
  double grad_norm = 0;
};

struct Alert {
  double t_s = 0;
  std::string metric;  // step_time, gpu_temp, loss, ib_bw
  std::string level;   // warning, critical, resolved
  double value = 0;
  double threshold = 0;
  std::string message;
};

// The seed's thresholds (§5.2).
struct AlertThresholds {
  double step_time_warning = 1.5;  // x baseline
  double step_time_critical = 2.0;
  double gpu_temp_warning_C = 80;
  double gpu_temp_critical_C = 85;
  double ib_warning_Gbps = 300;
  double ib_critical_Gbps = 200;
};

struct Monitoring {
  std::vector<MonitorRow> rows;
  std::vector<Alert> alerts;
};

// Samples the trial every `interval_s` seconds of wall time, plus at each failure, restart,
// NaN, slowdown and straggler event; raises alerts on each change of level. `seed` drives the
// loss and grad-norm noise. Precondition: interval_s > 0.
Monitoring monitor_trial(const CampaignModel& model, const TrialTrace& trace, double interval_s,
                         std::uint64_t seed, const AlertThresholds& thresholds = {});

// CSV texts (header line first).
std::string monitoring_csv(const Monitoring& m);
std::string alerts_csv(const Monitoring& m);

// Chinchilla's parametric loss (Hoffmann et al. 2022, eq. 10 with the fitted E, A, B, alpha,
// beta of their Approach 3) for N parameters after D training tokens.
double chinchilla_loss(double parameters, double tokens);

}  // namespace clustersim::campaign
