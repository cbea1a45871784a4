// load -> prepare -> replay -> report for one step; 1-bit Adam's two phases; the isolated run.
#include "step/simulate_step.hpp"

#include <chrono>
#include <cmath>

#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "step/phase_report.hpp"
#include "step/prepare.hpp"
#include "step/replay.hpp"
#include "step/work_estimate.hpp"

namespace clustersim::step {

double TimeBreakdown::total() const {
  return compute_s + tp_s + ep_s + pp_s + dp_s + bubble_s + optimizer_s + idle_s;
}

namespace {

// Everything one simulation of one phase measures.
StepReport simulate_phase(const Scenario& s, const StepCalibrations& calibrations,
                          const StepOptions& opt, bool compressed) {
  const auto wall0 = std::chrono::steady_clock::now();
  if (opt.budget.bytes > 0) {
    StepOptions phase = opt;
    phase.compressed_phase = compressed;
    enforce_work_budget(s, estimate_step_work(s, calibrations, phase), opt.budget);
  }
  const PreparedStep prepared = prepare_step(s, calibrations, opt.faults, compressed);
  if (opt.on_prepared) opt.on_prepared(prepared);
  sim::SimulationOptions so;
  so.nccl = s.comm.nccl;
  so.engine.stack_guard = opt.actor_stack_guard;
  so.analytic_sharing = !opt.exact;
  so.network_calibration = prepared.network;
  sim::Simulation sim(prepared.graph, so);
  StepFaults net_faults;  // links and lost nodes go to the engine; slow GPUs are the replay's
  net_faults.links = opt.faults.links;
  net_faults.lost_nodes = opt.faults.lost_nodes;
  if (!net_faults.empty()) sim.apply_faults(net_faults);

  Replay replay(prepared, opt, sim);
  replay.spawn_all();
  sim.run();
  StepReport r = report_phase(prepared, opt, replay, sim);
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

// 1-bit Adam: headline numbers are the run average of the warm-up phase `r` and the compressed
// phase `comp`; the breakdown and trace stay the warm-up's.
void average_phases(StepReport& r, const StepReport& comp, const Scenario& s) {
  const double wf = s.comm.compression.warmup_fraction;
  r.phases = {{"warm-up", wf, r.step_time_s, r.mfu, r.completed},
              {"compressed", 1 - wf, comp.step_time_s, comp.mfu, comp.completed}};
  if (!r.completed || !comp.completed) return;
  const double avg = wf * r.step_time_s + (1 - wf) * comp.step_time_s;
  const double scale = r.step_time_s / avg;
  r.step_time_s = avg;
  r.tokens_per_s = s.tokens_per_step() / avg;
  r.mfu *= scale;
  r.hfu *= scale;
  r.mfu_megatron *= scale;
  r.mfu_palm *= scale;
  r.notes.push_back("1-bit Adam: step time, tokens/s and MFU are averages over the run (warm-up " +
                    std::to_string(static_cast<int>(std::lround(100 * wf))) +
                    "% of it); the breakdown and trace are the warm-up phase's");
}

}  // namespace

StepReport simulate_step(const Scenario& s, const StepCalibrations& calibrations,
                         const StepOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const bool onebit = s.comm.compression.kind == Compression::onebit_adam;
  if (!onebit || options.single_phase) {
    StepReport r = simulate_phase(s, calibrations, options, onebit && options.compressed_phase);
    r.phases.push_back(
        {onebit ? (options.compressed_phase ? "compressed" : "warm-up") : "full precision", 1.0,
         r.step_time_s, r.mfu, r.completed});
    return r;
  }
  // The compressed phase in a child process (one engine per process), the warm-up phase here
  // (with its trace).
  StepOptions child = options;
  child.single_phase = true;
  child.compressed_phase = true;
  child.record_trace = false;
  const StepReport comp = simulate_step_isolated(s, calibrations, child);
  StepReport r = simulate_phase(s, calibrations, options, false);
  average_phases(r, comp, s);
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

StepReport simulate_step_isolated(const Scenario& s, const StepCalibrations& calibrations,
                                  const StepOptions& options) {
  StepOptions o = options;
  o.record_trace = false;
  o.on_prepared = nullptr;
  const std::string json =
      sim::run_isolated([&] { return to_json(simulate_step(s, calibrations, o)).dump(); });
  return step_report_from_json(nlohmann::json::parse(json));
}

}  // namespace clustersim::step
