// The host's dispatch (workload/host_dispatch.hpp): a pass whose kernels the GPU runs faster than
// the host issues them waits for the host. Expected values by hand from the pass's kernel count,
// its kernel time and the host time per kernel.
#include <catch2/catch.hpp>

#include "models/compute_cost.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/host_dispatch.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;

namespace {

Segment kernels(double count, double time_s) {
  Segment s;
  s.cost.kernels = count;
  s.cost.time_s = time_s;
  return s;
}

}  // namespace

TEST_CASE("a pass the host cannot issue in time waits for it, a longer one does not") {
  StepPasses p;
  // 100 kernels in 1 ms of GPU time: the host needs 100 x 22.8 us = 2.28 ms, 1.28 ms more.
  p.layer_forward = {kernels(60, 0.6e-3), kernels(40, 0.4e-3)};
  // 100 kernels in 5 ms: the host is ahead.
  p.layer_backward = {kernels(100, 5e-3)};
  // A collective in between is not a kernel the host issues here: 10 kernels in 0.1 ms wait
  // 0.128 ms whatever the collective takes.
  Segment coll;
  coll.is_collective = true;
  coll.cost.time_s = 1.0;
  p.head_forward = {kernels(10, 0.1e-3), coll};
  wait_for_host(p, 22.8e-6);
  REQUIRE(p.layer_forward.size() == 3);
  CHECK(p.layer_forward.back().cost.time_s == Approx(1.28e-3));
  CHECK(p.layer_forward.back().cost.host_s == Approx(1.28e-3));
  CHECK(p.layer_forward.back().cost.kernels == 0);
  CHECK(total(p.layer_forward).time_s == Approx(100 * 22.8e-6));
  CHECK(p.layer_backward.size() == 1);
  REQUIRE(p.head_forward.size() == 3);
  CHECK(p.head_forward.back().cost.time_s == Approx(10 * 22.8e-6 - 0.1e-3));
  CHECK(p.embedding_forward.empty());
}

TEST_CASE("a host synchronization inside a pass ends the host's lead there") {
  StepPasses p;
  // 10 kernels in 1 ms (the host needs 0.228 ms: ahead), then the MoE dispatch, where the host
  // waits for the GPU, then 100 kernels in 0.5 ms (the host needs 2.28 ms).
  Segment dispatch;
  dispatch.is_collective = true;
  dispatch.host_sync = true;
  p.moe_layer_forward = {kernels(10, 1e-3), dispatch, kernels(100, 0.5e-3)};
  wait_for_host(p, 22.8e-6);
  // Judged as one pass the host would hide 0.772 ms of the second stretch behind the first's GPU
  // time (110 x 22.8 us - 1.5 ms = 1.008 ms); after the synchronization it waits 2.28 - 0.5 ms.
  REQUIRE(p.moe_layer_forward.size() == 4);
  CHECK(p.moe_layer_forward[1].host_sync);
  CHECK(p.moe_layer_forward.back().cost.host_s == Approx(100 * 22.8e-6 - 0.5e-3));
  CHECK(total(p.moe_layer_forward).time_s == Approx(1e-3 + 100 * 22.8e-6));
  // A first stretch the host cannot keep up with waits before the synchronization.
  p.moe_layer_forward = {kernels(100, 0.5e-3), dispatch, kernels(10, 1e-3)};
  wait_for_host(p, 22.8e-6);
  REQUIRE(p.moe_layer_forward.size() == 4);
  CHECK(p.moe_layer_forward[1].cost.host_s == Approx(100 * 22.8e-6 - 0.5e-3));
  CHECK(p.moe_layer_forward[2].host_sync);
}

TEST_CASE(
    "the host's time per kernel is the fitted one, else the measured one, and none from a graph") {
  const Scenario s = test::load(test::small_scenario(8, 8, 1, 1));
  const models::ComputeCostModel c = test::compute_model(s);
  // The H100/H800 calibration holds a fitted host time per kernel (host_us_per_kernel).
  const auto fitted = c.calibration().system.find(SystemParameterId::host_us_per_kernel);
  REQUIRE(fitted);
  CHECK(c.host_per_kernel_s() == Approx(*fitted * 1e-6));
  CHECK(c.replayed_from_cuda_graph().host_per_kernel_s() == 0);
  // Without a fit: the measured 22.8 us, or the preset's own host_us_per_kernel.
  models::ComputeCalibration unfitted = c.calibration();
  unfitted.system.values.erase(SystemParameterId::host_us_per_kernel);
  GpuSpec gpu = s.cluster.gpu;
  CHECK(models::ComputeCostModel(gpu, unfitted).host_per_kernel_s() == Approx(22.8e-6));
  gpu.host_per_kernel_s = 5e-6;
  CHECK(models::ComputeCostModel(gpu, unfitted).host_per_kernel_s() == Approx(5e-6));
}
