#include "tools/step_inputs.hpp"

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "validation/calibration.hpp"

namespace clustersim::cli {

namespace {

// The GPU's kernel efficiencies with the attention kernel the scenario names in force; a kernel
// the calibration has no figures for is an error at the scenario's training.attention.
models::ComputeCalibration compute_calibration(const Scenario& scenario) {
  models::ComputeCalibration cal =
      models::load_compute_calibration(models::compute_calibration_path(scenario.cluster.gpu));
  const AttentionKernel kernel = scenario.training.attention;
  if (fused(kernel) && !models::select_attention_kernel(cal, to_string(kernel))) {
    throw ConfigError(scenario.file, "/training/attention",
                      std::string("no figures for attention kernel \"") + to_string(kernel) +
                          "\" in " + cal.file + " (attention.other_kernels), the compute " +
                          "calibration of GPU " + scenario.cluster.gpu.name +
                          "; \"flash\" runs the fused kernel it measures");
  }
  return cal;
}

}  // namespace

step::StepCalibrations load_step_calibrations(const Scenario& scenario) {
  step::StepCalibrations c;
  c.compute = compute_calibration(scenario);
  c.network = validation::load_network_calibration(scenario.cluster);
  return c;
}

}  // namespace clustersim::cli
