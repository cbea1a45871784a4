#include "input/run_sections.hpp"

#include <string>

#include "core/units.hpp"
#include "input/limits.hpp"
#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

// The fixed interval: interval_min with "interval": "fixed", refused otherwise.
void parse_interval(const JsonNode& n, CheckpointConfig& c) {
  c.policy = enum_at(n, "interval", kIntervalPolicyNames);
  if (c.policy == IntervalPolicy::fixed) {
    c.fixed_interval_s = number_in_at(n, "interval_min", kMinInterval_s / kSecondsPerMinute,
                                      kMaxRun_s / kSecondsPerMinute, "min") *
                         kSecondsPerMinute;
  } else if (n.has("interval_min")) {
    n.fail_at("interval_min", "interval_min is read only with \"interval\": \"fixed\"");
  }
}

void parse_size(const JsonNode& n, CheckpointConfig& c) {
  if (n.has("size_GB") && n.has("bytes_per_parameter")) {
    n.fail_at("bytes_per_parameter", "give size_GB or bytes_per_parameter, not both");
  }
  if (n.has("size_GB")) {
    c.size_given = true;
    c.size_bytes = number_in_at(n, "size_GB", kMinCheckpoint_GB, kMaxCheckpoint_GB, "GB") * kGB;
  } else {
    c.bytes_per_parameter = number_in_or(n, "bytes_per_parameter", kCheckpointBytesPerParameter,
                                         kMinBytesPerParameter, kMaxBytesPerParameter);
  }
}

// A save or load time: given in seconds, or the storage rate that sets it (size / rate, resolved
// once the model's size is known). Neither is allowed only without checkpoints.
void parse_duration(const JsonNode& n, const CheckpointConfig& c, const char* seconds_key,
                    const char* rate_key, double& seconds, double& rate_Bps) {
  if (n.has(seconds_key) && n.has(rate_key)) {
    n.fail_at(rate_key, std::string("give ") + seconds_key + " or " + rate_key + ", not both");
  }
  if (n.has(seconds_key)) {
    seconds = number_in_at(n, seconds_key, 0, kMaxDelay_s, "s");
  } else if (n.has(rate_key)) {
    rate_Bps = number_in_at(n, rate_key, kMinStorage_GBps, kMaxStorage_GBps, "GB/s") * kGB;
  } else if (c.policy != IntervalPolicy::none) {
    n.fail_at(rate_key, std::string("missing \"") + rate_key + "\" (or \"" + seconds_key +
                            "\"): the storage bandwidth sets the checkpoint's cost");
  }
}

void parse_async_stall(const JsonNode& n, CheckpointConfig& c) {
  if (c.mode == SaveMode::async) {
    const auto stall = n.at("async_stall_s");
    c.async_stall_s = number_in(stall, 0, kMaxDelay_s, "s");
    c.stall_where = {stall.file(), stall.pointer()};
    // With a given save time the stall is checked now; with a rate, once the size is known.
    if (c.write_Bps == 0) c.check_async_stall();
  } else if (n.has("async_stall_s")) {
    n.fail_at("async_stall_s", "async_stall_s is read only with \"mode\": \"async\"");
  }
}

void check_checkpoint_costs_time(const JsonNode& n, const CheckpointConfig& c) {
  if (c.policy != IntervalPolicy::young && c.policy != IntervalPolicy::daly) return;
  // A save time derived from a rate is positive; a given one may be 0.
  const bool stall_given = c.mode == SaveMode::async || c.write_Bps == 0;
  const double stall = c.mode == SaveMode::blocking ? c.save_s : c.async_stall_s;
  if (stall_given && stall <= 0) {
    n.fail_at("interval",
              "the Young/Daly interval needs a checkpoint that costs time; the stall is 0 s");
  }
}

void parse_restart(const JsonNode& r, CheckpointConfig& c) {
  r.only_keys({"reschedule_s", "init_s"});
  c.reschedule_s = number_in_or(r, "reschedule_s", c.reschedule_s, 0, kMaxDelay_s, "s");
  c.init_s = number_in_or(r, "init_s", c.init_s, 0, kMaxDelay_s, "s");
}

