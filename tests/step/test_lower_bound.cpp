// The step-time lower bound (step/lower_bound.hpp): its closed form on hand-written 1F1B
// programs, and the relation bound <= simulated step time (and <= the step with free
// communication, the schedule alone) on simulated layouts of the small model.
#include <catch2/catch.hpp>

#include "step/lower_bound.hpp"
#include "step/simulate_step.hpp"
#include "tests/step/fixtures.hpp"
#include "tools/step_inputs.hpp"
#include "workload/workload.hpp"

using namespace clustersim;

namespace {

using workload::Op;
using workload::OpKind;
using workload::PassKind;

Op compute_op(PassKind pass, int mb, double seconds) {
  Op op;
  op.kind = OpKind::compute;
  op.pass = pass;
  op.micro_batch = mb;
  op.chunk = 0;
  op.time_s = seconds;
  return op;
}

Op message(OpKind kind, PassKind pass, int mb, int virtual_stage) {
  Op op;
  op.kind = kind;
  op.pass = pass;
  op.micro_batch = mb;
  op.chunk = 0;
  op.virtual_stage = virtual_stage;
  return op;
}

// Stage s of p uniform stages under 1F1B (Narayanan et al. SC'21 figure 4): p - 1 - s warm-up
// forwards, then one forward and one backward at a time, then the cool-down backwards. A
// forward takes f seconds, a backward b.
workload::StageProgram one_f_one_b(int s, int p, int m, double f, double b) {
  workload::StageProgram program;
  program.stage = s;
  auto forward = [&](int mb) {
    if (s > 0) program.ops.push_back(message(OpKind::recv, PassKind::forward, mb, s));
    program.ops.push_back(compute_op(PassKind::forward, mb, f));
    if (s < p - 1) program.ops.push_back(message(OpKind::send, PassKind::forward, mb, s + 1));
    program.ops.close_pass(mb);
  };
  auto backward = [&](int mb) {
    if (s < p - 1) program.ops.push_back(message(OpKind::recv, PassKind::backward, mb, s));
    program.ops.push_back(compute_op(PassKind::backward, mb, b));
    if (s > 0) program.ops.push_back(message(OpKind::send, PassKind::backward, mb, s - 1));
    program.ops.close_pass(mb);
  };
  const int warmup = std::min(p - 1 - s, m);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) forward(next_f);
  while (next_f < m) {
    forward(next_f++);
    backward(next_b++);
  }
  while (next_b < m) backward(next_b++);
  return program;
}

workload::Workload uniform_pipeline(int p, int m, double f, double b) {
  workload::Workload w;
  w.pp = p;
  w.micro_batches = m;
  for (int s = 0; s < p; ++s) w.stages.push_back(one_f_one_b(s, p, m, f, b));
  return w;
}

step::StepReport simulate(const Scenario& s, bool free_communication) {
  step::StepOptions o;
  o.record_trace = false;
  o.free_communication = free_communication;
  return step::simulate_step_isolated(s, cli::load_step_calibrations(s), o);
}

}  // namespace

TEST_CASE("The bound of uniform 1F1B stages is the closed-form step with its bubble",
          "[step][bound]") {
  // p stages, m micro-batches, forward f and backward b per stage: a step of free
  // communication takes m(f + b) + (p - 1)(f + b) (Narayanan et al. SC'21 section 2.2.1).
  const int p = GENERATE(1, 2, 4);
  const int m = GENERATE(1, 4, 8);
  const double f = 1.0, b = 2.0;
  const step::StepBound bound =
      step::step_time_lower_bound(uniform_pipeline(p, m, f, b), PipelineSchedule::one_f_one_b);
  CHECK(bound.step_time_s == Approx(m * (f + b) + (p - 1) * (f + b)).epsilon(1e-12));
  CHECK(bound.compute_s == Approx(m * (f + b)).epsilon(1e-12));
  CHECK(bound.bubble_s == Approx((p - 1) * (f + b)).epsilon(1e-12).margin(1e-12));
  // DualPipe's chains start at both ends: only the compute counts.
  const step::StepBound dual =
      step::step_time_lower_bound(uniform_pipeline(p, m, f, b), PipelineSchedule::dualpipe);
  CHECK(dual.step_time_s == Approx(m * (f + b)).epsilon(1e-12));
}

TEST_CASE("Programs of another shape get the compute alone, not a bubble they may not have",
          "[step][bound]") {
  // Stage 1 computes before its first receive: its compute may start at once, so no chain
  // applies to it; the bound is the larger stage's compute.
  workload::Workload w = uniform_pipeline(2, 4, 1.0, 2.0);
  workload::StageProgram early;
  early.stage = 1;
  early.ops.push_back(compute_op(PassKind::forward, 0, 5.0));
  early.ops.close_pass(0);
  for (const Op& op : w.stages[1].ops) early.ops.push_back(op);
  early.ops.close_pass(3);
  w.stages[1] = std::move(early);
  const step::StepBound bound = step::step_time_lower_bound(w, PipelineSchedule::one_f_one_b);
  CHECK(bound.step_time_s == Approx(4 * 3.0 + 5.0).epsilon(1e-12));
  CHECK(bound.bubble_s == 0);
}

TEST_CASE("The bound is at most the simulated step, with or without communication",
          "[step][bound]") {
  // Expected relation: bound <= step with free communication (the schedule alone) <= step.
  struct Layout {
    int gpus, dp, tp, pp, vpp, zero;
    const char* schedule;
    bool moe;
  };
  const Layout layout = GENERATE(
      Layout{8, 8, 1, 1, 1, 0, "1f1b", false}, Layout{8, 4, 2, 1, 1, 1, "1f1b", false},
      Layout{8, 4, 1, 2, 1, 2, "1f1b", false}, Layout{8, 2, 1, 4, 1, 3, "1f1b", false},
      Layout{8, 2, 1, 4, 1, 1, "gpipe", false}, Layout{8, 4, 1, 2, 2, 1, "interleaved", false},
      Layout{8, 2, 1, 4, 2, 0, "interleaved", false}, Layout{8, 2, 1, 4, 1, 1, "zb-h1", false},
      Layout{8, 4, 1, 2, 1, 1, "dualpipe", false}, Layout{8, 8, 1, 1, 1, 1, "1f1b", true});
  nlohmann::json j = test::small_scenario(layout.gpus, layout.dp, layout.tp, layout.pp);
  j["parallelism"]["vpp"] = layout.vpp;
  j["parallelism"]["zero_stage"] = layout.zero;
  j["parallelism"]["schedule"] = layout.schedule;
  j["training"]["global_batch"] = layout.dp * 8;
  if (layout.moe) {
    j["parallelism"]["ep"] = 8;
    j["model"]["moe"] = test::small_moe();
  }
  const Scenario s = test::load(j);
  const step::StepBound bound = step::step_time_lower_bound(s, cli::load_step_calibrations(s));
  const step::StepReport free = simulate(s, true);
  const step::StepReport real = simulate(s, false);
  REQUIRE(free.completed);
  REQUIRE(real.completed);
  INFO(layout.schedule << " pp " << layout.pp << " vpp " << layout.vpp << " zero " << layout.zero
                       << ": bound " << bound.step_time_s << " s, free " << free.step_time_s
                       << " s, step " << real.step_time_s << " s");
  CHECK(bound.step_time_s > 0);
  CHECK(bound.step_time_s <= free.step_time_s * (1 + 1e-9));
  CHECK(bound.step_time_s <= real.step_time_s * (1 + 1e-9));
  if (layout.pp > 1 && std::string(layout.schedule) != "dualpipe") CHECK(bound.bubble_s > 0);
}
