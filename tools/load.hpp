// Loading a command's input, in one pass before anything runs: the loader
// (input/input_loader.hpp) with the cluster graph's link names, which the loader cannot build
// itself, so that a fault naming a link the cluster does not have is refused at its JSON pointer;
// the checkpoint resolved for the model's size; and the calibration files the scenario's presets
// name (tools/step_inputs.hpp). Every command that reads a scenario file (check, run, campaign)
// loads it here, so each refuses the same bad input, at its file and JSON pointer (exit 2),
// whatever it would go on to do.
#pragma once

#include <string>

#include "core/input_bundle.hpp"
#include "step/prepare.hpp"

namespace clustersim::cli {

struct CommandInput : InputBundle {
  // The GPU's kernel efficiencies and the cluster's network calibration.
  step::StepCalibrations calibrations;
};

// Throws ConfigError naming the file (scenario, preset or calibration) and the JSON pointer.
CommandInput load_command_input(const std::string& path);

}  // namespace clustersim::cli
