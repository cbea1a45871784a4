// The calibrations a simulated step needs (step::StepCalibrations), read from the files the
// scenario's presets name: the GPU's kernel efficiencies (GpuSpec::compute_calibration, else
// the default file) and the cluster's network calibration (ClusterSpec::calibration; none:
// NCCL's cost model alone). The step itself reads no file.
#pragma once

#include "core/scenario.hpp"
#include "step/prepare.hpp"

namespace clustersim::cli {

// For a simulation: the calibration files of the scenario's GPU and cluster. Throws ConfigError
// naming the calibration file on a malformed one.
step::StepCalibrations load_step_calibrations(const Scenario& scenario);

// The same files without the gate, for commands that only describe the scenario (check).
step::StepCalibrations read_step_calibrations(const Scenario& scenario);

}  // namespace clustersim::cli
