// training.optimizer_kernels: the HBM traffic of Adam's update and of the gradient clipping
// before it. The optimizer op's time is bytes / HBM rate + one kernel gap, so the bytes per
// parameter are read back from it; the expected values are counts of the kernels' accesses.
#include <catch2/catch.hpp>

#include "tests/workload/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The HBM bytes of the stage's optimizer op (the one op of kind optimizer).
double optimizer_bytes(const nlohmann::json& j) {
  const Scenario s = load(j);
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  double bytes = -1;
  for (const auto& op : w.stages.at(0).ops) {
    if (op.kind != OpKind::compute || op.compute != ComputeKind::optimizer) continue;
    REQUIRE(bytes < 0);
    bytes = (op.time_s - model.kernel_gap_s()) * model.hbm_Bps();
  }
  REQUIRE(bytes > 0);
  return bytes;
}

nlohmann::json with_kernels(nlohmann::json j, const char* kernels) {
  if (kernels) j["training"]["optimizer_kernels"] = kernels;
  return j;
}

}  // namespace

TEST_CASE("Fused Adam is the default, foreach names PyTorch's kernels") {
  const nlohmann::json j = small_scenario(1, 1, 1, 1);
  CHECK(load(j).training.optimizer_kernels == OptimizerKernels::fused);
  CHECK(load(with_kernels(j, "foreach")).training.optimizer_kernels == OptimizerKernels::foreach_);
  CHECK_THROWS_WITH(load(with_kernels(j, "apex")), Catch::Contains("/training/optimizer_kernels"));
}

TEST_CASE("PyTorch's foreach AdamW and clip_grad_norm_ move 92 B per parameter, fused 34") {
  // FP32 master, moments and gradients. Fused: read the master, both moments and the gradient
  // (16 B), write the three states (12) and the 16-bit weight (2), and the clip reads the
  // gradient (4): 34 B. Foreach: weight decay 8, lerp of the momentum 12, variance mul 8 and
  // addcmul 12, sqrt 8, div 8, add 8, addcdiv 16 (80), then the clip's norm read and its
  // unconditional multiply, 12: 92 B.
  const nlohmann::json j = small_scenario(1, 1, 1, 1);
  const double fused = optimizer_bytes(j);
  const double foreach_bytes = optimizer_bytes(with_kernels(j, "foreach"));
  CHECK(foreach_bytes / fused == Approx(92.0 / 34.0));
  SECTION("BF16 moments: their 14 accesses in 2 B") {
    nlohmann::json b = j;
    b["training"]["optimizer_moments_dtype"] = "bf16";
    // Fused: 2 x (4 + 2 + 2) states + 4 gradient + 2 weight + 4 clip = 26 B. Foreach:
    // 4 x 4 master + 14 x 2 moments + 8 gradient + 12 clip = 64 B.
    CHECK(optimizer_bytes(with_kernels(b, "foreach")) / optimizer_bytes(b) == Approx(64.0 / 26.0));
    CHECK(optimizer_bytes(b) / fused == Approx(26.0 / 34.0));
  }
  SECTION("Under ZeRO each rank updates its 1/dp shard") {
    nlohmann::json z = small_scenario(8, 8, 1, 1);
    z["parallelism"]["zero_stage"] = 1;
    CHECK(optimizer_bytes(with_kernels(z, "foreach")) == Approx(foreach_bytes / 8));
  }
}
