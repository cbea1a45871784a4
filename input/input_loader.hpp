// The loader: one pass from a scenario file to a validated InputBundle (core/input_bundle.hpp).
// It reads the scenario and the presets it names (input/scenario_loader.hpp), then its
// "faults", "checkpointing", "cost" and "campaign" sections (input/faults_section.hpp,
// input/run_sections.hpp), checks that the run they describe stays within the work limits of
// input/limits.hpp, and, when the caller can build the cluster graph, that fault links exist.
// Every error is a ConfigError naming the file and JSON pointer; every command that reads a
// scenario loads it here, so the same input gets the same message everywhere.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/input_bundle.hpp"
#include "core/json_reader.hpp"

namespace clustersim {

struct LoadOptions {
  // Names of the cluster graph's links for `gpus` GPUs of `cluster` (topologies/ builds the
  // graph; the loader does not depend on it). When set, the links the faults name are checked
  // against them, at the fault's JSON pointer.
  std::function<std::vector<std::string>(const ClusterSpec& cluster, int gpus)> link_names;
};

InputBundle load_input(const std::string& path, const LoadOptions& options = {});
InputBundle load_input(const JsonDocument& document, const LoadOptions& options = {});

}  // namespace clustersim
