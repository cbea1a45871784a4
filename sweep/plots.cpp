#include "sweep/plots.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/atomic_file.hpp"
#include "core/svg_plot.hpp"
#include "sweep/ranking.hpp"

namespace clustersim::sweep {

namespace {

constexpr double kPercent = 100.0;

std::vector<const SweepRecord*> ok_with_mfu(const std::vector<SweepRecord>& records) {
  std::vector<const SweepRecord*> out;
  for (const auto& r : records) {
    if (r.status == kStatusOk && r.has_metric("mfu")) out.push_back(&r);
  }
  return out;
}

double parameter(const SweepRecord& r, const char* name) {
  const auto it = r.parameters.find(name);
  return (it != r.parameters.end() && it->is_number()) ? it->get<double>() : 0;
}

std::string series_name(const SweepRecord& r) {
  return r.series.empty() ? r.label : r.series;
}

std::string mfu_vs_gpus(const std::vector<const SweepRecord*>& ok, int max_series) {
  // Best MFU per (series, GPU count); series ranked by their best MFU.
  std::map<std::string, std::map<double, double>> by_series;
  std::map<std::string, double> best;
  for (const auto* r : ok) {
    const std::string s = series_name(*r);
    double& cell = by_series[s][parameter(*r, "gpus")];
    cell = std::max(cell, r->metric("mfu") * kPercent);
    best[s] = std::max(best[s], r->metric("mfu") * kPercent);
  }
  std::vector<std::string> order;
  for (const auto& [s, v] : best) order.push_back(s);
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return best[a] > best[b]; });
  if (static_cast<int>(order.size()) > max_series)
    order.resize(static_cast<std::size_t>(max_series));
  std::vector<svg::Series> series;
  for (const auto& s : order) {
    svg::Series line;
    line.name = s;
    line.markers = true;
    for (const auto& [gpus, mfu] : by_series[s]) line.points.push_back({gpus, mfu, ""});
    series.push_back(std::move(line));
  }
  svg::Axes axes;
  axes.title = "MFU against GPU count, per layout";
  if (static_cast<int>(best.size()) > max_series) {
    axes.title +=
        " (best " + std::to_string(max_series) + " of " + std::to_string(best.size()) + ")";
  }
  axes.x_label = "GPUs";
  axes.y_label = "MFU (%)";
  axes.x_log2 = true;
  axes.y_min = 0;
  return svg::line_chart(axes, series);
}

std::string breakdown_bars(const std::vector<const SweepRecord*>& ok, int max_bars) {
  std::vector<const SweepRecord*> rows = ok;
  std::stable_sort(rows.begin(), rows.end(), [](const SweepRecord* a, const SweepRecord* b) {
    return a->metric("mfu") > b->metric("mfu");
  });
  if (static_cast<int>(rows.size()) > max_bars) rows.resize(static_cast<std::size_t>(max_bars));
  // Components in order of first appearance in the best point, then the others by name.
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto* r : rows) {
    for (const auto& [k, v] : r->breakdown.items()) {
      if (v.is_number() && seen.insert(k).second) names.push_back(k);
    }
  }
  std::vector<svg::BarGroup> bars;
  for (const auto* r : rows) {
    svg::BarGroup bar;
    bar.label = r->label;
    for (const auto& n : names) {
      const auto it = r->breakdown.find(n);
      bar.values.push_back((it != r->breakdown.end() && it->is_number()) ? it->get<double>() : 0);
    }
    bars.push_back(std::move(bar));
  }
  std::vector<std::string> labels;
  for (const auto& n : names) labels.push_back(component_label(n));
  svg::Axes axes;
  axes.title = "Step time by component, best " + std::to_string(rows.size()) + " points by MFU";
  axes.y_label = "seconds per step";
  axes.width = std::max(800.0, 90.0 * static_cast<double>(rows.size()) + 240);
  return svg::stacked_bars(axes, labels, bars);
}

std::string mfu_vs_memory(const std::vector<const SweepRecord*>& ok) {
  std::map<int, svg::Series> by_zero;
  for (const auto* r : ok) {
    if (!r->has_metric("memory_per_gpu_GiB")) continue;
    const int zero = static_cast<int>(parameter(*r, "zero_stage"));
    svg::Series& s = by_zero[zero];
    s.name = "ZeRO-" + std::to_string(zero);
    s.line = false;
    s.markers = true;
    s.points.push_back({r->metric("memory_per_gpu_GiB"), r->metric("mfu") * kPercent, ""});
  }
  std::vector<svg::Series> series;
  for (auto& [zero, s] : by_zero) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const svg::Point& a, const svg::Point& b) { return a.x < b.x; });
    series.push_back(std::move(s));
  }
  svg::Axes axes;
  axes.title = "MFU against memory per GPU";
  axes.x_label = "memory per GPU (GiB)";
  axes.y_label = "MFU (%)";
  axes.y_min = 0;
  return svg::line_chart(axes, series);
}

}  // namespace

std::vector<std::string> write_plots(const std::vector<SweepRecord>& records,
                                     const std::string& dir, int max_series, int max_bars) {
  const auto ok = ok_with_mfu(records);
  std::vector<std::string> written;
  if (ok.empty()) return written;
  // All plots or none: each is staged, then all are renamed into place together.
  OutputFiles outputs;
  outputs.declare_directory(dir);
  auto put = [&](const std::string& name, const std::string& svg) {
    const std::string path = dir + "/" + name;
    outputs.set(path, svg);
    written.push_back(path);
  };
  put("mfu_vs_gpus.svg", mfu_vs_gpus(ok, max_series));
  const bool any_breakdown =
      std::any_of(ok.begin(), ok.end(), [](const SweepRecord* r) { return !r->breakdown.empty(); });
  if (any_breakdown) put("breakdown.svg", breakdown_bars(ok, max_bars));
  const bool any_memory = std::any_of(ok.begin(), ok.end(), [](const SweepRecord* r) {
    return r->has_metric("memory_per_gpu_GiB");
  });
  if (any_memory) put("mfu_vs_memory.svg", mfu_vs_memory(ok));
  outputs.commit();
  return written;
}

}  // namespace clustersim::sweep
