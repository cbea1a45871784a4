#include "tools/step_inputs.hpp"

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "validation/calibration.hpp"

namespace clustersim::cli {

void refuse_unsimulated_model(const Scenario& scenario) {
  if (!scenario.model.moe) return;
  throw ConfigError(scenario.file, "/model",
                    "MoE layers are not simulated yet: model \"" + scenario.model.name +
                        "\" has a \"moe\" block; `clustersim check` gives its parameters and "
                        "memory");
}

step::StepCalibrations read_step_calibrations(const Scenario& scenario) {
  step::StepCalibrations c;
  c.compute =
      models::load_compute_calibration(models::compute_calibration_path(scenario.cluster.gpu));
  c.network = validation::load_network_calibration(scenario.cluster);
  return c;
}

step::StepCalibrations load_step_calibrations(const Scenario& scenario) {
  refuse_unsimulated_model(scenario);
  return read_step_calibrations(scenario);
}

}  // namespace clustersim::cli
