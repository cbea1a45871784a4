// What step tests hand to prepare_step and estimate_step_work besides the scenario.
#pragma once

#include "step/prepare.hpp"
#include "tests/workload/fixtures.hpp"

namespace clustersim::test {

// The shipped default kernel efficiencies and no network calibration (NCCL's cost model).
inline step::StepCalibrations step_calibrations() {
  step::StepCalibrations c;
  c.compute =
      models::load_compute_calibration(source_path("validation/data/compute_efficiency.json"));
  return c;
}

}  // namespace clustersim::test
