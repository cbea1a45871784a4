// The calibrations a simulated step needs (step::StepCalibrations), read from the files the
// scenario's presets name: the GPU's kernel efficiencies (GpuSpec::compute_calibration, else
// the default file) and the cluster's network calibration (ClusterSpec::calibration; none:
// NCCL's cost model alone). The step itself reads no file.
#pragma once

#include "core/scenario.hpp"
#include "step/prepare.hpp"

namespace clustersim::cli {

// The one gate of every command that simulates a step (run, campaign, validate, calibrate
// --runs; sweep and regress run `clustersim run`): a model the step simulator cannot build yet
// is a ConfigError (exit 2) at /model. Today: any model with a "moe" block.
void refuse_unsimulated_model(const Scenario& scenario);

// For a simulation: refuse_unsimulated_model, then read_step_calibrations. Throws ConfigError
// naming the calibration file on a malformed one.
step::StepCalibrations load_step_calibrations(const Scenario& scenario);

// The same files without the gate, for commands that only describe the scenario (check).
step::StepCalibrations read_step_calibrations(const Scenario& scenario);

}  // namespace clustersim::cli
