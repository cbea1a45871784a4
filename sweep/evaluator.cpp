#include "sweep/evaluator.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/json_reader.hpp"
#include "sweep/results.hpp"

namespace clustersim::sweep {

namespace {

using nlohmann::json;

constexpr double kSecondsPerDay = 86400.0;
constexpr double kSecondsPerHour = 3600.0;
constexpr std::size_t kMessageTail = 600;  // characters of a child's stderr kept in a reason

std::string tail(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.size() > kMessageTail) t = "..." + t.substr(t.size() - kMessageTail);
  return t;
}

// Numbers of `object` into `into`, nested objects one level deep as "outer.inner".
// Timings of the evaluator itself vary from run to run; records hold only what the scenario
// determines, so that the same sweep always writes the same results.
bool is_wall_time(const std::string& key) {
  return key.find("wall_time") != std::string::npos || key == "wall_s";
}

void collect_numbers(const json& object, json& into, const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (is_wall_time(key)) continue;
    if (value.is_number()) {
      into[prefix + key] = value;
    } else if (value.is_object() && prefix.empty() && key != "breakdown") {
      for (const auto& [k2, v2] : value.items()) {
        if (v2.is_number() && !is_wall_time(k2)) into[key + "." + k2] = v2;
      }
    }
  }
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::string memory_verdict(double need_GiB, double usable_GiB) {
  return "needs " + fixed2(need_GiB) + " GiB per GPU but only " + fixed2(usable_GiB) +
         " GiB is usable: " + fixed2(need_GiB - usable_GiB) + " GiB over";
}

const std::vector<std::string>& evaluator_names() {
  static const std::vector<std::string> names = {"run", "check"};
  return names;
}

std::vector<std::string> evaluator_argv(const std::string& executable, const std::string& evaluator,
                                        const std::string& scenario_path,
                                        const std::string& json_path,
                                        const std::string& max_memory) {
  if (evaluator != "run" && evaluator != "check") {
    throw std::invalid_argument("unknown evaluator \"" + evaluator +
                                "\"; choose one of: " + join_names(evaluator_names()));
  }
  std::vector<std::string> argv = {executable, evaluator, scenario_path, "--json", json_path};
  if (evaluator == "run" && !max_memory.empty()) {
    argv.insert(argv.end(), {"--max-memory", max_memory});
  }
  // The parent shows the progress; a child's own (a slow `run`) would only fill its stderr.
  if (evaluator == "run") argv.push_back("--quiet");
  return argv;
}

namespace {

// The JSON object the child wrote, if it ended on its own and wrote one.
std::optional<json> child_json(const ProcessResult& result, const std::string& json_path) {
  if (result.timed_out || result.term_signal != 0 || result.spawn_failed) return std::nullopt;
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    json out = json::parse(text.str());
    if (out.is_object()) return out;
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

// A child that failed: invalid input (exit code 2) or any other failure, with its stderr.
Evaluation child_failure(const ProcessResult& result, Evaluation e) {
  e.status = result.exit_code == 2 ? kStatusInvalid : kStatusFailed;
  e.reason = "evaluator " + result.describe();
  if (!result.err.empty()) e.reason += ": " + tail(result.err);
  return e;
}

// Metrics, breakdown and warnings of the child's JSON.
void collect_results(const json& out, Evaluation& e) {
  collect_numbers(out, e.metrics, "");
  // Common spellings of the memory figure, so that ranking and plots find one name.
  if (!e.metrics.contains("memory_per_gpu_GiB")) {
    for (const char* alt : {"memory.per_gpu_GiB", "memory.total_GiB", "memory.peak_GiB"}) {
      if (e.metrics.contains(alt)) {
        e.metrics["memory_per_gpu_GiB"] = e.metrics[alt];
        break;
      }
    }
  }
  if (const auto it = out.find("breakdown"); it != out.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      if (value.is_number()) e.breakdown[key] = value;
    }
  }
  if (const auto it = out.find("warnings"); it != out.end() && it->is_array()) {
    for (const auto& w : *it) {
      if (w.is_string()) e.warnings.push_back(w.get<std::string>());
    }
  }
}

bool is_false(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && !it->get<bool>();
}

// Why a point does not fit: the child's own verdict, else one made from the memory metrics.
std::string infeasible_reason(const json& out, const json& memory, const json& metrics) {
  for (const json* o : std::initializer_list<const json*>{&out, &memory}) {
    for (const char* key : {"verdict", "reason", "memory_verdict"}) {
      if (o->is_object() && o->contains(key) && o->at(key).is_string()) {
        return o->at(key).get<std::string>();
      }
    }
  }
  const double need = metrics.value("memory_per_gpu_GiB", -1.0);
  const double usable = metrics.value("usable_GiB", metrics.value("memory_usable_GiB", -1.0));
  if (need >= 0 && usable >= 0) return memory_verdict(need, usable);
  if (need >= 0) return "does not fit in GPU memory: needs " + fixed2(need) + " GiB per GPU";
  return "does not fit in GPU memory";
}

}  // namespace

Evaluation interpret_child(const ProcessResult& result, const std::string& json_path) {
  const std::optional<json> out = child_json(result, json_path);
  if (!out) return child_failure(result, Evaluation{});
  Evaluation e;
  collect_results(*out, e);
  const json memory = out->value("memory", json::object());
  const bool infeasible = is_false(*out, "fits") || is_false(*out, "feasible") ||
                          is_false(*out, "fits_in_memory") ||
                          (memory.is_object() && is_false(memory, "fits"));
  if (infeasible) {
    e.status = kStatusInfeasible;
    e.reason = infeasible_reason(*out, memory, e.metrics);
    return e;
  }
  if (is_false(*out, "completed")) {
    // The step never finished (a collective hung on a failed link, say).
    e.status = kStatusFailed;
    e.reason = "the simulated step did not complete";
    if (const auto hang = out->find("hang"); hang != out->end() && hang->is_object()) {
      e.reason += ": " + hang->value("cause", std::string("hang"));
    }
    return e;
  }
  if (result.exit_code != 0) return child_failure(result, std::move(e));
  e.status = kStatusOk;
  return e;
}

void add_derived_metrics(json& metrics, const Scenario& scenario, double usd_per_gpu_hour) {
  add_derived_metrics(metrics,
                      RunSize{static_cast<double>(scenario.tokens_per_step()),
                              scenario.training.tokens_total, static_cast<double>(scenario.gpus)},
                      usd_per_gpu_hour);
}

RunSize run_size(const json& scenario) {
  const auto number = [&](const char* pointer) {
    const json v = scenario.value(json::json_pointer(pointer), json());
    return v.is_number() ? v.get<double>() : 0.0;
  };
  return {number("/training/global_batch") * number("/training/seq_len"),
          number("/training/tokens_total"), number("/gpus")};
}

void add_derived_metrics(json& metrics, const RunSize& size, double usd_per_gpu_hour) {
  for (const char* derived : {"tokens_per_s", "time_to_train_days", "gpu_hours", "cost_usd"}) {
    metrics.erase(derived);
  }
  const auto it = metrics.find("step_time_s");
  if (it == metrics.end() || !it->is_number()) return;
  const double step_s = it->get<double>();
  if (!(step_s > 0) || !std::isfinite(step_s)) return;
  const double tokens_per_s = size.tokens_per_step / step_s;
  metrics["tokens_per_s"] = tokens_per_s;
  if (size.tokens_total > 0) {
    const double train_s = size.tokens_total / tokens_per_s;
    metrics["time_to_train_days"] = train_s / kSecondsPerDay;
    const double gpu_hours = train_s / kSecondsPerHour * size.gpus;
    metrics["gpu_hours"] = gpu_hours;
    if (usd_per_gpu_hour > 0) metrics["cost_usd"] = gpu_hours * usd_per_gpu_hour;
  }
}

}  // namespace clustersim::sweep
