// The scenario's `comm.nccl` object: NCCL environment variables by their real names, checked
// against NCCL's own ranges (NVIDIA/nccl docs/userguide env.rst, v2.30.7-1).
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "core/nccl_settings.hpp"

namespace clustersim {

// Names of the NCCL_* variables the simulator knows (every variable of NCCL's user guide at the
// modelled version, input/nccl_variables.hpp), for suggestions.
const std::vector<std::string>& known_nccl_variables();

// Parses the `comm.nccl` object: keys are NCCL_* names, values strings or integers.
// Documented variables the simulator does not model are accepted with a note saying why, their
// value checked where the guide gives a type. Unknown names are a ConfigError suggesting the
// nearest known one.
NcclSettings parse_nccl_settings(const JsonNode& node);

}  // namespace clustersim
