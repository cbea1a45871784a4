#include "core/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "core/xml_escape.hpp"

namespace clustersim::svg {

namespace {

// Colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008).
const char* const kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#F0E442", "#000000"};
constexpr int kPaletteSize = 8;

constexpr double kMarginLeft = 70;
constexpr double kMarginRight = 170;  // room for the legend, at least
constexpr double kMarginTop = 40;
constexpr double kMarginBottom = 55;
constexpr double kFontPx = 12;
constexpr double kBarLabelFontPx = 10;
constexpr double kLineHeight = 12;    // a wrapped bar label's line step
constexpr double kLaneHeight = 14;    // the strip of lane markers under the plot
constexpr double kLegendSwatch = 30;  // swatch and gap before a legend name
constexpr double kLegendPad = 14;     // after the longest legend name
constexpr double kEmPerChar = 0.62;   // text_width's estimate

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < 1e-2)) {
    std::snprintf(buf, sizeof buf, "%.2g", v);
  } else if (a >= 100 || v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2g", v);
  }
  return buf;
}

// "Nice" tick step for a range (1, 2 or 5 times a power of ten), about `count` ticks.
double nice_step(double range, int count) {
  if (!(range > 0)) return 1;
  const double raw = range / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double nice = r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10;
  return nice * magnitude;
}

// Where the plot area lies in the picture: margins grown for long legend names, wrapped bar
// labels and a marker lane.
struct Layout {
  double width = 0, height = 0;                                        // the whole picture
  double left = kMarginLeft, right = 0, top = kMarginTop, bottom = 0;  // the plot area
  double lane = 0;  // height of the marker lane under the plot (0: none)
};

Layout layout(const Axes& a, const std::vector<std::string>& legend_names, double extra_bottom,
              bool lane) {
  double legend = 0;
  for (const auto& n : legend_names) legend = std::max(legend, text_width(n, kFontPx));
  const double margin_right = std::max(kMarginRight, kLegendSwatch + legend + kLegendPad);
  Layout l;
  l.width = a.width - kMarginRight + margin_right;
  l.lane = lane ? kLaneHeight : 0;
  l.height = a.height + extra_bottom + l.lane;
  l.right = l.width - margin_right;
  l.bottom = l.height - kMarginBottom - extra_bottom - l.lane;
  return l;
}

struct Frame {
  double x0, x1, y0, y1;  // data range
  Layout l;
  bool x_log2;
  double px(double x) const {
    const double a = x_log2 ? std::log2(std::max(x, 1e-300)) : x;
    const double lo = x_log2 ? std::log2(x0) : x0, hi = x_log2 ? std::log2(x1) : x1;
    return hi > lo ? l.left + (a - lo) / (hi - lo) * (l.right - l.left) : (l.left + l.right) / 2;
  }
  double py(double y) const {
    return y1 > y0 ? l.bottom - (y - y0) / (y1 - y0) * (l.bottom - l.top) : (l.top + l.bottom) / 2;
  }
};

void header(std::ostringstream& os, const Axes& a, const Layout& l) {
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(l.width) << "\" height=\""
     << num(l.height) << "\" viewBox=\"0 0 " << num(l.width) << " " << num(l.height)
     << "\" font-family=\"sans-serif\" font-size=\"" << num(kFontPx) << "\">\n"
     << "<rect width=\"" << num(l.width) << "\" height=\"" << num(l.height)
     << "\" fill=\"white\"/>\n"
     << "<text x=\"" << num(l.width / 2) << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
     << xml_escape(a.title) << "</text>\n";
}

