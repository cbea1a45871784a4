#include "campaign/campaign_report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "campaign/checkpoint_policy.hpp"

namespace clustersim::campaign {

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kSecondsPerDay = 86400;

nlohmann::json stats_json(const Stats& s) {
  return {{"mean", s.mean}, {"stddev", s.stddev}, {"p10", s.p10}, {"p50", s.p50},
          {"p90", s.p90},   {"min", s.min},       {"max", s.max}};
}

// JSON has no infinity; finite or null.
nlohmann::json finite(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

std::string fmt(double v, int digits) {
  if (!std::isfinite(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

namespace {

// The Monte Carlo's results: days, interruptions, GPU-hours lost, goodput, cost.
void add_results(nlohmann::json& j, const CampaignModel& m, const CampaignSummary& s) {
  j["days"] = stats_json(s.days);
  j["days"]["standard_error"] = s.days_standard_error;
  j["unfinished_fraction"] = s.unfinished_fraction;
  nlohmann::json by_cause = nlohmann::json::object();
  for (const auto& [cause, n] : s.interruptions_by_cause) by_cause[cause] = n;
  j["failures"] = {{"total", s.interruptions.mean},
                   {"p10", s.interruptions.p10},
                   {"p50", s.interruptions.p50},
                   {"p90", s.interruptions.p90},
                   {"by_cause", by_cause},
                   {"note",
                    "mean interruptions per run: unplanned failures and NaN rollbacks, "
                    "plus planned replacements of slow nodes (\"replacement: ...\")"}};
  nlohmann::json lost = nlohmann::json::object();
  double lost_total = 0;
  for (const auto& [cause, h] : s.gpu_hours_lost_by_cause) {
    lost[cause] = h;
    lost_total += h;
  }
  j["gpu_hours_lost"] = {{"total", lost_total}, {"by_cause", lost}};
  j["goodput"] = s.goodput.mean;
  j["goodput_stats"] = stats_json(s.goodput);
  j["cost_usd"] = s.cost_usd.mean;
  j["cost_usd_stats"] = stats_json(s.cost_usd);
  j["usd_per_gpu_hour"] = m.usd_per_gpu_hour;
  j["price_source"] = m.price_source;
  j["step"] = {{"step_time_s", m.baseline.step_time_s},
               {"mfu", m.baseline.mfu},
               {"model", m.baseline.model},
               {"tokens_per_step", m.tokens_per_step},
               {"tokens_per_s", m.tokens_per_s()},
               {"fault_free_days", m.productive_s / kSecondsPerDay},
               {"gpus", m.gpus},
               {"nodes", m.nodes}};
}

nlohmann::json checkpointing_json(const CampaignModel& m, const CampaignSummary& s) {
  const double save_stall = m.stall_s;
  nlohmann::json j = {
      {"policy", to_string(m.checkpoint.policy)},
      {"mode", to_string(m.checkpoint.mode)},
      {"interval_min", finite(m.interval_s / 60)},
      {"size_GB", m.checkpoint.size_bytes / 1e9},
      {"save_s", m.checkpoint.save_s},
      {"stall_s", save_stall},
      {"load_s", m.checkpoint.load_s},
      {"reschedule_s", m.checkpoint.reschedule_s},
      {"init_s", m.checkpoint.init_s},
      {"restart_s", m.restart_s},
      {"rollback_mtbf_h", finite(m.rollback_mtbf_s / kSecondsPerHour)},
      {"checkpoints_per_run", s.checkpoints},
      {"first_order_goodput", std::isfinite(m.interval_s) && std::isfinite(m.rollback_mtbf_s)
                                  ? nlohmann::json(first_order_goodput(
                                        m.interval_s, save_stall, m.restart_s, m.rollback_mtbf_s))
                                  : nlohmann::json()}};
  if (m.checkpoint.policy == IntervalPolicy::young || m.checkpoint.policy == IntervalPolicy::daly) {
    j["formula"] = m.checkpoint.policy == IntervalPolicy::young
                       ? "Young 1974: sqrt(2 x stall x MTBF)"
                       : "Daly 2006 eq. 37: sqrt(2dM)[1 + sqrt(d/2M)/3 + (d/2M)/9] - d";
  }
  return j;
}

// The failure processes and how long each kind of failure takes to be noticed.
void add_failure_model(nlohmann::json& j, const CampaignModel& m) {
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& c : m.causes) {
    causes.push_back({{"name", c.name},
                      {"per_day", c.rate_per_s * kSecondsPerDay},
                      {"units", c.units},
                      {"detection", to_string(c.detection)},
                      {"detection_s", c.detection_s},
                      {"source", c.source}});
  }
  j["failure_model"] = {{"per_day", m.failure_rate_per_s * kSecondsPerDay},
                        {"mtbf_h", finite(1.0 / m.failure_rate_per_s / kSecondsPerHour)},
                        {"causes", causes}};
  j["detection"] = {{"nccl_ib_detection_s", m.ib_detection_s},
                    {"nccl_ib_note",
                     "4.096 us x 2^NCCL_IB_TIMEOUT per try, 1 + NCCL_IB_RETRY_CNT "
                     "(capped at 7) tries"},
                    {"watchdog_s", m.watchdog_s},
                    {"network_s", m.network_detection_s},
                    {"crash_s", m.crash_detection_s}};
}

nlohmann::json scripted_faults_json(const CampaignModel& m) {
  nlohmann::json scripted = nlohmann::json::array();
  for (const auto& f : m.scripted) {
    nlohmann::json e = {{"kind", to_string(f.spec.kind)},
                        {"target", f.spec.target()},
                        {"cause", f.spec.cause},
                        {"from_days", f.spec.from_s / kSecondsPerDay},
                        {"until_days", finite(f.spec.until_s / kSecondsPerDay)},
                        {"crashes", f.crashes},
                        {"step_model", f.step.model}};
    if (f.crashes) {
      e["detection_s"] = f.detection_s;
      e["hang_on"] = f.step.hang_on;
    } else {
      e["step_time_s"] = f.step.step_time_s;
      e["slowdown"] = f.slowdown;
      e["mfu"] = f.step.mfu;
      e["slowest"] = f.step.slowest;
    }
    if (!f.step.note.empty()) e["note"] = f.step.note;
    scripted.push_back(e);
  }
  return scripted;
}

nlohmann::json stragglers_json(const CampaignModel& m) {
  nlohmann::json stragglers = nlohmann::json::array();
  for (const auto& st : m.stragglers) {
    stragglers.push_back({{"name", st.spec.name},
                          {"target", st.spec.link ? "link" : "gpu"},
                          {"per_day", st.rate_per_s * kSecondsPerDay},
                          {"factor", st.spec.factor},
                          {"slowdown", st.slowdown},
                          {"slowest", st.step.slowest},
                          {"duration_median_h", st.spec.duration_median_s / kSecondsPerHour}});
  }
  return {{"classes", stragglers},
          {"policy", m.policy.replace ? "replace" : "wait"},
          {"detect_after_s", m.policy.detect_after_s},
          {"threshold", m.policy.threshold}};
}

// Loss spikes and the slow drift of the step time, with their mitigations.
void add_loss_spikes_and_drift(nlohmann::json& j, const CampaignModel& m,
                               const CampaignSummary& s) {
  const auto& ls = m.spikes;
  j["loss_spikes"] = {
      {"per_Ttokens_before_filter", (ls.outlier_rate_per_token + ls.other_rate_per_token) * 1e12},
      {"per_Ttokens", ls.effective_rate_per_token() * 1e12},
      {"filter_enabled", ls.filter.enabled},
      {"filter_removes_outliers", ls.filter_removes_outliers()},
      {"filter_max_tokens", ls.filter.max_tokens},
      {"filter_min_loss_mask_tokens", ls.filter.min_loss_mask_tokens},
      {"filter_data_cost_tokens",
       ls.filter.enabled ? ls.filter.data_fraction_removed * m.tokens_total : 0.0},
      {"skipped_tokens_per_run", s.skipped_tokens},
      {"response_s", ls.response_s},
      {"rollback_s", m.rollback_s}};
  j["drift"] = {{"growth_per_day", m.drift.growth_per_day},
                {"effective_growth_per_day", m.drift_growth_per_s * kSecondsPerDay},
                {"resets_on_restart", m.drift_resets_on_restart},
                {"mitigation_step_factor", m.mitigation_factor},
                {"empty_cache_every_steps", m.drift.mitigations.empty_cache_every_steps},
                {"limit_loader_workers", m.drift.mitigations.limit_loader_workers}};
}

nlohmann::json monitoring_json(const Monitoring& monitoring, int traced_trial) {
  nlohmann::json alerts = nlohmann::json::array();
  for (const auto& a : monitoring.alerts) {
    alerts.push_back({{"time_s", a.t_s},
                      {"day", a.t_s / kSecondsPerDay},
                      {"metric", a.metric},
                      {"level", a.level},
                      {"value", finite(a.value)},
                      {"threshold", finite(a.threshold)},
                      {"message", a.message}});
  }
  return {{"trial", traced_trial}, {"rows", monitoring.rows.size()}, {"alerts", alerts}};
}

}  // namespace

nlohmann::json summary_json(const std::string& scenario_name, const CampaignModel& m,
                            const CampaignSummary& s, const Monitoring* monitoring,
                            int traced_trial) {
  nlohmann::json j;
  j["scenario"] = scenario_name;
  j["trials"] = s.trials;
  j["seed"] = s.seed;
  add_results(j, m, s);
  j["checkpointing"] = checkpointing_json(m, s);
  add_failure_model(j, m);
  j["scripted_faults"] = scripted_faults_json(m);
  j["stragglers"] = stragglers_json(m);
  add_loss_spikes_and_drift(j, m, s);
  j["notes"] = m.notes;
  if (monitoring) j["monitoring"] = monitoring_json(*monitoring, traced_trial);
  return j;
}

std::string summary_text(const std::string& scenario_name, const CampaignModel& m,
                         const CampaignSummary& s) {
  std::ostringstream os;
  os << "campaign: " << scenario_name << " — " << s.trials << " trials, seed " << s.seed << "\n";
  os << "  step " << fmt(m.baseline.step_time_s, 3) << " s (" << m.baseline.model << "), MFU "
     << fmt(100 * m.baseline.mfu, 1) << "%, " << fmt(m.tokens_per_s() / 1e6, 3)
     << " M tokens/s; fault-free run " << fmt(m.productive_s / kSecondsPerDay, 2) << " days\n";
  os << "  failures " << fmt(m.failure_rate_per_s * kSecondsPerDay, 3) << "/day (MTBF "
     << fmt(1.0 / m.failure_rate_per_s / kSecondsPerHour, 1) << " h); checkpoint "
     << to_string(m.checkpoint.policy) << " every " << fmt(m.interval_s / 60, 1) << " min, stall "
     << fmt(m.stall_s, 1) << " s, restart " << fmt(m.restart_s, 0) << " s\n";
  os << "  days      mean " << fmt(s.days.mean, 2) << "  p10 " << fmt(s.days.p10, 2) << "  p50 "
     << fmt(s.days.p50, 2) << "  p90 " << fmt(s.days.p90, 2) << "\n";
  os << "  failures  mean " << fmt(s.interruptions.mean, 2) << "  p10 "
     << fmt(s.interruptions.p10, 0) << "  p90 " << fmt(s.interruptions.p90, 0) << "\n";
  os << "  goodput   " << fmt(100 * s.goodput.mean, 2) << "%\n";
  os << "  cost      $" << fmt(s.cost_usd.mean / 1e6, 3) << "M at $" << fmt(m.usd_per_gpu_hour, 2)
     << "/GPU-h (" << m.price_source << ")\n";
  os << "  by cause (interruptions per run, GPU-hours lost per run):\n";
  for (const auto& [cause, h] : s.gpu_hours_lost_by_cause) {
    const auto it = s.interruptions_by_cause.find(cause);
    os << "    " << cause;
    for (std::size_t pad = cause.size(); pad < 40; ++pad) os << ' ';
    os << ' ';
    os << fmt(it == s.interruptions_by_cause.end() ? 0.0 : it->second, 2) << "  " << fmt(h, 0)
       << "\n";
  }
  if (s.unfinished_fraction > 0) {
    os << "  " << fmt(100 * s.unfinished_fraction, 1) << "% of trials did not finish in max_days\n";
  }
  for (const auto& n : m.notes) os << "  note: " << n << "\n";
  return os.str();
}

}  // namespace clustersim::campaign
