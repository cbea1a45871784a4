// Resolving the parsed campaign sections into a CampaignModel (campaign/monte_carlo.hpp):
// failure rates for this job's components, detection latencies, the checkpoint interval,
// the step slowdowns of stragglers and scripted faults, drift, cost and limits.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "campaign/checkpoint_policy.hpp"
#include "campaign/monte_carlo.hpp"
#include "core/errors.hpp"

namespace clustersim::campaign {

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kSecondsPerDay = 86400;

double detection_for(Detection d, const CampaignModel& m) {
  switch (d) {
    case Detection::crash: return m.crash_detection_s;
    case Detection::network: return m.network_detection_s;
    case Detection::hang: return m.watchdog_s;
  }
  return 0;
}

// The job's size, tokens and fault-free duration.
void resolve_job(CampaignModel& m, const Scenario& scenario, const StepEstimate& baseline,
                 double model_parameters) {
  m.gpus = scenario.gpus;
  const int gpn = std::max(1, scenario.cluster.gpus_per_node);
  m.nodes = (scenario.gpus + gpn - 1) / gpn;
  m.nics = m.nodes * std::max(1, scenario.cluster.nics_per_node);
  m.tokens_total = scenario.training.tokens_total;
  m.tokens_per_step =
      static_cast<double>(scenario.training.global_batch) * scenario.training.seq_len;
  m.model_parameters = model_parameters;
  m.baseline = baseline;
  if (!(baseline.step_time_s > 0) || baseline.hang) {
    throw std::invalid_argument("build_campaign_model: the fault-free step must finish");
  }
  check_campaign_job(scenario);
  m.productive_s = fault_free_duration_s(scenario, baseline.step_time_s);
}

// Detection latencies and one Poisson process per failure cause with a positive rate.
void resolve_failures(CampaignModel& m, const Scenario& scenario, const FaultsConfig& faults) {
  m.ib_detection_s = scenario.comm.nccl.ib_hang_detection_s();
  m.watchdog_s = faults.watchdog_timeout_s;
  m.crash_detection_s = faults.crash_detection_s;
  m.network_detection_s = std::min(m.ib_detection_s, m.watchdog_s);
  for (const auto& c : faults.causes) {
    ResolvedCause r;
    r.name = c.name;
    switch (c.unit) {
      case FailureUnit::gpu: r.units = m.gpus; break;
      case FailureUnit::node: r.units = m.nodes; break;
      case FailureUnit::nic: r.units = m.nics; break;
      case FailureUnit::job: r.units = 1; break;
    }
    r.rate_per_s = c.rate_per_unit_hour * r.units / kSecondsPerHour;
    r.detection = c.detection;
    r.source = c.source;
    r.detection_s = detection_for(c.detection, m);
    if (r.rate_per_s > 0) {
      m.failure_rate_per_s += r.rate_per_s;
      m.causes.push_back(r);
    }
  }
  // Loss spikes, per productive second.
  m.spikes = faults.loss_spikes;
  m.spike_rate_per_progress_s = faults.loss_spikes.effective_rate_per_token() * m.tokens_per_s();
}

// Stall, persist and restart times and the interval the policy gives for the rollback rate.
void resolve_checkpointing(CampaignModel& m, const CheckpointConfig& checkpoint) {
  m.checkpoint = checkpoint;
  m.restart_s = checkpoint.reschedule_s + checkpoint.init_s + checkpoint.load_s;
  m.rollback_s = checkpoint.init_s + checkpoint.load_s;
  m.stall_s = checkpoint.mode == SaveMode::blocking ? checkpoint.save_s : checkpoint.async_stall_s;
  m.persist_s =
      checkpoint.mode == SaveMode::async ? checkpoint.save_s - checkpoint.async_stall_s : 0.0;
  const double rollback_rate = m.failure_rate_per_s + m.spike_rate_per_progress_s;
  m.rollback_mtbf_s = rollback_rate > 0 ? 1.0 / rollback_rate : kInfinity;
  switch (checkpoint.policy) {
    case IntervalPolicy::none: m.interval_s = kInfinity; break;
    case IntervalPolicy::fixed: m.interval_s = checkpoint.fixed_interval_s; break;
    case IntervalPolicy::young:
    case IntervalPolicy::daly:
      if (std::isfinite(m.rollback_mtbf_s)) {
        m.interval_s = checkpoint.policy == IntervalPolicy::young
                           ? young_interval_s(m.stall_s, m.rollback_mtbf_s)
                           : daly_interval_s(m.stall_s, m.rollback_mtbf_s);
      } else {
        m.notes.push_back(
            "no failure process is set, so the Young/Daly interval is infinite: "
            "no checkpoints are taken");
      }
      break;
  }
  if (checkpoint.mode == SaveMode::async && m.interval_s < m.persist_s) {
    m.notes.push_back(
        "the checkpoint interval is shorter than an async save; checkpoints start "
        "only when the previous one is durable");
  }
  if (checkpoint.policy == IntervalPolicy::none && m.failure_rate_per_s > 0) {
    m.notes.push_back("no checkpointing: every failure restarts the run from the beginning");
  }
}

// A Young/Daly interval is known only here, from the failure rates: refuses one that would take
// more checkpoints in a trial than kMaxEventsPerTrial (a checkpoint that costs next to nothing).
void check_checkpoint_count(const CampaignModel& m, const CheckpointConfig& checkpoint) {
  const double checkpoints = m.max_wall_s / m.interval_s;
  if (checkpoints <= kMaxEventsPerTrial) return;
  std::ostringstream os;
  os.precision(3);
  os << "a checkpoint stall of " << m.stall_s << " s gives a " << to_string(checkpoint.policy)
     << " interval of " << m.interval_s << " s: about " << checkpoints
     << " checkpoints in one trial, above the limit of " << kMaxEventsPerTrial
     << "; give the checkpoint's real cost (save_s, write_GBps) or a fixed interval";
  checkpoint.where.at("interval").fail(os.str());
}

// Each straggler class's step slowdown, simulated with one such straggler (link stragglers on
// `representative_link`).
void resolve_stragglers(CampaignModel& m, const FaultsConfig& faults, const StepModel& step,
                        const StepEstimate& baseline, const std::string& representative_link) {
  m.policy = faults.straggler_policy;
  for (const auto& s : faults.stragglers) {
    ResolvedStraggler r;
    r.spec = s;
    r.rate_per_s = s.rate_per_gpu_hour * m.gpus / kSecondsPerHour;
    StepFaults f;
    if (s.link) {
      f.links.push_back({representative_link, s.factor, false, 0.0, 0.0});
    } else {
      f.slow_gpus.push_back({0, s.factor, 0.0, "straggler " + s.name});
    }
    r.step = step(f);
    r.slowdown = r.step.hang ? kInfinity : r.step.step_time_s / baseline.step_time_s;
    if (!std::isfinite(r.slowdown)) {
      throw std::invalid_argument("straggler class " + s.name + " makes the step hang");
    }
    if (r.slowdown < 1.0) {
      m.notes.push_back("straggler class " + s.name +
                        ": the step model gives a faster step with it; counted as no slowdown");
      r.slowdown = 1.0;
    }
    r.ib_factor = baseline.ib_bps > 0 ? r.step.ib_bps / baseline.ib_bps : 1.0;
    if (s.link && r.ib_factor == 1.0) r.ib_factor = s.factor;
    m.straggler_rate_per_s += r.rate_per_s;
    if (r.rate_per_s > 0) m.stragglers.push_back(r);
  }
}

// One scripted fault: a crash (link down, node lost) or a step slowdown while it lasts.
ResolvedScriptedFault resolve_scripted(CampaignModel& m, const ScriptedFault& e,
                                       const StepModel& step, const StepEstimate& baseline) {
  ResolvedScriptedFault r;
  r.spec = e;
  r.step = step(step_faults_at({e}, e.from_s));
  r.crashes = e.kind == FaultKind::link_down || e.kind == FaultKind::node_lost;
  if (r.crashes) {
    r.detection_s = m.network_detection_s;
    if (e.kind == FaultKind::link_down && !r.step.hang) {
      r.crashes = false;
      m.notes.push_back(e.target() +
                        " goes down but no collective of this layout crosses it: "
                        "no effect");
    }
    return r;
  }
  r.slowdown = r.step.step_time_s / baseline.step_time_s;
  if (r.slowdown < 1.0) {
    // A fault cannot speed a synchronous step up; a faster step is a step-model artefact.
    m.notes.push_back(e.target() + ": the step model gives a faster step with this fault (" +
                      std::to_string(r.step.step_time_s) + " s against " +
                      std::to_string(baseline.step_time_s) + " s without); counted as no slowdown");
    r.slowdown = 1.0;
  }
  r.ib_factor = baseline.ib_bps > 0 ? r.step.ib_bps / baseline.ib_bps : 1.0;
  if (e.kind == FaultKind::link_degraded && r.ib_factor == 1.0) r.ib_factor = e.factor;
  return r;
}

}  // namespace

