// The human and JUnit forms of a regress report, and the breakdown delta of a moved step.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/xml_escape.hpp"
#include "sweep/regress.hpp"

namespace clustersim::sweep {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The body of a failed JUnit case: both values, or the reason when nothing was compared.
std::string failure_detail(const Comparison& r) {
  if (!r.baseline && !r.current) return r.message;
  return "baseline " + show_metric(r.metric, r.baseline) + ", current " +
         show_metric(r.metric, r.current);
}

// Rows of cells as text, every column but the last padded to its widest cell plus two spaces,
// so that neighbouring cells never run together whatever their length.
std::string aligned(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] + 2 - row[i].size(), ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string show_metric(const std::string& metric, const std::optional<double>& v) {
  if (!v) return "-";
  if (metric == "mfu") return fmt("%.3f%%", *v * 100);
  if (metric.size() > 2 && metric.compare(metric.size() - 2, 2, "_s") == 0) {
    return fmt("%.4f s", *v);
  }
  return fmt("%.6g", *v);
}

std::string breakdown_delta(const std::map<std::string, double>& recorded,
                            const nlohmann::json& current) {
  if (recorded.empty() || !current.is_object() || current.empty()) return "";
  struct Move {
    std::string name;
    double before = 0, after = 0;
  };
  std::map<std::string, Move> by_name;  // a component on one side only counts as 0 on the other
  for (const auto& [name, v] : recorded) by_name[name] = {name, v, 0};
  for (const auto& [name, v] : current.items()) {
    if (!v.is_number()) continue;
    auto& m = by_name[name];
    m.name = name;
    m.after = v.get<double>();
  }
  std::vector<Move> moves;
  for (const auto& [name, m] : by_name) {
    if (m.after != m.before) moves.push_back(m);
  }
  if (moves.empty()) return "breakdown unchanged";
  std::stable_sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
    return std::fabs(a.after - a.before) > std::fabs(b.after - b.before);
  });
  std::string out = "breakdown moved most:";
  for (std::size_t i = 0; i < std::min<std::size_t>(2, moves.size()); ++i) {
    const Move& m = moves[i];
    out += (i ? ", " : " ") + m.name + " " + fmt("%+.4f", m.after - m.before) + " s (" +
           fmt("%.4f", m.before) + " -> " + fmt("%.4f", m.after) + ")";
  }
  return out;
}

std::string format_report(const RegressReport& report) {
  std::vector<std::vector<std::string>> rows = {
      {" ", "scenario", "metric", "baseline", "current", "change", "verdict"}};
  for (const auto& r : report.rows) {
    const std::string change = (r.baseline && r.current) ? fmt("%+.2f%%", r.change_pct) : "-";
    rows.push_back({r.pass ? " " : "!", scenario_short_name(r.scenario), r.metric,
                    show_metric(r.metric, r.baseline), show_metric(r.metric, r.current), change,
                    r.pass ? "ok" : "FAIL: " + r.message});
  }
  std::string out = aligned(rows);
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
               xml_escape(r.scenario + " " + r.metric + ": " + failure_detail(r)) + "</failure>\n";
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

}  // namespace clustersim::sweep
