#include "input/run_sections.hpp"

#include <string>

#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/limits.hpp"
#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

// The fixed interval: interval_min with "interval": "fixed", refused otherwise.
void parse_interval(const JsonNode& n, CheckpointConfig& c) {
  c.policy = choice_at(n, checkpointing_keys(), "interval", kIntervalPolicyNames);
  if (c.policy == IntervalPolicy::fixed) {
    c.fixed_interval_s = number_at(n, checkpointing_keys(), "interval_min") * kSecondsPerMinute;
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
    c.size_bytes = number_at(n, checkpointing_keys(), "size_GB") * kGB;
  } else {
    c.bytes_per_parameter =
        number_or(n, checkpointing_keys(), "bytes_per_parameter", kCheckpointBytesPerParameter);
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
    seconds = number_at(n, checkpointing_keys(), seconds_key);
  } else if (n.has(rate_key)) {
    rate_Bps = number_at(n, checkpointing_keys(), rate_key) * kGB;
  } else if (c.policy != IntervalPolicy::none) {
    n.fail_at(rate_key, std::string("missing \"") + rate_key + "\" (or \"" + seconds_key +
                            "\"): the storage bandwidth sets the checkpoint's cost");
  }
}

void parse_async_stall(const JsonNode& n, CheckpointConfig& c) {
  if (c.mode == SaveMode::async) {
    const auto stall = n.at("async_stall_s");
    c.async_stall_s = read_number(stall, checkpointing_keys().key("async_stall_s"));
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
  const ObjectSpec& keys = restart_keys();
  only_table_keys(r, keys);
  c.reschedule_s = number_or(r, keys, "reschedule_s", c.reschedule_s);
  c.init_s = number_or(r, keys, "init_s", c.init_s);
}

// campaign.step_time_s with its mfu: both or neither.
void parse_given_step(const JsonNode& n, CampaignSettings& c) {
  if (n.has("step_time_s")) {
    c.step_time_s = number_at(n, campaign_keys(), "step_time_s");
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
      read_number(*node, campaign_keys().key("monitor_interval_min")) * kSecondsPerMinute;
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
  only_table_keys(n, checkpointing_keys());
  CheckpointConfig c;
  c.where = {n.file(), n.pointer()};
  parse_interval(n, c);
  c.mode = choice_or(n, checkpointing_keys(), "mode", kSaveModeNames, SaveMode::blocking);
  parse_size(n, c);
  parse_duration(n, c, "save_s", "write_GBps", c.save_s, c.write_Bps);
  parse_duration(n, c, "load_s", "read_GBps", c.load_s, c.read_Bps);
  parse_async_stall(n, c);
  check_checkpoint_costs_time(n, c);
  if (const auto r = n.find("restart")) parse_restart(*r, c);
  return c;
}

CostConfig parse_cost(const JsonNode& n) {
  only_table_keys(n, cost_keys());
  CostConfig c;
  c.usd_per_gpu_hour = number_at(n, cost_keys(), "usd_per_gpu_hour");
  c.source = n.string_at("source");
  return c;
}

CampaignSettings parse_campaign_settings(const JsonNode& n) {
  const ObjectSpec& keys = campaign_keys();
  only_table_keys(n, keys);
  CampaignSettings c;
  c.trials = static_cast<int>(int_or(n, keys, "trials", c.trials));
  c.seed = static_cast<std::uint64_t>(int_or(n, keys, "seed", 1));
  parse_given_step(n, c);
  c.exposed_comm_share = number_or(n, keys, "exposed_comm_share", 0);
  c.max_days = number_or(n, keys, "max_days", c.max_days);
  parse_monitor_interval(n, c);
  c.trace_trial = static_cast<int>(n.int_or("trace_trial", 0, 0, c.trials - 1));
  return c;
}

}  // namespace clustersim::input