void axes(std::ostringstream& os, const Axes& a, const Frame& f, bool numeric_x) {
  const Layout& l = f.l;
  os << "<rect x=\"" << num(l.left) << "\" y=\"" << num(l.top) << "\" width=\""
     << num(l.right - l.left) << "\" height=\"" << num(l.bottom - l.top)
     << "\" fill=\"none\" stroke=\"#444\"/>\n";
  const double ystep = nice_step(f.y1 - f.y0, 6);
  for (double y = std::ceil(f.y0 / ystep) * ystep; y <= f.y1 + ystep * 1e-9; y += ystep) {
    os << "<line x1=\"" << num(l.left) << "\" x2=\"" << num(l.right) << "\" y1=\"" << num(f.py(y))
       << "\" y2=\"" << num(f.py(y)) << "\" stroke=\"#ddd\"/>\n"
       << "<text x=\"" << num(l.left - 6) << "\" y=\"" << num(f.py(y) + 4)
       << "\" text-anchor=\"end\">" << tick_label(y) << "</text>\n";
  }
  if (numeric_x) {
    std::vector<double> ticks;
    if (f.x_log2) {
      for (double x = std::pow(2.0, std::floor(std::log2(f.x0))); x <= f.x1 * 1.0000001; x *= 2) {
        if (x >= f.x0 * 0.9999999) ticks.push_back(x);
      }
    } else {
      const double xstep = nice_step(f.x1 - f.x0, 8);
      for (double x = std::ceil(f.x0 / xstep) * xstep; x <= f.x1 + xstep * 1e-9; x += xstep) {
        ticks.push_back(x);
      }
    }
    for (double x : ticks) {
      os << "<text x=\"" << num(f.px(x)) << "\" y=\"" << num(l.bottom + l.lane + 18)
         << "\" text-anchor=\"middle\">" << tick_label(x) << "</text>\n";
    }
  }
  os << "<text x=\"" << num((l.left + l.right) / 2) << "\" y=\"" << num(l.height - 12)
     << "\" text-anchor=\"middle\">" << xml_escape(a.x_label) << "</text>\n"
     << "<text transform=\"translate(16," << num((l.top + l.bottom) / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(a.y_label) << "</text>\n";
}

void legend_entry(std::ostringstream& os, const Layout& l, int row, const char* colour,
                  const std::string& name) {
  const double x = l.right + 12, y = l.top + 10 + row * 18;
  os << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 9) << "\" width=\"12\" height=\"10\" fill=\""
     << colour << "\"/>\n<text x=\"" << num(x + 18) << "\" y=\"" << num(y) << "\">"
     << xml_escape(name) << "</text>\n";
}

// `text` broken at spaces into lines of at most `width` pixels at `font_px` (a word longer than
// that is a line of its own).
std::vector<std::string> wrap(const std::string& text, double width, double font_px) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string word, line;
  while (words >> word) {
    const std::string longer = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width(longer, font_px) > width) {
      lines.push_back(line);
      line = word;
    } else {
      line = longer;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

double text_width(const std::string& text, double font_px) {
  // Characters, not bytes: UTF-8 continuation bytes (10xxxxxx) do not start one.
  const auto chars = std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
  return static_cast<double>(chars) * kEmPerChar * font_px;
}

std::string line_chart(const Axes& a, const std::vector<Series>& series,
                       const std::vector<Marker>& markers, bool identity_line) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0;
  double y0 = 0, y1 = -std::numeric_limits<double>::infinity();
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      x0 = std::min(x0, p.x);
      x1 = std::max(x1, p.x);
      y0 = std::min(y0, p.y);
      y1 = std::max(y1, p.y);
    }
  }
  for (const auto& m : markers) {
    x0 = std::min(x0, m.x);
    x1 = std::max(x1, m.x);
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1;
  if (!std::isfinite(y1) || y1 <= y0) y1 = y0 + 1;
  if (identity_line) {
    x0 = y0 = std::min(x0, y0);
    x1 = y1 = std::max(x1, y1);
  }
  y1 += (y1 - y0) * 0.05;
  if (a.y_min) y0 = *a.y_min;
  if (a.y_max) y1 = *a.y_max;
  if (a.x_log2 && x0 <= 0) x0 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  std::vector<std::string> names;
  for (const auto& sr : series) names.push_back(sr.name);
  std::map<std::string, int> kinds;  // marker kind -> palette index, after the series' colours
  bool lane = false;
  for (const auto& m : markers) {
    kinds.emplace(m.kind, 0);
    lane = lane || m.lane;
  }
  int k = 0;
  for (auto& [kind, colour] : kinds) {
    colour = static_cast<int>((series.size() + k++) % kPaletteSize);
    names.push_back(kind);
  }
  const Frame f{x0, x1, y0, y1, layout(a, names, 0, lane), a.x_log2};
  const Layout& l = f.l;

  std::ostringstream os;
  header(os, a, l);
  axes(os, a, f, true);
  if (identity_line) {
    os << "<line x1=\"" << num(f.px(x0)) << "\" y1=\"" << num(f.py(x0)) << "\" x2=\""
       << num(f.px(x1)) << "\" y2=\"" << num(f.py(x1))
       << "\" stroke=\"#888\" stroke-dasharray=\"4 4\"/>\n";
  }
  for (const auto& m : markers) {
    const double top = m.lane ? l.bottom + 3 : l.top;
    const double bottom = m.lane ? l.bottom + l.lane - 3 : l.bottom;
    os << "<line x1=\"" << num(f.px(m.x)) << "\" x2=\"" << num(f.px(m.x)) << "\" y1=\"" << num(top)
       << "\" y2=\"" << num(bottom) << "\" stroke=\"" << kPalette[kinds[m.kind]]
       << "\" stroke-width=\"1\" opacity=\"0.7\"/>\n";
  }
  int row = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto& sr = series[i];
    const char* colour = kPalette[i % kPaletteSize];
    if (sr.line && sr.points.size() > 1) {
      os << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"";
      for (const auto& p : sr.points) os << num(f.px(p.x)) << "," << num(f.py(p.y)) << " ";
      os << "\"/>\n";
    }
    if (sr.markers || !sr.line || sr.points.size() == 1) {
      for (const auto& p : sr.points) {
        os << "<circle cx=\"" << num(f.px(p.x)) << "\" cy=\"" << num(f.py(p.y))
           << "\" r=\"3.5\" fill=\"" << colour << "\"/>\n";
        if (!p.label.empty()) {
          os << "<text x=\"" << num(f.px(p.x) + 5) << "\" y=\"" << num(f.py(p.y) - 5)
             << "\" font-size=\"10\">" << xml_escape(p.label) << "</text>\n";
        }
      }
    }
    legend_entry(os, l, row++, colour, sr.name);
  }
  for (const auto& [kind, colour] : kinds) legend_entry(os, l, row++, kPalette[colour], kind);
  os << "</svg>\n";
  return os.str();
}

