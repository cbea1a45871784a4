// Output helpers for subcommands: JSON files written atomically, number formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"

namespace clustersim::cli {

// Writes `value` as pretty JSON to `path` atomically (a temporary file renamed over it).
void write_json_file(const std::string& path, const nlohmann::json& value);
// The text write_json_file writes.
std::string json_text(const nlohmann::json& value);

// Fixed-point formatting with `digits` decimals.
std::string fixed(double value, int digits);
// "1.23 GiB", "512 MiB" style.
std::string human_bytes(double bytes);
// "12.3 ms", "1.20 s", "4.5 us".
std::string human_seconds(double seconds);

// One "  label   value" line of a command's text report, the label padded to `width` columns.
void label_row(std::ostream& os, const std::string& label, const std::string& value,
               std::size_t width);
// The "system" line (the GPU's fitted and measured system parameters) and, when the step
// replays CUDA graphs, the "kernel launches" line: what `run` and `check` both print.
void system_rows(std::ostream& os, const Scenario& s, const models::ComputeCalibration& compute,
                 std::size_t width);

}  // namespace clustersim::cli
