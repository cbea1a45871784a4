#include <catch2/catch.hpp>

#include "core/svg_plot.hpp"

using namespace clustersim;

TEST_CASE("a line chart is a complete SVG document with one polyline per series") {
  svg::Axes axes;
  axes.title = "MFU <by> GPUs";
  const std::string out =
      svg::line_chart(axes, {{"dp", {{64, 0.5}, {128, 0.4}}}, {"tp", {{64, 0.45}, {128, 0.44}}}},
                      {{100, "failure"}});
  CHECK(out.rfind("<svg", 0) == 0);
  CHECK(out.find("</svg>") != std::string::npos);
  CHECK(out.find("MFU &lt;by&gt; GPUs") != std::string::npos);
  std::size_t polylines = 0;
  for (auto pos = out.find("<polyline"); pos != std::string::npos;
       pos = out.find("<polyline", pos + 1)) {
    ++polylines;
  }
  CHECK(polylines == 2);
}

TEST_CASE("a stacked bar chart draws one rectangle per non-empty segment") {
  svg::Axes axes;
  const std::string out =
      svg::stacked_bars(axes, {"compute", "comm"}, {{"a", {1, 2}}, {"b", {3, 0}}});
  std::size_t rects = 0;
  for (auto pos = out.find("<rect x"); pos != std::string::npos;
       pos = out.find("<rect x", pos + 1)) {
    ++rects;
  }
  // 4 segments + the plot frame + 2 legend swatches.
  CHECK(rects == 4 + 1 + 2);
}
