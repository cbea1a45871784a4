// The step's work estimate (step/work_estimate.hpp): its op counts against a hand count, its
// extrapolation along the micro-batches against the programs built in full, and the refusal of
// a step above the budget.
#include <catch2/catch.hpp>
#include <map>
#include <utility>

#include "core/errors.hpp"
#include "step/simulate_step.hpp"
#include "step/work_estimate.hpp"
#include "tests/step/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;

namespace {

// The small model (8 layers) on 2 GPUs, DP 1 x TP 1 x PP 2, `micro_batches` per step, replayed
// from a CUDA graph: no pass of this small model waits for the host, so each is one kernel op.
nlohmann::json two_stages(int micro_batches) {
  nlohmann::json j = test::small_scenario(2, 1, 1, 2);
  j["training"]["global_batch"] = micro_batches;
  j["training"]["recompute"] = "none";
  j["training"]["cuda_graphs"] = "full_iteration";
  return j;
}

double ops_built(const Scenario& s) {
  double n = 0;
  for (const auto& st : workload::build_workload(s, test::compute_model(s)).stages) {
    n += static_cast<double>(st.ops.size());
  }
  return n;
}

}  // namespace

TEST_CASE("the op count of a two-stage step matches a hand count, extrapolated or built",
          "[step][work]") {
  // Per micro-batch each stage runs 4 layer forwards and 4 layer backwards (8 layers over 2
  // stages, TP 1: one kernel op per layer pass), the embedding (stage 0) or the LM head
  // (stage 1) forward and backward, one receive and one send: 12 ops. After the last backward
  // each stage launches its gradient buckets (one grad_ready each), waits for them and runs the
  // optimizer: buckets + 2. One activation and one gradient cross the boundary per micro-batch.
  const int m = GENERATE(4, 1000);  // 4 is built as is; 1000 > 4 pp is extrapolated
  const Scenario s = test::load(two_stages(m));
  // The buckets (the gradients' split) do not depend on the micro-batches.
  const Scenario four = test::load(two_stages(4));
  const workload::Workload w = workload::build_workload(four, test::compute_model(four));
  const double buckets =
      static_cast<double>(w.stages[0].buckets.size() + w.stages[1].buckets.size());
  const step::WorkEstimate e = step::estimate_step_work(s, test::step_calibrations());
  CHECK(e.ops == Approx(2 * (12.0 * m + 2) + buckets).epsilon(1e-12));
  CHECK(e.transfers == Approx(2.0 * m).epsilon(1e-12));
  CHECK(e.launches == Approx(buckets).epsilon(1e-12));
  CHECK(e.gathers == 0);
  CHECK(e.stages == 2);
  CHECK(e.actors == 2);
  CHECK(e.gpus == 2);
  // Stored once per stage: a forward and a backward (6 ops each), the last backward (6 +
  // its buckets) and the tail (2); passes: m forwards, m backwards and the tail per stage.
  CHECK(e.stored_ops == Approx(2 * 20.0 + buckets).epsilon(1e-12));
  CHECK(e.passes == Approx(2 * (2.0 * m + 1)).epsilon(1e-12));
  // 2 GPUs x 64 kB against (40 + buckets) x 128 B and 18 passes x 40 B at 4 micro-batches;
  // the 4,002 passes (160 kB) at 1000.
  CHECK(e.main_pointer == (m == 4 ? "/gpus" : "/training/global_batch"));
  // The bytes are the sum of the terms.
  CHECK(e.bytes == Approx(step::kStepBaseBytes + e.stored_ops * step::kBytesPerStoredOp +
                          e.passes * step::kBytesPerPass + 2 * step::kBytesPerGpu + e.actor_bytes));
}

TEST_CASE("the extrapolated op count equals the programs built in full, for every schedule",
          "[step][work]") {
  // 24 micro-batches on pp 2: counted at 4 and 8 and extrapolated, against the 24 built.
  const std::string schedule = GENERATE("1f1b", "gpipe", "interleaved", "zb-h1", "dualpipe");
  nlohmann::json j = two_stages(24);
  j["parallelism"]["schedule"] = schedule;
  if (schedule == "interleaved") j["parallelism"]["vpp"] = 2;
  const Scenario s = test::load(j);
  CAPTURE(schedule);
  CHECK(step::estimate_step_work(s, test::step_calibrations()).ops ==
        Approx(ops_built(s)).epsilon(1e-12));
}

TEST_CASE("more micro-batches add passes to the memory estimate, not the ops they run",
          "[step][work]") {
  const step::WorkEstimate few =
      step::estimate_step_work(test::load(two_stages(1000)), test::step_calibrations());
  const step::WorkEstimate many =
      step::estimate_step_work(test::load(two_stages(100000)), test::step_calibrations());
  // 99,000 more micro-batches: 12 more ops each per stage, walked; 2 more passes per stage,
  // stored.
  CHECK(many.ops - few.ops == Approx(2 * 12 * 99000.0));
  CHECK(many.stored_ops == few.stored_ops);
  CHECK(many.bytes - few.bytes == Approx(2 * 2 * 99000.0 * step::kBytesPerPass));
}

