// SVG plots of a sweep's results (core/svg_plot.hpp; no external program).
#pragma once

#include <string>
#include <vector>

#include "sweep/results.hpp"

namespace clustersim::sweep {

// Writes, atomically, into `dir` (created if needed) the plots the records support:
//   mfu_vs_gpus.svg     MFU against GPU count, one line per layout series (the best
//                       `max_series` series by their best MFU)
//   breakdown.svg       stacked step-time breakdown of the `max_bars` points with the best MFU
//   mfu_vs_memory.svg   MFU against memory per GPU, one colour per ZeRO stage
// Returns the paths written (none when no record is ok with an MFU).
std::vector<std::string> write_plots(const std::vector<SweepRecord>& records,
                                     const std::string& dir, int max_series = 8, int max_bars = 12);

}  // namespace clustersim::sweep
