// The key tables of a scenario's run sections: "faults", "checkpointing", "cost", "campaign"
// (input/faults_section.hpp, input/run_sections.hpp). Bounds are those of input/limits.hpp.
#include "core/failure_rates.hpp"
#include "core/run_sections.hpp"
#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/limits.hpp"

namespace clustersim::input {

namespace {

using namespace keys;

constexpr std::int64_t kMaxTrials = 10'000'000;

// A time after the start of the run under `base`, in seconds, hours or days (one of them).
std::vector<KeySpec> time_keys(const std::string& base, const std::string& what) {
  const std::pair<const char*, double> units[] = {
      {"_s", 1.0}, {"_h", kSecondsPerHour}, {"_days", kSecondsPerDay}};
  std::vector<KeySpec> out;
  for (const auto& [suffix, scale] : units) {
    out.push_back(
        custom_number(base + suffix, 0, kMaxRun_s / scale, false, false,
                      what + " (give one of " + base + "_s, " + base + "_h, " + base + "_days)"));
  }
  return out;
}

ObjectSpec make_faults() {
  return {"faults",
          "Scripted faults, failure rates, stragglers, loss spikes and drift (campaign/README.md)",
          {array("events",
                 object("",
                        {"event_node_lost", "event_gpu_slowdown", "event_link_down",
                         "event_link_degraded"},
                        "a scripted fault"),
                 "scripted faults"),
           positive_up_to("watchdog_timeout_s", kMaxDelay_s, "s", "NCCL watchdog timeout"),
           closed_unit("crash_detection_s", 0, kMaxDelay_s, "s", "time to detect a crash"),
           object("failure_rates", {"failure_rates"}, "random failures"),
           object("stragglers", {"stragglers"}, "random slow GPUs or links"),
           object("loss_spikes", {"loss_spikes"}, "loss spikes and their response"),
           object("drift", {"drift"}, "slow growth of the step time with process age")}};
}

ObjectSpec make_event(FaultKind kind) {
  const std::string name = kFaultKindNames.name(kind);
  ObjectSpec s{"event_" + name, "A scripted fault of kind " + name, {}};
  s.keys = {required(choice("kind", {name}, "the fault's kind")),
            text("cause", "the cause reported; default: the kind")};
  const auto add = [&s](std::vector<KeySpec> more) {
    for (auto& k : more) s.keys.push_back(std::move(k));
  };
  if (kind == FaultKind::node_lost) {
    s.keys.push_back(required(integer("node", 0, 1 << 20, "a node of the job, from 0")));
    add(time_keys("at", "when the node is lost"));
    return s;
  }
  add(time_keys("from", "when the fault starts"));
  add(time_keys("until", "when it ends; default: never"));
  if (kind == FaultKind::gpu_slowdown) {
    s.keys.push_back(required(integer("rank", 0, 1 << 24, "a rank of the job, from 0")));
    s.keys.push_back(
        required(custom_number("speed_factor", 0, 1, true, false, "the fraction of speed kept")));
    return s;
  }
  s.keys.push_back(required(text("link", "a link as the cluster graph names it")));
  if (kind == FaultKind::link_degraded) {
    s.keys.push_back(required(
        custom_number("bandwidth_factor", 0, 1, true, true, "the fraction of bandwidth kept")));
  }
  return s;
}

ObjectSpec make_failure_rates() {
  return {"failure_rates",
          "Random failures: a published model of causes, scaled, with overrides",
          {choice("model", failure_model_names(), "the published causes; default llama3"),
           closed_unit("scale", 0, kMaxRateScale, "", "factor on every rate; default 1"),
           map("causes", {}, object("", {"cause"}, "a cause"),
               "causes by name: override a published one or add one")}};
}

ObjectSpec make_cause() {
  const auto rate = [](const char* key, const char* per) {
    return closed_unit(key, 0, kMaxRatePerUnitHour, "per hour",
                       std::string("failures per ") + per + "-hour (one rate per cause)");
  };
  return {"cause",
          "One failure cause",
          {rate("per_gpu_hour", "GPU"), rate("per_node_hour", "node"), rate("per_nic_hour", "NIC"),
           rate("per_job_hour", "job"),
           choice("detection", kDetectionNames.names(), "how the failure is detected"),
           text("source", "where the rate comes from")}};
}

ObjectSpec make_stragglers() {
  return {"stragglers",
          "Random stragglers and the policy against them",
          {array("classes", object("", {"straggler_gpu", "straggler_link"}, "a straggler class"),
                 "straggler classes"),
           choice("policy", {"wait", "replace"}, "default wait"),
           closed_unit("detect_after_s", 0, kMaxDelay_s, "s", "detection time; default 600 s"),
           custom_number("threshold", 1, kMaxStragglerThreshold, true, false,
                         "step-time ratio that counts as a straggler")}};
}

ObjectSpec make_straggler_class(bool link) {
  KeySpec factor =
      custom_number(link ? "bandwidth_factor" : "speed_factor", 0, 1, true, true,
                    link ? "the fraction of bandwidth kept" : "the fraction of speed kept");
  return {link ? "straggler_link" : "straggler_gpu",
          link ? "Stragglers on links" : "Stragglers on GPUs",
          {required(text("name", "the class's name")),
           required(choice("target", {link ? "link" : "gpu"}, "what slows down")),
           required(closed_unit("rate_per_gpu_hour", 0, kMaxRatePerUnitHour, "per GPU-hour",
                                "stragglers per GPU-hour")),
           required(factor),
           required(positive_up_to("duration_median_s", kMaxDelay_s, "s", "median duration")),
           closed_unit("duration_sigma", 0, kMaxDurationSigma, "",
                       "sigma of the lognormal duration; default 0")}};
}

ObjectSpec make_loss_spikes() {
  const auto rate = [](const char* key, const char* what) {
    return closed_unit(key, 0, kMaxSpikesPerTtokens, "per trillion tokens", what);
  };
  return {"loss_spikes",
          "Loss spikes and the response to them",
          {rate("outlier_rate_per_Ttokens", "spikes from outlier samples per trillion tokens"),
           integer("outlier_min_tokens", 1, 1 << 30, "tokens of an outlier sample"),
           rate("other_rate_per_Ttokens", "other spikes per trillion tokens"),
           closed_unit("response_s", 0, kMaxDelay_s, "s", "time to respond; default 300 s"),
           integer("skip_batches", 0, 1 << 30, "batches skipped after a spike"),
           object("sample_filter", {"sample_filter"}, "a filter of outlier samples")}};
}

ObjectSpec make_sample_filter() {
  return {"sample_filter",
          "A filter of outlier samples",
          {flag("enabled", "default true"),
           required(integer("max_tokens", 1, 1 << 30, "longest sample kept")),
           integer("min_loss_mask_tokens", 0, 1 << 30, "fewest loss tokens kept"),
           required(fraction("data_fraction_removed", "data the filter removes"))}};
}

ObjectSpec make_drift() {
  return {"drift",
          "Slow growth of the step time with process age",
          {positive_up_to("from_step_time_s", kMaxStepTime_s, "s", "step time at the start"),
           positive_up_to("to_step_time_s", kMaxStepTime_s, "s", "step time after over_days"),
           positive_up_to("over_days", kMaxRunDays, "days", "the span of the growth"),
           closed_unit("growth_per_day", 0, kMaxDriftGrowthPerDay, "per day",
                       "relative growth per day (instead of from/to/over_days)"),
           fraction("fragmentation_share", "share due to memory fragmentation; default 0.5"),
           flag("resets_on_restart", "a restart resets the drift; default true"),
           object("mitigations", {"mitigations"}, "what is done against the drift")}};
}

ObjectSpec make_mitigations() {
  return {"mitigations",
          "What is done against the drift",
          {integer("empty_cache_every_steps", 0, 1 << 30, "empty the allocator cache every N"),
           closed_unit("empty_cache_cost_s", 0, kSecondsPerHour, "s", "cost of one emptying"),
           flag("limit_loader_workers", "limit the data loader's workers; default false"),
           closed_unit("loader_slowdown", 0, kMaxMitigationSlowdown, "",
                       "relative step-time cost of limiting the loader")}};
}

ObjectSpec make_checkpointing() {
  const double min_interval_min = kMinInterval_s / kSecondsPerMinute;
  const double max_interval_min = kMaxRun_s / kSecondsPerMinute;
  return {"checkpointing",
          "Checkpoints of the whole run",
          {required(choice("interval", kIntervalPolicyNames.names(), "the interval policy")),
           closed_unit("interval_min", min_interval_min, max_interval_min, "min",
                       "with \"fixed\": minutes between checkpoints"),
           choice("mode", kSaveModeNames.names(), "default blocking"),
           closed_unit("size_GB", kMinCheckpoint_GB, kMaxCheckpoint_GB, "GB",
                       "checkpoint size (or bytes_per_parameter)"),
           closed_unit("bytes_per_parameter", kMinBytesPerParameter, kMaxBytesPerParameter, "",
                       "checkpoint bytes per parameter"),
           closed_unit("write_GBps", kMinStorage_GBps, kMaxStorage_GBps, "GB/s",
                       "storage write rate (or save_s)"),
           closed_unit("read_GBps", kMinStorage_GBps, kMaxStorage_GBps, "GB/s",
                       "storage read rate (or load_s)"),
           closed_unit("save_s", 0, kMaxDelay_s, "s", "time to save"),
           closed_unit("load_s", 0, kMaxDelay_s, "s", "time to load"),
           closed_unit("async_stall_s", 0, kMaxDelay_s, "s", "with \"async\": the stall per save"),
           object("restart", {"restart"}, "time to restart after a failure")}};
}

ObjectSpec make_restart() {
  return {"restart",
          "Time to restart after a failure",
          {closed_unit("reschedule_s", 0, kMaxDelay_s, "s", "time to reschedule the job"),
           closed_unit("init_s", 0, kMaxDelay_s, "s", "time to initialise it")}};
}

ObjectSpec make_cost() {
  return {"cost",
          "The price of a GPU-hour",
          {required(closed_unit("usd_per_gpu_hour", 0, kMaxUsdPerGpuHour, "USD", "USD")),
           required(text("source", "where the price comes from"))}};
}

ObjectSpec make_campaign() {
  return {"campaign",
          "Monte Carlo settings of the whole run",
          {integer("trials", 1, kMaxTrials, "trials"),
           integer("seed", 0, std::int64_t{1} << 53, "random seed; default 1"),
           closed_unit("step_time_s", kMinStepTime_s, kMaxStepTime_s, "s",
                       "a given step time instead of a simulated one (with mfu)"),
           custom_number("mfu", 0, 1, true, false, "the MFU of the given step time"),
           fraction("exposed_comm_share", "share of the given step that is exposed communication"),
           positive_up_to("max_days", kMaxRunDays, "days", "the longest run simulated"),
           closed_unit("monitor_interval_min", kMinInterval_s / kSecondsPerMinute,
                       kMaxRun_s / kSecondsPerMinute, "min", "minutes between monitoring rows"),
           integer("trace_trial", 0, kMaxTrials - 1, "the trial traced; below trials")}};
}

}  // namespace

const ObjectSpec& faults_keys() {
  return built_once<make_faults>();
}

const ObjectSpec& event_keys(FaultKind kind) {
  static const ObjectSpec node_lost = make_event(FaultKind::node_lost);
  static const ObjectSpec gpu_slowdown = make_event(FaultKind::gpu_slowdown);
  static const ObjectSpec link_down = make_event(FaultKind::link_down);
  static const ObjectSpec link_degraded = make_event(FaultKind::link_degraded);
  switch (kind) {
    case FaultKind::node_lost: return node_lost;
    case FaultKind::gpu_slowdown: return gpu_slowdown;
    case FaultKind::link_down: return link_down;
    case FaultKind::link_degraded: break;
  }
  return link_degraded;
}

const ObjectSpec& failure_rates_keys() {
  return built_once<make_failure_rates>();
}
const ObjectSpec& cause_keys() {
  return built_once<make_cause>();
}
const ObjectSpec& stragglers_keys() {
  return built_once<make_stragglers>();
}
const ObjectSpec& straggler_class_keys(bool link) {
  static const ObjectSpec gpu = make_straggler_class(false);
  static const ObjectSpec on_link = make_straggler_class(true);
  return link ? on_link : gpu;
}
const ObjectSpec& loss_spikes_keys() {
  return built_once<make_loss_spikes>();
}
const ObjectSpec& sample_filter_keys() {
  return built_once<make_sample_filter>();
}
const ObjectSpec& drift_keys() {
  return built_once<make_drift>();
}
const ObjectSpec& mitigations_keys() {
  return built_once<make_mitigations>();
}
const ObjectSpec& checkpointing_keys() {
  return built_once<make_checkpointing>();
}
const ObjectSpec& restart_keys() {
  return built_once<make_restart>();
}
const ObjectSpec& cost_keys() {
  return built_once<make_cost>();
}
const ObjectSpec& campaign_keys() {
  return built_once<make_campaign>();
}

}  // namespace clustersim::input