TEST_CASE("ZeRO-3 gathers, kept for the whole step, are counted per micro-batch", "[step][work]") {
  // ZeRO-3 on one stage of 8 layers: each layer's parameters (and the embedding's and the
  // head's) are gathered before their forward and their backward, every micro-batch.
  nlohmann::json j = test::small_scenario(2, 2, 1, 1);
  j["parallelism"]["zero_stage"] = 3;
  const int m = GENERATE(2, 12);
  j["training"]["global_batch"] = 2 * m;
  const Scenario s = test::load(j);
  const workload::Workload w = workload::build_workload(s, test::compute_model(s));
  const double gathers_per_pass = static_cast<double>(w.stages[0].gathers.size());
  const step::WorkEstimate e = step::estimate_step_work(s, test::step_calibrations());
  CHECK(e.gathers == Approx(2 * m * gathers_per_pass).epsilon(1e-12));
  CHECK(e.gather_bytes == Approx(e.gathers * step::kBytesPerGather));
}

TEST_CASE("exact mode counts every data-parallel replica's programs", "[step][work]") {
  nlohmann::json j = test::small_scenario(4, 2, 1, 2);
  j["training"]["recompute"] = "none";
  const Scenario s = test::load(j);
  step::StepOptions exact;
  exact.exact = true;
  const step::WorkEstimate shared = step::estimate_step_work(s, test::step_calibrations());
  const step::WorkEstimate each = step::estimate_step_work(s, test::step_calibrations(), exact);
  CHECK(shared.replica_classes == 1);
  CHECK(each.replica_classes == 2);
  CHECK(each.ops == Approx(2 * shared.ops));
  CHECK(each.actors == 4);
}

TEST_CASE("a step estimated above the budget is refused at the key of its main term",
          "[step][work]") {
  const Scenario s = test::load(two_stages(100000));
  const step::WorkEstimate e = step::estimate_step_work(s, test::step_calibrations());
  // 100000 micro-batches x 2 stages x 2 passes, plus the tails: 400,002 passes, 16 MB at 40 B
  // each, above a budget of 50 MB with the 48 MB base.
  CHECK(e.passes == 400002);
  CHECK_NOTHROW(step::enforce_work_budget(s, e, {}));  // no budget
  CHECK_NOTHROW(step::enforce_work_budget(s, e, {e.bytes, "exactly"}));
  try {
    step::enforce_work_budget(s, e, {50e6, "--max-memory 50M"});
    FAIL("no exception");
  } catch (const ConfigError& err) {
    CHECK(err.file() == "test.json");
    CHECK(err.pointer() == "/training/global_batch");
    CHECK_THAT(err.message(), Catch::Contains("4e+05 passes from 100000 micro-batches x 2 stages"));
    CHECK_THAT(err.message(), Catch::Contains("above the memory budget of 48 MiB"));
    CHECK_THAT(err.message(), Catch::Contains("--max-memory 50M"));
  }
}

TEST_CASE("a trace to be written is counted: every rank, or each class's first replica",
          "[step][work]") {
  // 8 GPUs, DP 4 x PP 2: one replica class, two stage programs.
  const Scenario s = test::load(test::small_scenario(8, 4, 1, 2));
  const step::WorkEstimate plain = step::estimate_step_work(s, test::step_calibrations());
  CHECK(plain.trace_events == 0);
  CHECK(plain.trace_bytes == 0);
  const double slices_per_stage = step::kTraceSlicesPerOp * plain.ops / 2;
  step::StepOptions traced;
  traced.trace_ranks = 8;  // every rank: 8 ranks, each with its stage's slices
  const step::WorkEstimate all = step::estimate_step_work(s, test::step_calibrations(), traced);
  CHECK(all.trace_events == Approx(8 * slices_per_stage));
  CHECK(all.trace_bytes == Approx(plain.ops * step::kTraceSlicesPerOp * step::kBytesPerTraceSlice +
                                  all.trace_events * step::kBytesPerTraceEvent));
  CHECK(all.bytes == Approx(plain.bytes + all.trace_bytes));
  traced.trace_ranks = 4;  // fewer than 8 GPUs: the first replica's 2 ranks (one per stage)
  const step::WorkEstimate first = step::estimate_step_work(s, test::step_calibrations(), traced);
  CHECK(first.trace_events == Approx(2 * slices_per_stage));

  // The replay records no more slices per class-stage than the estimate counts.
  step::StepOptions record;
  record.record_trace = true;
  const step::StepReport r = step::simulate_step(s, test::step_calibrations(), record);
  std::map<std::pair<int, int>, double> recorded;
  for (const auto& slice : r.trace) recorded[{slice.replica_class, slice.stage}] += 1;
  REQUIRE_FALSE(recorded.empty());
  for (int stage = 0; stage < 2; ++stage) {
    const double mine = recorded[{0, stage}] + recorded[{-1, stage}];
    CHECK(mine > 0);
    CHECK(mine <= slices_per_stage);
  }
}
