// The calibrations a simulated step needs (step::StepCalibrations), read from the files the
// scenario's presets name: the GPU's kernel efficiencies (GpuSpec::compute_calibration, else
// the default file) and the cluster's network calibration (ClusterSpec::calibration; none:
// NCCL's cost model alone). The step itself reads no file.
#pragma once

#include "core/scenario.hpp"
#include "step/prepare.hpp"

namespace clustersim::cli {

// The calibration files of the scenario's GPU and cluster. Throws ConfigError naming the
// calibration file and the JSON pointer on a malformed one, or the scenario's
// /training/attention when the GPU's calibration has no figures for the kernel it names.
// Commands that read a scenario file get them from load_command_input (tools/load.hpp).
step::StepCalibrations load_step_calibrations(const Scenario& scenario);

}  // namespace clustersim::cli
