// Phase two of loading a scenario: the rules that tie its fields together (dp·tp·pp·cp = gpus,
// tp divides the heads, the batch splits into micro-batches, ...). Each error points at the key
// that has to change.
#pragma once

#include "core/scenario.hpp"

namespace clustersim {

// Throws ConfigError at the offending key of scenario.file. Appends warnings (valid but
// questionable choices) to scenario.warnings.
void validate_scenario(Scenario& scenario);

}  // namespace clustersim