// campaign.step_time_s with its mfu: both or neither.
void parse_given_step(const JsonNode& n, CampaignSettings& c) {
  if (n.has("step_time_s")) {
    c.step_time_s = number_in_at(n, "step_time_s", kMinStepTime_s, kMaxStepTime_s, "s");
  }
  if (const auto m = n.find("mfu")) {
    const double v = m->as_number();
    if (!(v > 0) || v > 1) m->fail(m->describe() + " must lie in (0, 1]");
    c.mfu = v;
  }
  if (n.has("mfu") && !c.step_time_s) n.fail_at("mfu", "mfu is read only with step_time_s");
  if (c.step_time_s && !c.mfu) n.fail_at("mfu", "missing required key \"mfu\" (with step_time_s)");
}

// Monitoring rows of one trial: one per interval over max_days.
void parse_monitor_interval(const JsonNode& n, CampaignSettings& c) {
  const auto node = n.find("monitor_interval_min");
  if (!node) return;
  c.monitor_interval_s =
      number_in(*node, kMinInterval_s / kSecondsPerMinute, kMaxRun_s / kSecondsPerMinute, "min") *
      kSecondsPerMinute;
  const double rows = c.max_days * kSecondsPerDay / c.monitor_interval_s;
  if (rows > kMaxRowsPerTrial) {
    node->fail("one monitoring row every " + number_text(c.monitor_interval_s) + " s over " +
               number_text(c.max_days) + " days (campaign.max_days) is " + number_text(rows) +
               " rows, above the limit of " + number_text(kMaxRowsPerTrial) +
               "; lengthen the interval or shorten max_days");
  }
}

}  // namespace

CheckpointConfig parse_checkpointing(const JsonNode& n) {
  n.only_keys({"interval", "interval_min", "mode", "size_GB", "bytes_per_parameter", "write_GBps",
               "read_GBps", "save_s", "load_s", "async_stall_s", "restart"});
  CheckpointConfig c;
  c.where = {n.file(), n.pointer()};
  parse_interval(n, c);
  c.mode = enum_or(n, "mode", kSaveModeNames, SaveMode::blocking);
  parse_size(n, c);
  parse_duration(n, c, "save_s", "write_GBps", c.save_s, c.write_Bps);
  parse_duration(n, c, "load_s", "read_GBps", c.load_s, c.read_Bps);
  parse_async_stall(n, c);
  check_checkpoint_costs_time(n, c);
  if (const auto r = n.find("restart")) parse_restart(*r, c);
  return c;
}

CostConfig parse_cost(const JsonNode& n) {
  n.only_keys({"usd_per_gpu_hour", "source"});
  CostConfig c;
  c.usd_per_gpu_hour = number_in_at(n, "usd_per_gpu_hour", 0, kMaxUsdPerGpuHour, "USD");
  c.source = n.string_at("source");
  return c;
}

CampaignSettings parse_campaign_settings(const JsonNode& n) {
  n.only_keys({"trials", "seed", "step_time_s", "mfu", "exposed_comm_share", "max_days",
               "monitor_interval_min", "trace_trial"});
  CampaignSettings c;
  c.trials = static_cast<int>(n.int_or("trials", c.trials, 1, 10'000'000));
  c.seed = static_cast<std::uint64_t>(n.int_or("seed", 1, 0, (std::int64_t{1} << 53)));
  parse_given_step(n, c);
  c.exposed_comm_share = n.fraction_or("exposed_comm_share", 0);
  c.max_days = positive_up_to_or(n, "max_days", c.max_days, kMaxRunDays, "days");
  parse_monitor_interval(n, c);
  c.trace_trial = static_cast<int>(n.int_or("trace_trial", 0, 0, c.trials - 1));
  return c;
}

}  // namespace clustersim::input
