// The scenario's `comm.nccl` object: NCCL environment variables by their real names, checked
// against NCCL's own ranges (NVIDIA/nccl docs/userguide env.rst, v2.30.7-1).
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "core/nccl_settings.hpp"

namespace clustersim {

// Names of the NCCL_* variables the simulator knows, for suggestions.
const std::vector<std::string>& known_nccl_variables();

// Parses the `comm.nccl` object: keys are NCCL_* names, values strings or integers.
// Unknown names are a ConfigError suggesting the nearest known one.
NcclSettings parse_nccl_settings(const JsonNode& node);

}  // namespace clustersim
