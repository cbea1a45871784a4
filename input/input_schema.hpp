// The JSON Schema (Draft 2020-12) of the input files, generated from the loaders' own key
// tables (input/input_keys.hpp), so it cannot drift from what the loader accepts. It states
// each object's keys (additionalProperties false: the loader refuses unknown keys), their
// types, ranges, accepted names, required keys and meaning. What the loader checks across keys
// (tp dividing the heads, one rate per failure cause, a time given once, citations in
// "sources" of the keys set) is left to the loader: `clustersim check` remains the full test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace clustersim::input {

// The file kinds a schema is printed for: "scenario", "model", "gpu", "cluster".
const std::vector<std::string>& schema_kinds();

// The schema of one file kind: the kind's object and every object it refers to, in $defs.
// Throws std::invalid_argument for a kind not in schema_kinds().
nlohmann::json input_schema(const std::string& kind);

}  // namespace clustersim::input
