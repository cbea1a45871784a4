#include "sweep/regress.hpp"

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "input/scenario_loader.hpp"
#include "sweep/results.hpp"

namespace clustersim::sweep {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// A metric value as people read it: MFU in percent, times in seconds.
std::string show(const std::string& metric, const std::optional<double>& v) {
  if (!v) return "-";
  if (metric == "mfu") return fmt("%.3f%%", *v * 100);
  if (metric.size() > 2 && metric.compare(metric.size() - 2, 2, "_s") == 0) {
    return fmt("%.4f s", *v);
  }
  return fmt("%.6g", *v);
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters; keep tab and newlines.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

Baseline load_baseline(const std::string& path) {
  return parse_baseline(JsonDocument::load(path));
}

Baseline parse_baseline(const JsonDocument& document) {
  const JsonNode root = document.root();
  root.require_object();
  root.only_keys({"description", "tolerance_pct", "evaluator", "metrics", "scenarios"});
  Baseline b;
  b.file = document.file();
  b.description = root.string_or("description", "");
  b.tolerance_pct = root.non_negative_or("tolerance_pct", b.tolerance_pct);
  b.evaluator = root.enum_or("evaluator", evaluator_names(), b.evaluator);
  if (const auto metrics = root.find("metrics")) {
    b.metrics.clear();
    for (const auto& m : metrics->items()) {
      const std::string name = m.as_string();
      if (name.empty()) m.fail("a metric name cannot be empty");
      if (std::find(b.metrics.begin(), b.metrics.end(), name) != b.metrics.end()) {
        m.fail("\"" + name + "\" is listed twice");
      }
      b.metrics.push_back(name);
    }
    if (b.metrics.empty()) metrics->fail("name at least one metric to compare");
  }
  const JsonNode scenarios = root.at("scenarios");
  for (const auto& item : scenarios.items()) {
    item.only_keys({"scenario", "values", "tolerance_pct"});
    BaselineEntry e;
    e.scenario = item.string_at("scenario");
    if (!fs::exists(baseline_scenario_path(e.scenario))) {
      item.fail_at("scenario", "scenario \"" + e.scenario + "\" does not exist (looked at " +
                                   baseline_scenario_path(e.scenario) + ")");
    }
    for (const auto& earlier : b.entries) {
      if (earlier.scenario == e.scenario)
        item.fail_at("scenario", "\"" + e.scenario + "\" is listed twice");
    }
    if (const auto values = item.find("values")) {
      values->require_object();
      for (const auto& [name, v] : values->members()) {
        if (std::find(b.metrics.begin(), b.metrics.end(), name) == b.metrics.end()) {
          v.fail("\"" + name + "\" is not one of the compared metrics (" + join_names(b.metrics) +
                 ")");
        }
        e.values[name] = v.as_number();
      }
    }
    if (item.has("tolerance_pct")) e.tolerance_pct = item.at("tolerance_pct").as_non_negative();
    b.entries.push_back(std::move(e));
  }
  if (b.entries.empty()) scenarios.fail("a baseline needs at least one scenario");
  return b;
}

std::string baseline_scenario_path(const std::string& scenario) {
  if (fs::path(scenario).is_absolute()) return scenario;
  return data_root() + "/" + scenario;
}

std::string scenario_short_name(const std::string& scenario) {
  return fs::path(scenario).stem().string();
}

bool RegressReport::passed() const {
  return failures() == 0;
}

std::size_t RegressReport::failures() const {
  std::size_t n = 0;
  for (const auto& r : rows) n += !r.pass;
  return n;
}

RegressReport compare_with_baseline(const Baseline& baseline,
                                    const std::vector<Evaluation>& current,
                                    std::optional<double> tolerance_override_pct) {
  RegressReport report;
  for (std::size_t i = 0; i < baseline.entries.size(); ++i) {
    const BaselineEntry& entry = baseline.entries[i];
    const Evaluation& e = current.at(i);
    for (const auto& metric : baseline.metrics) {
      Comparison c;
      c.scenario = entry.scenario;
      c.metric = metric;
      c.tolerance_pct =
          tolerance_override_pct.value_or(entry.tolerance_pct.value_or(baseline.tolerance_pct));
      if (const auto it = entry.values.find(metric); it != entry.values.end())
        c.baseline = it->second;
      if (const auto it = e.metrics.find(metric); it != e.metrics.end() && it->is_number()) {
        c.current = it->get<double>();
      }
      if (e.status != kStatusOk) {
        c.message = "evaluation " + e.status + ": " + e.reason;
      } else if (!c.current) {
        c.message = "the evaluator reported no \"" + metric + "\"";
      } else if (!c.baseline) {
        c.message = "no stored value (run with --update to record one)";
      } else {
        const double base = *c.baseline;
        const double diff = *c.current - base;
        c.change_pct = base != 0 ? 100 * diff / std::fabs(base) : (diff == 0 ? 0 : INFINITY);
        c.pass = std::fabs(c.change_pct) <= c.tolerance_pct;
        if (!c.pass) {
          c.message = metric + " changed by " + fmt("%+.2f", c.change_pct) + "% (" +
                      show(metric, c.baseline) + " -> " + show(metric, c.current) +
                      "), beyond the " + fmt("%g", c.tolerance_pct) + "% tolerance";
        }
      }
      report.rows.push_back(std::move(c));
    }
  }
  return report;
}

std::string format_report(const RegressReport& report) {
  std::size_t name_width = 8;
  for (const auto& r : report.rows)
    name_width = std::max(name_width, scenario_short_name(r.scenario).size());
  std::string out = "  " + pad("scenario", name_width + 2) + pad("metric", 14) +
                    pad("baseline", 13) + pad("current", 13) + pad("change", 10) + "verdict\n";
  for (const auto& r : report.rows) {
    const std::string change = (r.baseline && r.current) ? fmt("%+.2f%%", r.change_pct) : "-";
    out += (r.pass ? "  " : "! ") + pad(scenario_short_name(r.scenario), name_width + 2) +
           pad(r.metric, 14) + pad(show(r.metric, r.baseline), 13) +
           pad(show(r.metric, r.current), 13) + pad(change, 10) +
           (r.pass ? "ok" : "FAIL: " + r.message) + "\n";
  }
  out += report.passed()
             ? "regress: all " + std::to_string(report.rows.size()) + " checks within tolerance\n"
             : "regress: " + std::to_string(report.failures()) + " of " +
                   std::to_string(report.rows.size()) + " checks failed\n";
  return out;
}

std::string junit_xml(const RegressReport& report) {
  std::string cases;
  for (const auto& r : report.rows) {
    cases += "    <testcase classname=\"regress." + xml_escape(scenario_short_name(r.scenario)) +
             "\" name=\"" + xml_escape(r.metric) + "\" file=\"" + xml_escape(r.scenario) + "\">\n";
    if (!r.pass) {
      cases += "      <failure message=\"" +
               xml_escape(scenario_short_name(r.scenario) + ": " + r.message) +
               "\" type=\"regression\">" +
               xml_escape(r.scenario + " " + r.metric + ": baseline " + show(r.metric, r.baseline) +
                          ", current " + show(r.metric, r.current)) +
               "</failure>\n";
    }
    cases += "    </testcase>\n";
  }
  const std::string counts = "tests=\"" + std::to_string(report.rows.size()) + "\" failures=\"" +
                             std::to_string(report.failures()) + "\" errors=\"0\"";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"clustersim regress\" " +
         counts + " time=\"" + fmt("%.3f", report.wall_s) + "\">\n  <testsuite name=\"regress\" " +
         counts + " time=\"" + fmt("%.3f", report.wall_s) + "\">\n" + cases +
         "  </testsuite>\n</testsuites>\n";
}

json updated_baseline(const JsonDocument& original, const Baseline& baseline,
                      const std::vector<Evaluation>& current) {
  json doc = original.root().raw();
  for (std::size_t i = 0; i < baseline.entries.size(); ++i) {
    json values = json::object();
    for (const auto& metric : baseline.metrics) {
      const auto it = current.at(i).metrics.find(metric);
      if (it != current.at(i).metrics.end() && it->is_number()) values[metric] = *it;
    }
    doc["scenarios"][i]["values"] = values;
  }
  return doc;
}

std::vector<Evaluation> evaluate_files(const std::vector<std::string>& paths,
                                       const std::string& executable, const std::string& evaluator,
                                       int jobs, double timeout_s) {
  std::vector<Evaluation> out(paths.size());
  // The children's JSON goes to a private temporary directory, removed afterwards.
  std::string pattern = (fs::temp_directory_path() / "clustersim-regress-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory");
  const std::string tmp = pattern;
  auto json_of = [&](std::size_t i) { return tmp + "/" + std::to_string(i) + ".json"; };
  std::size_t cursor = 0;
  auto next = [&]() -> std::optional<std::pair<std::size_t, ProcessJob>> {
    if (cursor >= paths.size()) return std::nullopt;
    ProcessJob job;
    job.argv = evaluator_argv(executable, evaluator, paths[cursor], json_of(cursor));
    return std::make_pair(cursor++, std::move(job));
  };
  PoolOptions pool;
  pool.parallel = jobs;
  pool.timeout_s = timeout_s;
  try {
    run_processes(
        next, [&](std::size_t i, ProcessResult&& r) { out[i] = interpret_child(r, json_of(i)); },
        pool);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return out;
}

}  // namespace clustersim::sweep
