#include "input/faults_section.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/units.hpp"
#include "input/input_keys.hpp"
#include "input/limits.hpp"
#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

constexpr double kTokensPerTeratoken = 1e12;

int job_nodes(const Scenario& s) {
  const int gpn = std::max(1, s.cluster.gpus_per_node);
  return (s.gpus + gpn - 1) / gpn;
}

struct TimeAt {
  double seconds = 0;
  JsonNode node;
};

// A time given with one of the unit suffixes _s, _h, _days under `base` ("from", "until",
// "at"); nullopt when none is given.
std::optional<TimeAt> time_of(const JsonNode& n, const std::string& base) {
  std::optional<TimeAt> out;
  std::string first_key;
  const std::pair<const char*, double> units[] = {
      {"_s", 1.0}, {"_h", kSecondsPerHour}, {"_days", kSecondsPerDay}};
  for (const auto& [suffix, scale] : units) {
    const std::string key = base + suffix;
    const auto v = n.find(key);
    if (!v) continue;
    if (out) {
      n.fail_at(key, "\"" + first_key + "\" and \"" + key + "\" both give this time; give it once");
    }
    first_key = key;
    const double value = v->as_number();
    if (value < 0) v->fail(v->describe() + " is negative; times count from the start of the run");
    if (value * scale > kMaxRun_s) {
      v->fail(v->describe() + " is after " + number_text(kMaxRunDays) +
              " days, the longest run a campaign simulates");
    }
    out = TimeAt{value * scale, *v};
  }
  return out;
}

// An integer index in [0, count) at `key`: a rank or a node of the job.
int index_at(const JsonNode& n, const char* key, int count, const std::string& what) {
  const auto node = n.at(key);
  const auto v = node.as_int();
  if (v < 0 || v >= count) {
    node.fail(std::to_string(v) + " is not a " + what + " (" + std::string(key) + "s 0.." +
              std::to_string(count - 1) + ")");
  }
  return static_cast<int>(v);
}

void parse_node_lost(const JsonNode& n, const Scenario& s, ScriptedFault& f) {
  only_table_keys(n, event_keys(FaultKind::node_lost));
  f.node = index_at(n, "node", job_nodes(s), "node of this job");
  const auto at = time_of(n, "at");
  if (!at) n.fail("missing the time of the loss: one of \"at_s\", \"at_h\", \"at_days\"");
  f.from_s = at->seconds;
  f.from_where = {at->node.file(), at->node.pointer()};
  if (f.cause.empty()) f.cause = "node lost";
}

void parse_gpu_slowdown(const JsonNode& n, const Scenario& s, ScriptedFault& f) {
  f.rank = index_at(n, "rank", s.gpus, "rank of this " + std::to_string(s.gpus) + "-GPU job");
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
}

void parse_link_fault(const JsonNode& n, ScriptedFault& f) {
  f.link = n.at("link").as_string();
  if (f.kind == FaultKind::link_down) {
    f.factor = 0;
    if (f.cause.empty()) f.cause = "link down";
    return;
  }
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
}

void parse_interval(const JsonNode& n, ScriptedFault& f) {
  const auto from = time_of(n, "from");
  if (!from) n.fail("missing the start time: one of \"from_s\", \"from_h\", \"from_days\"");
  f.from_s = from->seconds;
  f.from_where = {from->node.file(), from->node.pointer()};
  if (const auto until = time_of(n, "until")) {
    if (until->seconds <= f.from_s) {
      until->node.fail(number_text(until->seconds / kSecondsPerDay) +
                       " days is not after the start (" + number_text(f.from_s / kSecondsPerDay) +
                       " days)");
    }
    f.until_s = until->seconds;
  }
}

ScriptedFault parse_event(const JsonNode& n, const Scenario& s) {
  n.require_object();
  ScriptedFault f;
  f.where = {n.file(), n.pointer()};
  f.kind = enum_at(n, "kind", kFaultKindNames);
  f.cause = n.string_or("cause", "");
  if (f.kind == FaultKind::node_lost) {
    parse_node_lost(n, s, f);
    return f;
  }
  only_table_keys(n, event_keys(f.kind));
  if (f.kind == FaultKind::gpu_slowdown) {
    parse_gpu_slowdown(n, s, f);
  } else {
    parse_link_fault(n, f);
  }
  parse_interval(n, f);
  return f;
}

// The rate of one cause: one of the per_..._hour keys; false when none is given.
bool parse_cause_rate(const JsonNode& c, FailureCause& cause) {
  const std::pair<const char*, FailureUnit> units[] = {{"per_gpu_hour", FailureUnit::gpu},
                                                       {"per_node_hour", FailureUnit::node},
                                                       {"per_nic_hour", FailureUnit::nic},
                                                       {"per_job_hour", FailureUnit::job}};
  bool given = false;
  for (const auto& [key, unit] : units) {
    const auto v = c.find(key);
    if (!v) continue;
    if (given) c.fail_at(key, "give one rate per cause; another per_..._hour key is set");
    const double rate = v->as_number();
    if (rate < 0) v->fail(v->describe() + " is a negative failure rate");
    cause.rate_per_unit_hour = read_number(*v, cause_keys().key(key));
    cause.unit = unit;
    given = true;
  }
  return given;
}

