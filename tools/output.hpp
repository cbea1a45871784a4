// Output helpers for subcommands: JSON files written atomically, number formatting.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace clustersim::cli
