#include "validation/family_errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/svg_plot.hpp"

namespace clustersim::validation {
namespace {

std::string pct(double v, bool sign) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", v);
  return buf;
}

double in_sample_error(const CaseResult& c) {
  return c.cross_validated ? c.in_sample_error_pct : c.error_pct;
}

}  // namespace

double faster_pct(const CaseResult& c, double error_pct) {
  const bool time_metric =
      c.metric == Metric::step_time_s || c.metric == Metric::collective_time_us;
  return time_metric ? 100.0 * (1.0 / (1.0 + error_pct / 100.0) - 1.0) : error_pct;
}

std::vector<FamilyErrors> errors_by_family(const SuiteResult& result) {
  std::vector<FamilyErrors> out;
  for (const auto& c : result.cases) {
    if (!c.ok()) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const FamilyErrors& f) { return f.family == c.family; });
    if (it == out.end()) {
      out.push_back({c.family, c.group});
      it = out.end() - 1;
    }
    ++it->cases;
    it->mape_pct += std::abs(c.error_pct);
    it->signed_pct += faster_pct(c, c.error_pct);
    it->in_sample_mape_pct += std::abs(in_sample_error(c));
    it->in_sample_signed_pct += faster_pct(c, in_sample_error(c));
  }
  for (auto& f : out) {
    f.mape_pct /= f.cases;
    f.signed_pct /= f.cases;
    f.in_sample_mape_pct /= f.cases;
    f.in_sample_signed_pct /= f.cases;
  }
  return out;
}

std::string family_errors_markdown(const SuiteResult& result) {
  std::ostringstream out;
  out << "| source family | cases | MAPE | mean signed error (+ = predicted faster) | "
         "MAPE in-sample | signed in-sample |\n|---|---:|---:|---:|---:|---:|\n";
  double signed_all = 0, in_signed_all = 0;
  int n = 0;
  for (const auto& f : errors_by_family(result)) {
    out << "| " << f.family << " (" << f.group << ") | " << f.cases << " | "
        << pct(f.mape_pct, false) << " | " << pct(f.signed_pct, true) << " | "
        << pct(f.in_sample_mape_pct, false) << " | " << pct(f.in_sample_signed_pct, true) << " |\n";
    signed_all += f.signed_pct * f.cases;
    in_signed_all += f.in_sample_signed_pct * f.cases;
    n += f.cases;
  }
  if (n > 0) {
    out << "| **all** | **" << n << "** | **" << pct(result.mape_pct, false) << "** | **"
        << pct(signed_all / n, true) << "** | " << pct(result.in_sample_mape_pct, false) << " | "
        << pct(in_signed_all / n, true) << " |\n";
  }
  return out.str();
}

std::string family_errors_text(const SuiteResult& result) {
  std::ostringstream out;
  out << "per source family (signed: + = predicted faster)\n"
         "                      cases     MAPE   signed | in-sample MAPE  signed\n";
  for (const auto& f : errors_by_family(result)) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-20s %5d %8s %8s | %14s %7s\n", f.family.c_str(), f.cases,
                  pct(f.mape_pct, false).c_str(), pct(f.signed_pct, true).c_str(),
                  pct(f.in_sample_mape_pct, false).c_str(),
                  pct(f.in_sample_signed_pct, true).c_str());
    out << line;
  }
  return out.str();
}

std::string signed_error_svg(const SuiteResult& result, const std::string& date) {
  svg::Axes axes;
  axes.title = result.suite + ": speed error against GPU count (" + date + ")";
  axes.x_label = "GPUs";
  axes.y_label = "predicted faster than reported (%)";
  axes.x_log2 = true;
  std::vector<svg::Series> series;
  for (const auto& c : result.cases) {
    if (!c.ok() || c.gpus <= 0) continue;
    auto it = std::find_if(series.begin(), series.end(),
                           [&](const svg::Series& s) { return s.name == c.family; });
    if (it == series.end()) {
      svg::Series s;
      s.name = c.family;
      s.line = false;
      s.markers = true;
      series.push_back(s);
      it = series.end() - 1;
    }
    it->points.push_back({static_cast<double>(c.gpus), faster_pct(c, c.error_pct), ""});
  }
  return svg::line_chart(axes, series);
}

}  // namespace clustersim::validation
