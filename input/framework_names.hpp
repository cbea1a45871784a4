// Keys that Megatron-LM and NeMo spell differently. People write scenarios from the launch
// scripts and configs of those frameworks; a key of theirs gets the clustersim key it maps to,
// at its JSON path, instead of a "did you mean" for an unrelated name.
#pragma once

#include "core/json_reader.hpp"

namespace clustersim::input {

// Fails at the first key of `parallelism` or `training` that is a Megatron-LM argument name
// (megatron/training/arguments.py, with dashes as underscores) or a NeMo config field, saying
// what to write instead. Keys clustersim knows are left to the section's own only_keys.
void refuse_framework_names(const JsonNode& section);

}  // namespace clustersim::input
