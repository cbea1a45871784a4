// The execution sections of a scenario ("parallelism", "training", "comm"): phase one only,
// types, ranges and enum names; the rules that tie them to the model and the cluster are in
// input/scenario_rules.hpp.
#pragma once

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::input {

Parallelism parse_parallelism(const JsonNode& node);
Training parse_training(const JsonNode& node);
CommSpec parse_comm(const JsonNode& node);

}  // namespace clustersim::input
