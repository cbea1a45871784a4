#include "tools/step_inputs.hpp"

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "validation/calibration.hpp"

namespace clustersim::cli {

step::StepCalibrations read_step_calibrations(const Scenario& scenario) {
  step::StepCalibrations c;
  c.compute =
      models::load_compute_calibration(models::compute_calibration_path(scenario.cluster.gpu));
  c.network = validation::load_network_calibration(scenario.cluster);
  return c;
}

step::StepCalibrations load_step_calibrations(const Scenario& scenario) {
  return read_step_calibrations(scenario);
}

}  // namespace clustersim::cli
