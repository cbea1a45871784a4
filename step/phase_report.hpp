// The report of one simulated phase: the critical class-stage and its breakdown, FLOPs and
// utilisation, link statistics (with the bytes the shortcuts did not simulate), the faults
// named, the modelling notes and memory. Internal to step/.
#pragma once

#include "sim/simulation.hpp"
#include "step/prepare.hpp"
#include "step/replay.hpp"
#include "step/simulate_step.hpp"
#include "step/step_report.hpp"

namespace clustersim::step {

// After sim.run(): everything but the phases and the wall time.
StepReport report_phase(const PreparedStep& prepared, const StepOptions& options, Replay& replay,
                        const sim::Simulation& sim);

}  // namespace clustersim::step