namespace {

// global_batch x seq_len, refused when not positive (the run could not be timed).
double checked_tokens_per_step(const Scenario& scenario) {
  const double tokens_per_step =
      static_cast<double>(scenario.training.global_batch) * scenario.training.seq_len;
  if (!(tokens_per_step > 0)) {
    throw ConfigError(scenario.file, "/training",
                      "global_batch x seq_len must be positive to time the run");
  }
  return tokens_per_step;
}

}  // namespace

void check_campaign_job(const Scenario& scenario) {
  if (!(scenario.training.tokens_total > 0)) {
    throw ConfigError(scenario.file, "/training/tokens_total",
                      "the campaign needs the run's tokens_total (> 0)");
  }
  checked_tokens_per_step(scenario);
}

double fault_free_duration_s(const Scenario& scenario, double step_time_s) {
  return scenario.training.tokens_total / checked_tokens_per_step(scenario) * step_time_s;
}

CampaignModel build_campaign_model(const Scenario& scenario, const CampaignSettings& settings,
                                   const FaultsConfig& faults, const CheckpointConfig& checkpoint,
                                   const CostConfig& cost, const StepModel& step,
                                   const StepEstimate& baseline, double model_parameters,
                                   const std::string& representative_link) {
  CampaignModel m;
  resolve_job(m, scenario, baseline, model_parameters);
  resolve_failures(m, scenario, faults);
  resolve_checkpointing(m, checkpoint);
  resolve_stragglers(m, faults, step, baseline, representative_link);
  for (const auto& e : faults.events) m.scripted.push_back(resolve_scripted(m, e, step, baseline));

  // Drift and its mitigations.
  m.drift = faults.drift;
  m.drift_growth_per_s = faults.drift.effective_growth_per_s();
  m.drift_resets_on_restart = faults.drift.resets_on_restart;
  m.mitigation_factor = faults.drift.mitigation_factor(baseline.step_time_s);

  m.usd_per_gpu_hour = cost.usd_per_gpu_hour;
  m.price_source = cost.source;
  m.max_wall_s = settings.max_days * kSecondsPerDay;
  check_checkpoint_count(m, checkpoint);
  return m;
}

}  // namespace clustersim::campaign
