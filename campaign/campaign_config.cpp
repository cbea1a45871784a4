#include "campaign/campaign_config.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/json_reader.hpp"

namespace clustersim::campaign {

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kSecondsPerDay = 86400;
constexpr double kBytesPerGB = 1e9;
constexpr double kTokensPerTeratoken = 1e12;
// Defaults for restarts. Meta RSC's ETTR model assumes 5-minute restart overheads
// [S, docs/faults.md#failure-statistics]; MegaScale brought initialisation under 30 s at >10k GPUs
// [S, docs/faults.md#checkpoint-and-restart].
constexpr double kDefaultReschedule_s = 300;
constexpr double kDefaultInit_s = 30;
// DeepSeek-V3 Technical Report (arXiv 2412.19437), Table 1: "assuming the rental price of the
// H800 GPU is $2 per GPU hour".
constexpr double kDefaultUsdPerGpuHour = 2.0;
const char* kDefaultPriceSource =
    "DeepSeek-V3 Technical Report (arXiv 2412.19437) Table 1: H800 rental at $2 per GPU hour";

std::string number(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

int job_nodes(const Scenario& s) {
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  return (s.gpus + gpn - 1) / gpn;
}

// A time given with one of the unit suffixes _s, _h, _days under `base` ("from", "until",
// "at"); nullopt when none is given.
std::optional<std::pair<double, JsonNode>> time_of(const JsonNode& n, const std::string& base) {
  std::optional<std::pair<double, JsonNode>> out;
  std::string first_key;
  const std::pair<const char*, double> units[] = {
      {"_s", 1.0}, {"_h", kSecondsPerHour}, {"_days", kSecondsPerDay}};
  for (const auto& [suffix, scale] : units) {
    const std::string key = base + suffix;
    if (const auto v = n.find(key)) {
      if (out) {
        n.fail_at(key,
                  "\"" + first_key + "\" and \"" + key + "\" both give this time; give it once");
      }
      first_key = key;
      const double value = v->as_number();
      if (value < 0) v->fail(v->describe() + " is negative; times count from the start of the run");
      out.emplace(value * scale, *v);
    }
  }
  return out;
}

std::vector<std::string> time_keys(const std::string& base) {
  return {base + "_s", base + "_h", base + "_days"};
}

std::string days_text(double s) {
  return number(s / kSecondsPerDay) + " days";
}

void check_before_end(const JsonNode& where, double t_s, const FaultContext& ctx) {
  if (t_s >= ctx.run_end_s) {
    where.fail(days_text(t_s) + " is past the end of the run (it takes " +
               days_text(ctx.run_end_s) + " without faults)");
  }
}

std::string check_link(const JsonNode& node, const FaultContext& ctx) {
  const std::string name = node.as_string();
  if (ctx.link_names.empty()) return name;
  if (std::find(ctx.link_names.begin(), ctx.link_names.end(), name) != ctx.link_names.end()) {
    return name;
  }
  std::string message = "unknown link \"" + name + "\"";
  const std::string suggestion = nearest_name(name, ctx.link_names);
  if (!suggestion.empty()) {
    message += "; did you mean \"" + suggestion + "\"?";
  } else {
    message += "; links are named as the cluster graph names them, e.g. \"" +
               ctx.link_names.front() + "\" (`clustersim topo --dot` lists them)";
  }
  node.fail(message);
}

ScriptedFault parse_event(const JsonNode& n, const Scenario& s, const FaultContext& ctx) {
  n.require_object();
  ScriptedFault f;
  f.where = SourceRef::of(n);
  const std::string kind =
      n.enum_at("kind", {"gpu_slowdown", "link_degraded", "link_down", "node_lost"});
  std::vector<std::string> keys = {"kind", "cause"};
  const auto add_keys = [&](std::vector<std::string> more) {
    keys.insert(keys.end(), more.begin(), more.end());
  };
  f.cause = n.string_or("cause", "");
  if (kind == "node_lost") {
    f.kind = FaultKind::node_lost;
    add_keys({"node"});
    add_keys(time_keys("at"));
    n.only_keys(keys);
    const auto node = n.at("node");
    const int nodes = job_nodes(s);
    const auto v = node.as_int();
    if (v < 0 || v >= nodes) {
      node.fail(std::to_string(v) + " is not a node of this job (nodes 0.." +
                std::to_string(nodes - 1) + ")");
    }
    f.node = static_cast<int>(v);
    const auto at = time_of(n, "at");
    if (!at) n.fail("missing the time of the loss: one of \"at_s\", \"at_h\", \"at_days\"");
    check_before_end(at->second, at->first, ctx);
    f.from_s = at->first;
    if (f.cause.empty()) f.cause = "node lost";
    return f;
  }
  add_keys(time_keys("from"));
  add_keys(time_keys("until"));
  if (kind == "gpu_slowdown") {
    f.kind = FaultKind::gpu_slowdown;
    add_keys({"rank", "speed_factor"});
    n.only_keys(keys);
    const auto rank = n.at("rank");
    const auto r = rank.as_int();
    if (r < 0 || r >= s.gpus) {
      rank.fail(std::to_string(r) + " is not a rank of this " + std::to_string(s.gpus) +
                "-GPU job (ranks 0.." + std::to_string(s.gpus - 1) + ")");
    }
    f.rank = static_cast<int>(r);
    const auto factor = n.at("speed_factor");
    f.factor = factor.as_number();
    if (f.factor > 1) {
      factor.fail(factor.describe() +
                  " is above 1; a slowdown keeps a fraction of the GPU's speed, in (0, 1]");
    }
    if (!(f.factor > 0)) {
      factor.fail(factor.describe() +
                  " must be greater than 0; a GPU that stops is a \"node_lost\" event");
    }
    if (f.cause.empty()) f.cause = "GPU slowdown";
  } else {
    f.kind = kind == "link_down" ? FaultKind::link_down : FaultKind::link_degraded;
    add_keys({"link"});
    if (f.kind == FaultKind::link_degraded) add_keys({"bandwidth_factor"});
    n.only_keys(keys);
    f.link = check_link(n.at("link"), ctx);
    if (f.kind == FaultKind::link_degraded) {
      const auto factor = n.at("bandwidth_factor");
      f.factor = factor.as_number();
      if (f.factor >= 1) {
        factor.fail(factor.describe() +
                    " is not a degradation; the remaining bandwidth fraction must be below 1");
      }
      if (!(f.factor > 0)) {
        factor.fail(factor.describe() +
                    " must be greater than 0; a link without bandwidth is a \"link_down\" event");
      }
      if (f.cause.empty()) f.cause = "link degraded";
    } else {
      f.factor = 0;
      if (f.cause.empty()) f.cause = "link down";
    }
  }
  const auto from = time_of(n, "from");
  if (!from) n.fail("missing the start time: one of \"from_s\", \"from_h\", \"from_days\"");
  check_before_end(from->second, from->first, ctx);
  f.from_s = from->first;
  if (const auto until = time_of(n, "until")) {
    if (until->first <= f.from_s) {
      until->second.fail(days_text(until->first) + " is not after the start (" +
                         days_text(f.from_s) + ")");
    }
    f.until_s = until->first;
  }
  return f;
}

std::vector<ScriptedFault> parse_events(const JsonNode& faults, const Scenario& s,
                                        const FaultContext& ctx) {
  std::vector<ScriptedFault> out;
  if (const auto events = faults.find("events")) {
    for (const auto& item : events->items()) out.push_back(parse_event(item, s, ctx));
  }
  return out;
}

void parse_failure_rates(const JsonNode& n, FaultsConfig& f) {
  n.only_keys({"model", "scale", "causes"});
  f.rate_model = n.enum_or("model", failure_model_names(), "llama3");
  f.rate_scale = n.non_negative_or("scale", 1.0);
  f.causes = default_failure_causes(f.rate_model);
  if (const auto causes = n.find("causes")) {
    for (const auto& [name, c] : causes->members()) {
      c.only_keys(
          {"per_gpu_hour", "per_node_hour", "per_nic_hour", "per_job_hour", "detection", "source"});
      const std::pair<const char*, FailureUnit> units[] = {{"per_gpu_hour", FailureUnit::gpu},
                                                           {"per_node_hour", FailureUnit::node},
                                                           {"per_nic_hour", FailureUnit::nic},
                                                           {"per_job_hour", FailureUnit::job}};
      auto existing = std::find_if(f.causes.begin(), f.causes.end(),
                                   [&](const FailureCause& x) { return x.name == name; });
      FailureCause cause = existing != f.causes.end() ? *existing : FailureCause{};
      cause.name = name;
      bool rate_given = false;
      for (const auto& [key, unit] : units) {
        const auto v = c.find(key);
        if (!v) continue;
        if (rate_given) c.fail_at(key, "give one rate per cause; another per_..._hour key is set");
        const double rate = v->as_number();
        if (rate < 0) v->fail(v->describe() + " is a negative failure rate");
        cause.rate_per_unit_hour = rate;
        cause.unit = unit;
        rate_given = true;
      }
      if (!rate_given && existing == f.causes.end()) {
        c.fail(
            "a new cause needs its rate: one of per_gpu_hour, per_node_hour, per_nic_hour, "
            "per_job_hour");
      }
      if (const auto d = c.find("detection")) {
        const std::string det = d->as_enum({"crash", "network", "hang"});
        cause.detection = det == "crash"     ? Detection::crash
                          : det == "network" ? Detection::network
                                             : Detection::hang;
      }
      cause.source = c.string_or("source", rate_given ? "given in the scenario" : cause.source);
      if (existing != f.causes.end()) {
        *existing = cause;
      } else {
        f.causes.push_back(cause);
      }
    }
  }
  for (auto& c : f.causes) c.rate_per_unit_hour *= f.rate_scale;
}

void parse_stragglers(const JsonNode& n, FaultsConfig& f) {
  n.only_keys({"classes", "policy", "detect_after_s", "threshold"});
  f.straggler_policy.replace = n.enum_or("policy", {"wait", "replace"}, "wait") == "replace";
  f.straggler_policy.detect_after_s = n.non_negative_or("detect_after_s", 600);
  if (const auto t = n.find("threshold")) {
    f.straggler_policy.threshold = t->as_number();
    if (!(f.straggler_policy.threshold > 1)) {
      t->fail(t->describe() + " must be above 1 (a step time ratio to the baseline)");
    }
  }
  if (const auto classes = n.find("classes")) {
    for (const auto& c : classes->items()) {
      c.require_object();
      StragglerClass k;
      k.name = c.string_at("name");
      k.link = c.enum_at("target", {"gpu", "link"}) == "link";
      const char* factor_key = k.link ? "bandwidth_factor" : "speed_factor";
      c.only_keys({"name", "target", "rate_per_gpu_hour", factor_key, "duration_median_s",
                   "duration_sigma"});
      const auto rate = c.at("rate_per_gpu_hour");
      k.rate_per_gpu_hour = rate.as_number();
      if (k.rate_per_gpu_hour < 0) rate.fail(rate.describe() + " is a negative rate");
      const auto factor = c.at(factor_key);
      k.factor = factor.as_number();
      if (k.factor > 1)
        factor.fail(factor.describe() + " is above 1; a straggler is slower, in (0, 1)");
      if (!(k.factor > 0) || k.factor == 1) factor.fail(factor.describe() + " must lie in (0, 1)");
      k.duration_median_s = c.positive_at("duration_median_s");
      k.duration_sigma = c.non_negative_or("duration_sigma", 0);
      f.stragglers.push_back(k);
    }
  }
}

void parse_loss_spikes(const JsonNode& n, FaultsConfig& f) {
  n.only_keys({"outlier_rate_per_Ttokens", "outlier_min_tokens", "other_rate_per_Ttokens",
               "response_s", "skip_batches", "sample_filter"});
  auto& l = f.loss_spikes;
  const auto rate = [&](const char* key) {
    const auto v = n.find(key);
    if (!v) return 0.0;
    const double r = v->as_number();
    if (r < 0) v->fail(v->describe() + " is a negative rate");
    return r / kTokensPerTeratoken;
  };
  l.outlier_rate_per_token = rate("outlier_rate_per_Ttokens");
  l.other_rate_per_token = rate("other_rate_per_Ttokens");
  l.outlier_min_tokens = static_cast<int>(n.int_or("outlier_min_tokens", 32768, 1, 1 << 30));
  l.response_s = n.non_negative_or("response_s", 300);
  l.skip_batches = static_cast<int>(n.int_or("skip_batches", 0, 0, 1 << 30));
  if (const auto sf = n.find("sample_filter")) {
    sf->only_keys({"enabled", "max_tokens", "min_loss_mask_tokens", "data_fraction_removed"});
    l.filter.enabled = sf->bool_or("enabled", true);
    l.filter.max_tokens = static_cast<int>(sf->int_at("max_tokens", 1, 1 << 30));
    l.filter.min_loss_mask_tokens =
        static_cast<int>(sf->int_or("min_loss_mask_tokens", 0, 0, 1 << 30));
    l.filter.data_fraction_removed = sf->at("data_fraction_removed").as_fraction();
  }
}

void parse_drift(const JsonNode& n, FaultsConfig& f) {
  n.only_keys({"from_step_time_s", "to_step_time_s", "over_days", "growth_per_day",
               "fragmentation_share", "resets_on_restart", "mitigations"});
  auto& d = f.drift;
  if (const auto g = n.find("growth_per_day")) {
    for (const char* k : {"from_step_time_s", "to_step_time_s", "over_days"}) {
      if (n.has(k)) n.fail_at(k, "give either growth_per_day or from/to/over_days, not both");
    }
    d.growth_per_day = g->as_non_negative();
  } else if (n.has("from_step_time_s") || n.has("to_step_time_s") || n.has("over_days")) {
    const double from = n.positive_at("from_step_time_s");
    const auto to_node = n.at("to_step_time_s");
    const double to = to_node.as_positive();
    if (to < from)
      to_node.fail(to_node.describe() + " is below from_step_time_s; drift slows steps");
    // Linear growth of the step time with process age: the seed gives only the endpoints.
    d.growth_per_day = (to / from - 1.0) / n.positive_at("over_days");
  }
  d.fragmentation_share = n.fraction_or("fragmentation_share", 0.5);
  d.resets_on_restart = n.bool_or("resets_on_restart", true);
  if (const auto m = n.find("mitigations")) {
    m->only_keys({"empty_cache_every_steps", "empty_cache_cost_s", "limit_loader_workers",
                  "loader_slowdown"});
    auto& mit = d.mitigations;
    mit.empty_cache_every_steps =
        static_cast<int>(m->int_or("empty_cache_every_steps", 0, 0, 1 << 30));
    mit.empty_cache_cost_s = m->non_negative_or("empty_cache_cost_s", 0);
    if (mit.empty_cache_every_steps == 0 && m->has("empty_cache_cost_s")) {
      m->fail_at("empty_cache_cost_s", "set empty_cache_every_steps for the cost to apply");
    }
    mit.limit_loader_workers = m->bool_or("limit_loader_workers", false);
    mit.loader_slowdown = m->non_negative_or("loader_slowdown", 0);
  }
}

}  // namespace

const char* to_string(FaultKind k) {
  switch (k) {
    case FaultKind::gpu_slowdown: return "gpu_slowdown";
    case FaultKind::link_degraded: return "link_degraded";
    case FaultKind::link_down: return "link_down";
    case FaultKind::node_lost: return "node_lost";
  }
  return "?";
}

const char* to_string(IntervalPolicy p) {
  switch (p) {
    case IntervalPolicy::fixed: return "fixed";
    case IntervalPolicy::young: return "young";
    case IntervalPolicy::daly: return "daly";
    case IntervalPolicy::none: return "none";
  }
  return "?";
}

const char* to_string(SaveMode m) {
  return m == SaveMode::blocking ? "blocking" : "async";
}

std::string ScriptedFault::target() const {
  switch (kind) {
    case FaultKind::gpu_slowdown: return "rank " + std::to_string(rank);
    case FaultKind::link_degraded:
    case FaultKind::link_down: return "link " + link;
    case FaultKind::node_lost: return "node " + std::to_string(node);
  }
  return "?";
}

double LossSpikes::effective_rate_per_token() const {
  return (filter_removes_outliers() ? 0.0 : outlier_rate_per_token) + other_rate_per_token;
}

bool LossSpikes::filter_removes_outliers() const {
  return filter.enabled && filter.max_tokens < outlier_min_tokens;
}

double Drift::effective_growth_per_s() const {
  const double frag = mitigations.empty_cache_every_steps > 0 ? 0.0 : fragmentation_share;
  const double leak = mitigations.limit_loader_workers ? 0.0 : 1.0 - fragmentation_share;
  return growth_per_day * (frag + leak) / kSecondsPerDay;
}

double Drift::mitigation_factor(double step_time_s) const {
  double m = 1.0;
  if (mitigations.empty_cache_every_steps > 0) {
    m += mitigations.empty_cache_cost_s / (mitigations.empty_cache_every_steps * step_time_s);
  }
  if (mitigations.limit_loader_workers) m += mitigations.loader_slowdown;
  return m;
}

CampaignSettings parse_campaign_settings(const Scenario& scenario) {
  CampaignSettings c;
  const auto doc = SectionDocument::open(scenario.campaign);
  if (!doc) return c;
  const JsonNode n = doc->root();
  n.only_keys({"trials", "seed", "step_time_s", "mfu", "exposed_comm_share", "max_days",
               "monitor_interval_min", "trace_trial"});
  c.trials = static_cast<int>(n.int_or("trials", c.trials, 1, 10'000'000));
  c.seed = static_cast<std::uint64_t>(n.int_or("seed", 1, 0, (std::int64_t{1} << 53)));
  if (n.has("step_time_s")) c.step_time_s = n.positive_at("step_time_s");
  if (const auto m = n.find("mfu")) {
    const double v = m->as_number();
    if (!(v > 0) || v > 1) m->fail(m->describe() + " must lie in (0, 1]");
    c.mfu = v;
  }
  if (n.has("mfu") && !c.step_time_s) n.fail_at("mfu", "mfu is read only with step_time_s");
  if (c.step_time_s && !c.mfu) n.fail_at("mfu", "missing required key \"mfu\" (with step_time_s)");
  c.exposed_comm_share = n.fraction_or("exposed_comm_share", 0);
  c.max_days = n.positive_or("max_days", c.max_days);
  c.monitor_interval_s = n.positive_or("monitor_interval_min", c.monitor_interval_s / 60) * 60;
  c.trace_trial = static_cast<int>(n.int_or("trace_trial", 0, 0, c.trials - 1));
  return c;
}

CheckpointConfig parse_checkpointing(const Scenario& scenario, double model_parameters) {
  CheckpointConfig c;
  c.reschedule_s = kDefaultReschedule_s;
  c.init_s = kDefaultInit_s;
  const auto doc = SectionDocument::open(scenario.checkpointing);
  if (!doc) return c;
  const JsonNode n = doc->root();
  n.only_keys({"interval", "interval_min", "mode", "size_GB", "bytes_per_parameter", "write_GBps",
               "read_GBps", "save_s", "load_s", "async_stall_s", "restart"});
  const std::string policy = n.enum_at("interval", {"fixed", "young", "daly", "none"});
  c.policy = policy == "fixed"   ? IntervalPolicy::fixed
             : policy == "young" ? IntervalPolicy::young
             : policy == "daly"  ? IntervalPolicy::daly
                                 : IntervalPolicy::none;
  if (c.policy == IntervalPolicy::fixed) {
    c.fixed_interval_s = n.positive_at("interval_min") * 60;
  } else if (n.has("interval_min")) {
    n.fail_at("interval_min", "interval_min is read only with \"interval\": \"fixed\"");
  }
  c.mode = n.enum_or("mode", {"blocking", "async"}, "blocking") == "async" ? SaveMode::async
                                                                           : SaveMode::blocking;
  if (n.has("size_GB") && n.has("bytes_per_parameter")) {
    n.fail_at("bytes_per_parameter", "give size_GB or bytes_per_parameter, not both");
  }
  if (n.has("size_GB")) {
    c.size_bytes = n.positive_at("size_GB") * kBytesPerGB;
  } else {
    c.size_bytes =
        n.positive_or("bytes_per_parameter", kCheckpointBytesPerParameter) * model_parameters;
  }
  const auto duration = [&](const char* seconds_key, const char* rate_key) {
    if (n.has(seconds_key) && n.has(rate_key)) {
      n.fail_at(rate_key, std::string("give ") + seconds_key + " or " + rate_key + ", not both");
    }
    if (n.has(seconds_key)) return n.non_negative_at(seconds_key);
    if (!n.has(rate_key) && c.policy == IntervalPolicy::none) return 0.0;
    if (!n.has(rate_key)) {
      n.fail_at(rate_key, std::string("missing \"") + rate_key + "\" (or \"" + seconds_key +
                              "\"): the storage bandwidth sets the checkpoint's cost");
    }
    return c.size_bytes / (n.positive_at(rate_key) * kBytesPerGB);
  };
  c.save_s = duration("save_s", "write_GBps");
  c.load_s = duration("load_s", "read_GBps");
  if (c.mode == SaveMode::async) {
    const auto stall = n.at("async_stall_s");
    c.async_stall_s = stall.as_non_negative();
    if (c.async_stall_s > c.save_s) {
      stall.fail(stall.describe() + " exceeds the full save time (" + number(c.save_s) +
                 " s); async saving stalls training for less");
    }
  } else if (n.has("async_stall_s")) {
    n.fail_at("async_stall_s", "async_stall_s is read only with \"mode\": \"async\"");
  }
  if ((c.policy == IntervalPolicy::young || c.policy == IntervalPolicy::daly) &&
      (c.mode == SaveMode::blocking ? c.save_s : c.async_stall_s) <= 0) {
    n.fail_at("interval",
              "the Young/Daly interval needs a checkpoint that costs time; the "
              "stall is 0 s");
  }
  if (const auto r = n.find("restart")) {
    r->only_keys({"reschedule_s", "init_s"});
    c.reschedule_s = r->non_negative_or("reschedule_s", c.reschedule_s);
    c.init_s = r->non_negative_or("init_s", c.init_s);
  }
  return c;
}

CostConfig parse_cost(const Scenario& scenario) {
  CostConfig c{kDefaultUsdPerGpuHour, kDefaultPriceSource};
  const auto doc = SectionDocument::open(scenario.cost);
  if (!doc) return c;
  const JsonNode n = doc->root();
  n.only_keys({"usd_per_gpu_hour", "source"});
  c.usd_per_gpu_hour = n.non_negative_at("usd_per_gpu_hour");
  c.source = n.string_at("source");
  return c;
}

FaultsConfig parse_faults(const Scenario& scenario, const FaultContext& context) {
  FaultsConfig f;
  const auto doc = SectionDocument::open(scenario.faults);
  if (!doc) return f;
  const JsonNode n = doc->root();
  n.only_keys({"events", "watchdog_timeout_s", "crash_detection_s", "failure_rates", "stragglers",
               "loss_spikes", "drift"});
  f.events = parse_events(n, scenario, context);
  f.watchdog_timeout_s = n.positive_or("watchdog_timeout_s", f.watchdog_timeout_s);
  f.crash_detection_s = n.non_negative_or("crash_detection_s", f.crash_detection_s);
  if (const auto r = n.find("failure_rates")) parse_failure_rates(*r, f);
  if (const auto s = n.find("stragglers")) parse_stragglers(*s, f);
  if (const auto l = n.find("loss_spikes")) parse_loss_spikes(*l, f);
  if (const auto d = n.find("drift")) parse_drift(*d, f);
  return f;
}

StepFaults parse_step_faults(const Scenario& scenario, const FaultContext& context) {
  StepFaults out;
  const auto doc = SectionDocument::open(scenario.faults);
  if (!doc) return out;
  const JsonNode n = doc->root();
  n.require_object();
  for (const auto& e : parse_events(n, scenario, context)) {
    switch (e.kind) {
      case FaultKind::gpu_slowdown:
        out.slow_gpus.push_back({e.rank, e.factor, e.from_s, e.cause});
        break;
      case FaultKind::link_degraded:
      case FaultKind::link_down:
        out.links.push_back({e.link, e.factor, e.kind == FaultKind::link_down, e.from_s,
                             std::isfinite(e.until_s) ? e.until_s : 0.0});
        break;
      case FaultKind::node_lost: out.lost_nodes.push_back({e.node, e.from_s}); break;
    }
  }
  return out;
}

StepFaults step_faults_at(const std::vector<ScriptedFault>& events, double t_s) {
  StepFaults out;
  for (const auto& e : events) {
    if (t_s < e.from_s || t_s >= e.until_s) continue;
    switch (e.kind) {
      case FaultKind::gpu_slowdown:
        out.slow_gpus.push_back({e.rank, e.factor, 0.0, e.cause});
        break;
      case FaultKind::link_degraded:
      case FaultKind::link_down:
        out.links.push_back({e.link, e.factor, e.kind == FaultKind::link_down, 0.0, 0.0});
        break;
      case FaultKind::node_lost: out.lost_nodes.push_back({e.node, 0.0}); break;
    }
  }
  return out;
}

}  // namespace clustersim::campaign
