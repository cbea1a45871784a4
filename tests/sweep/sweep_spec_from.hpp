// A sweep file given as text in a test.
#pragma once

#include <string>

#include "core/json_reader.hpp"
#include "sweep/sweep_spec.hpp"

namespace clustersim::test {

// Parses `text` as if it were the file tests/sweep/data/inline.json, so that relative base
// paths resolve as they do for the sweep files there.
inline sweep::SweepSpec spec_from(const std::string& text) {
  const std::string file = std::string(CLUSTERSIM_SOURCE_DIR) + "/tests/sweep/data/inline.json";
  return sweep::parse_sweep_spec(JsonDocument::parse(text, file));
}

}  // namespace clustersim::test
