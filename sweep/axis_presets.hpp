// The presets and files a sweep file names, read into self-contained JSON: the base scenario's
// path, and the values of the "model", "cluster" and "gpu" axes.
//
// A model value is a preset name (models/presets/). A cluster or GPU value is a preset name
// (topologies/clusters/, topologies/gpus/), the path of a JSON file (a value with a '/' or
// ending in ".json"; next to the sweep file first, then in the data directory) or an inline
// object. Files and objects are checked by the loader's own rules, a citation for every number
// included, with errors at their file and JSON pointer; a hypothetical value without sources
// belongs in the hardware axes (hardware_axes.hpp), which mark the point a what-if.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.hpp"

namespace clustersim::sweep {

// `path` as given when absolute, else next to `sweep_file`, else in the data directory;
// ConfigError at `where` naming `what` ("base scenario", "cluster file") when none exists.
std::string resolve_input_path(const std::string& path, const std::string& sweep_file,
                               const JsonNode& where, const std::string& what);

// The preset `name` of `folder` (e.g. "models/presets") as JSON; an unknown name is a
// ConfigError at `where` suggesting the nearest one.
nlohmann::json load_preset_json(const std::string& folder, const std::string& name,
                                const char* what, const JsonNode& where);

// A cluster (a preset name or an object) with its GPU inlined.
nlohmann::json inline_cluster(nlohmann::json cluster, const JsonNode& where);

// A value of the "cluster" axis (its GPU inlined) or of the "gpu" axis, as JSON.
nlohmann::json cluster_value(const JsonNode& value, const std::string& sweep_file);
nlohmann::json gpu_value(const JsonNode& value, const std::string& sweep_file);

}  // namespace clustersim::sweep