// One entry of failure_rates.causes: overrides the model's cause of that name or adds one.
void parse_cause(const std::string& name, const JsonNode& c, std::vector<FailureCause>& causes) {
  only_table_keys(c, cause_keys());
  auto existing = std::find_if(causes.begin(), causes.end(),
                               [&](const FailureCause& x) { return x.name == name; });
  FailureCause cause = existing != causes.end() ? *existing : FailureCause{};
  cause.name = name;
  const bool rate_given = parse_cause_rate(c, cause);
  if (!rate_given && existing == causes.end()) {
    c.fail(
        "a new cause needs its rate: one of per_gpu_hour, per_node_hour, per_nic_hour, "
        "per_job_hour");
  }
  if (c.has("detection")) {
    cause.detection = choice_at(c, cause_keys(), "detection", kDetectionNames);
  }
  cause.source = c.string_or("source", rate_given ? "given in the scenario" : cause.source);
  if (existing != causes.end()) {
    *existing = cause;
  } else {
    causes.push_back(cause);
  }
}

void parse_failure_rates(const JsonNode& n, FaultsConfig& f) {
  const ObjectSpec& keys = failure_rates_keys();
  only_table_keys(n, keys);
  f.rate_model = choice_or(n, keys, "model", "llama3");
  f.rate_scale = number_or(n, keys, "scale", 1.0);
  f.causes = default_failure_causes(f.rate_model);
  if (const auto causes = n.find("causes")) {
    for (const auto& [name, c] : causes->members()) parse_cause(name, c, f.causes);
  }
  for (auto& c : f.causes) c.rate_per_unit_hour *= f.rate_scale;
}

StragglerClass parse_straggler_class(const JsonNode& c) {
  c.require_object();
  StragglerClass k;
  k.name = c.string_at("name");
  k.link = c.enum_at("target", {"gpu", "link"}) == "link";
  const char* factor_key = k.link ? "bandwidth_factor" : "speed_factor";
  const ObjectSpec& keys = straggler_class_keys(k.link);
  only_table_keys(c, keys);
  const auto rate = c.at("rate_per_gpu_hour");
  if (rate.as_number() < 0) rate.fail(rate.describe() + " is a negative rate");
  k.rate_per_gpu_hour = read_number(rate, keys.key("rate_per_gpu_hour"));
  const auto factor = c.at(factor_key);
  k.factor = factor.as_number();
  if (k.factor > 1)
    factor.fail(factor.describe() + " is above 1; a straggler is slower, in (0, 1)");
  if (!(k.factor > 0) || k.factor == 1) factor.fail(factor.describe() + " must lie in (0, 1)");
  k.duration_median_s = number_at(c, keys, "duration_median_s");
  k.duration_sigma = number_or(c, keys, "duration_sigma", 0);
  return k;
}

void parse_stragglers(const JsonNode& n, FaultsConfig& f) {
  const ObjectSpec& keys = stragglers_keys();
  only_table_keys(n, keys);
  f.straggler_policy.replace = choice_or(n, keys, "policy", "wait") == "replace";
  f.straggler_policy.detect_after_s = number_or(n, keys, "detect_after_s", 600);
  if (const auto t = n.find("threshold")) {
    f.straggler_policy.threshold = t->as_number();
    if (!(f.straggler_policy.threshold > 1)) {
      t->fail(t->describe() + " must be above 1 (a step time ratio to the baseline)");
    }
    number_in(*t, 1, keys.key("threshold").max);
  }
  if (const auto classes = n.find("classes")) {
    for (const auto& c : classes->items()) f.stragglers.push_back(parse_straggler_class(c));
  }
}

SampleFilter parse_sample_filter(const JsonNode& sf) {
  const ObjectSpec& keys = sample_filter_keys();
  only_table_keys(sf, keys);
  SampleFilter filter;
  filter.enabled = sf.bool_or("enabled", true);
  filter.max_tokens = static_cast<int>(int_at(sf, keys, "max_tokens"));
  filter.min_loss_mask_tokens = static_cast<int>(int_or(sf, keys, "min_loss_mask_tokens", 0));
  filter.data_fraction_removed = number_at(sf, keys, "data_fraction_removed");
  return filter;
}

