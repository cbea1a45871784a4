// Small SVG charts with no external plotting program: line and scatter charts with several
// series and event markers, and stacked bar charts. Output is a complete SVG document.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace clustersim::svg {

struct Point {
  double x = 0;
  double y = 0;
  std::string label;  // optional text shown next to the point (scatter)
};

struct Series {
  std::string name;
  std::vector<Point> points;
  bool line = true;      // connect the points
  bool markers = false;  // draw a dot at each point
};

// An event at x: a vertical line across the plot (a failure, a restart), or with `lane` a short
// tick in a thin strip under the plot (frequent, regular events such as checkpoints, which as
// lines would cover the data).
struct Marker {
  double x = 0;
  std::string kind;  // markers of one kind share a colour and a legend entry
  bool lane = false;
};

struct Axes {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool x_log2 = false;          // logarithmic x axis, base 2 (GPU counts)
  std::optional<double> y_min;  // fixed y range (otherwise from the data, including 0)
  std::optional<double> y_max;
  // The plot's size; the picture grows beyond it where the legend's names or the bars' labels
  // need room, so that no text leaves the canvas.
  double width = 800;
  double height = 480;
};

// The width of `text` in pixels at `font_px` in the sans-serif font the charts use, a generous
// estimate (0.62 em per character: DejaVu Sans averages about 0.55 em over letters and digits).
double text_width(const std::string& text, double font_px);

// Line/scatter chart. A diagonal y = x reference line is drawn when `identity_line` is set
// (predicted-against-reported plots).
std::string line_chart(const Axes& axes, const std::vector<Series>& series,
                       const std::vector<Marker>& markers = {}, bool identity_line = false);

struct BarGroup {
  std::string label;           // one bar
  std::vector<double> values;  // stacked segments, in the order of `segment_names`
};

// Stacked bar chart: one bar per group, segments stacked bottom-up.
std::string stacked_bars(const Axes& axes, const std::vector<std::string>& segment_names,
                         const std::vector<BarGroup>& bars);

}  // namespace clustersim::svg