std::string stacked_bars(const Axes& a, const std::vector<std::string>& segment_names,
                         const std::vector<BarGroup>& bars) {
  double top_value = 0;
  for (const auto& b : bars) {
    double sum = 0;
    for (double v : b.values) sum += std::max(v, 0.0);
    top_value = std::max(top_value, sum);
  }
  if (!(top_value > 0)) top_value = 1;
  // Each bar's label wrapped under it, horizontally: the bottom margin grows with the lines.
  const double slot_guess =
      (a.width - kMarginLeft - kMarginRight) / std::max<std::size_t>(bars.size(), 1);
  std::vector<std::vector<std::string>> labels;
  std::size_t lines = 1;
  for (const auto& b : bars) {
    labels.push_back(wrap(b.label, slot_guess - 4, kBarLabelFontPx));
    lines = std::max(lines, labels.back().size());
  }
  const double extra_bottom = static_cast<double>(lines - 1) * kLineHeight;
  const Frame f{0,
                1,
                a.y_min.value_or(0),
                a.y_max.value_or(top_value * 1.05),
                layout(a, segment_names, extra_bottom, false),
                false};
  const Layout& l = f.l;
  std::ostringstream os;
  header(os, a, l);
  axes(os, a, f, false);
  const double slot = bars.empty() ? 1 : (l.right - l.left) / bars.size();
  const double bar_width = slot * 0.7;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double x = l.left + slot * i + (slot - bar_width) / 2;
    double base = 0;
    for (std::size_t k = 0; k < bars[i].values.size(); ++k) {
      const double v = std::max(bars[i].values[k], 0.0);
      os << "<rect x=\"" << num(x) << "\" y=\"" << num(f.py(base + v)) << "\" width=\""
         << num(bar_width) << "\" height=\"" << num(f.py(base) - f.py(base + v)) << "\" fill=\""
         << kPalette[k % kPaletteSize] << "\"><title>" << xml_escape(bars[i].label) << ": "
         << xml_escape(k < segment_names.size() ? segment_names[k] : "") << " " << tick_label(v)
         << "</title></rect>\n";
      base += v;
    }
    for (std::size_t j = 0; j < labels[i].size(); ++j) {
      os << "<text x=\"" << num(x + bar_width / 2) << "\" y=\""
         << num(l.bottom + 16 + static_cast<double>(j) * kLineHeight)
         << "\" text-anchor=\"middle\" font-size=\"" << num(kBarLabelFontPx) << "\">"
         << xml_escape(labels[i][j]) << "</text>\n";
    }
  }
  for (std::size_t k = 0; k < segment_names.size(); ++k) {
    legend_entry(os, l, static_cast<int>(k), kPalette[k % kPaletteSize], segment_names[k]);
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace clustersim::svg