void parse_loss_spikes(const JsonNode& n, FaultsConfig& f) {
  const ObjectSpec& keys = loss_spikes_keys();
  only_table_keys(n, keys);
  auto& l = f.loss_spikes;
  const auto rate = [&](const char* key) {
    const auto v = n.find(key);
    if (!v) return 0.0;
    if (v->as_number() < 0) v->fail(v->describe() + " is a negative rate");
    return read_number(*v, keys.key(key)) / kTokensPerTeratoken;
  };
  l.outlier_rate_per_token = rate("outlier_rate_per_Ttokens");
  l.other_rate_per_token = rate("other_rate_per_Ttokens");
  l.outlier_min_tokens = static_cast<int>(int_or(n, keys, "outlier_min_tokens", 32768));
  l.response_s = number_or(n, keys, "response_s", 300);
  l.skip_batches = static_cast<int>(int_or(n, keys, "skip_batches", 0));
  if (const auto sf = n.find("sample_filter")) l.filter = parse_sample_filter(*sf);
}

// Linear growth of the step time with process age: the seed gives only the endpoints.
double growth_from_endpoints(const JsonNode& n) {
  const ObjectSpec& keys = drift_keys();
  const double from = number_at(n, keys, "from_step_time_s");
  const auto to_node = n.at("to_step_time_s");
  const double to = read_number(to_node, keys.key("to_step_time_s"));
  if (to < from) to_node.fail(to_node.describe() + " is below from_step_time_s; drift slows steps");
  const double growth = (to / from - 1.0) / number_at(n, keys, "over_days");
  if (growth > kMaxDriftGrowthPerDay) {
    n.fail_at("to_step_time_s", "grows the step " + number_text(growth) +
                                    "-fold per day; at most " + number_text(kMaxDriftGrowthPerDay) +
                                    " is a training run");
  }
  return growth;
}

DriftMitigations parse_mitigations(const JsonNode& m) {
  const ObjectSpec& keys = mitigations_keys();
  only_table_keys(m, keys);
  DriftMitigations mit;
  mit.empty_cache_every_steps = static_cast<int>(int_or(m, keys, "empty_cache_every_steps", 0));
  mit.empty_cache_cost_s = number_or(m, keys, "empty_cache_cost_s", 0);
  if (mit.empty_cache_every_steps == 0 && m.has("empty_cache_cost_s")) {
    m.fail_at("empty_cache_cost_s", "set empty_cache_every_steps for the cost to apply");
  }
  mit.limit_loader_workers = m.bool_or("limit_loader_workers", false);
  mit.loader_slowdown = number_or(m, keys, "loader_slowdown", 0);
  return mit;
}

void parse_drift(const JsonNode& n, FaultsConfig& f) {
  const ObjectSpec& keys = drift_keys();
  only_table_keys(n, keys);
  auto& d = f.drift;
  if (const auto g = n.find("growth_per_day")) {
    for (const char* k : {"from_step_time_s", "to_step_time_s", "over_days"}) {
      if (n.has(k)) n.fail_at(k, "give either growth_per_day or from/to/over_days, not both");
    }
    d.growth_per_day = read_number(*g, keys.key("growth_per_day"));
  } else if (n.has("from_step_time_s") || n.has("to_step_time_s") || n.has("over_days")) {
    d.growth_per_day = growth_from_endpoints(n);
  }
  d.fragmentation_share = number_or(n, keys, "fragmentation_share", 0.5);
  d.resets_on_restart = n.bool_or("resets_on_restart", true);
  if (const auto m = n.find("mitigations")) d.mitigations = parse_mitigations(*m);
}

}  // namespace

FaultsConfig parse_faults(const JsonNode& n, const Scenario& scenario) {
  n.require_object();
  const ObjectSpec& keys = faults_keys();
  only_table_keys(n, keys);
  FaultsConfig f;
  if (const auto events = n.find("events")) {
    for (const auto& item : events->items()) f.events.push_back(parse_event(item, scenario));
  }
  f.watchdog_timeout_s = number_or(n, keys, "watchdog_timeout_s", f.watchdog_timeout_s);
  f.crash_detection_s = number_or(n, keys, "crash_detection_s", f.crash_detection_s);
  if (const auto r = n.find("failure_rates")) parse_failure_rates(*r, f);
  if (const auto s = n.find("stragglers")) parse_stragglers(*s, f);
  if (const auto l = n.find("loss_spikes")) parse_loss_spikes(*l, f);
  if (const auto d = n.find("drift")) parse_drift(*d, f);
  return f;
}

void check_fault_links(const FaultsConfig& faults, const std::vector<std::string>& link_names) {
  for (const auto& e : faults.events) {
    if (e.link.empty() ||
        std::find(link_names.begin(), link_names.end(), e.link) != link_names.end()) {
      continue;
    }
    std::string message = "unknown link \"" + e.link + "\"";
    const std::string suggestion = nearest_name(e.link, link_names);
    if (!suggestion.empty()) {
      message += "; did you mean \"" + suggestion + "\"?";
    } else if (!link_names.empty()) {
      message += "; links are named as the cluster graph names them, e.g. \"" + link_names.front() +
                 "\" (`clustersim topo --dot` lists them)";
    }
    e.where.at("link").fail(message);
  }
}

}  // namespace clustersim::input
