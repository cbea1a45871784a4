// The B200 and GB200 presets time their kernels with the Blackwell figures
// (validation/data/compute_efficiency-blackwell.json, docs/microbenchmarks.md#blackwell).
// Expected efficiencies are the published TFLOPS divided by the peak of the GPU measured, by
// hand: B200 BF16 2,250 dense; the FP8 sweep ran on a GB200, 5,000 dense.
#include <catch2/catch.hpp>
#include <string>

#include "input/presets.hpp"
#include "models/compute_cost.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

ComputeCostModel on(const std::string& cluster) {
  const ClusterSpec c = load_cluster_preset(cluster);
  return ComputeCostModel(c.gpu, load_compute_calibration(compute_calibration_path(c.gpu)));
}

}  // namespace

TEST_CASE("The B200 takes Blackwell's GEMM, attention and HBM figures, not Hopper's") {
  const ComputeCostModel b200 = on("hgx-b200-2048x8-rail");
  // BF16: XLA's sm_100 table, 1,416.9 TFLOPS at 4096^3, its largest size; larger GEMMs clamp
  // there (below the best shape's 1,745.0). Its points are cubes, so a GEMM is read at the
  // cube of as many multiply-adds: 2048 x 8192 x 8192 at 2^(37/3) > 4096 clamps too, and
  // 1024 x 2048 x 4096 is the 2048^3 cube's 985.8.
  CHECK(b200.gemm_efficiency({8192, 8192, 8192}, Dtype::bf16) == Approx(1416.9 / 2250));
  CHECK(b200.gemm_efficiency({2048, 8192, 8192}, Dtype::bf16) == Approx(1416.9 / 2250));
  CHECK(b200.gemm_efficiency({1024, 2048, 4096}, Dtype::bf16) == Approx(985.8 / 2250));
  // FP8: Azure's GB200 cuBLASLt sweep, 2,906.9 TFLOPS at 16384^3 of the GB200's 5,000.
  CHECK(b200.gemm_efficiency({16384, 16384, 16384}, Dtype::fp8) == Approx(2906.9 / 5000));
  // cuDNN attention on a B200: forward 1,384.2 at 8k, backward 1,151.7 at 16k (causal); below
  // 4k the 4k figure.
  CHECK(b200.attention_efficiency(Dtype::bf16, 8192) == Approx(1384.2 / 2250));
  CHECK(b200.attention_backward_efficiency(Dtype::bf16, 16384) == Approx(1151.7 / 2250));
  CHECK(b200.attention_efficiency(Dtype::bf16, 1024) == Approx(1141.1 / 2250));
  // HBM: 6.2 of 8 TB/s (cuDNN RMSNorm on a GB200) of the B200's 7.7: 1 GB in 1 / (7.7e12 x
  // 0.775) s. The figure is an element-wise kernel's own rate, so the element-wise fraction the
  // B200 borrows with the H100 SXM's fit (a share of a stream copy) does not scale it again.
  CHECK(b200.memory_op(1e9).memory_s == Approx(1e9 / (7.7e12 * 6.2 / 8.0)));
  // `check` and `run` say so beside any value given to it (the shipped Hopper fit, which the B200
  // borrows, no longer carries one: its element-wise share is measured).
  GpuSpec gpu = load_cluster_preset("hgx-b200-2048x8-rail").gpu;
  gpu.system_override = SystemValues{{SystemParameterId::elementwise_hbm_fraction, 0.6}};
  const std::string line =
      describe_system_parameters(gpu, load_compute_calibration(compute_calibration_path(gpu)));
  CHECK_THAT(line, Catch::Contains("elementwise_hbm_fraction 0.6 (not applied: this GPU's "
                                   "HBM figure is an element-wise kernel's)"));
}

TEST_CASE("Blackwell has FlashAttention-2 figures but no FlashAttention-3, which is Hopper-only") {
  ComputeCalibration cal = load_compute_calibration(
      compute_calibration_path(load_cluster_preset("gb200-nvl72-128x72-rail").gpu));
  CHECK_FALSE(select_attention_kernel(cal, "flash3"));
  REQUIRE(select_attention_kernel(cal, "flash2"));
  // FlashAttention-2 2.7.4 on a B200, forward at 8k: 399.9 TFLOPS.
  CHECK(cal.attention.forward.at(Dtype::bf16).at(8192) == Approx(399.9 / 2250));
  // No Blackwell run fitted its system parameters: the H100's fit, borrowed.
  CHECK(cal.system.borrowed_from == "compute_efficiency.json");
}

TEST_CASE("The GB300 prices attention at the speed-up NVIDIA measured over the GB200") {
  const ComputeCostModel gb300 = on("gb300-nvl72-128x72-rail");
  const ComputeCostModel gb200 = on("gb200-nvl72-128x72-rail");
  // cuDNN 9.22 on both GPUs, causal BF16 (NVIDIA/cudnn-frontend 3929da2): forward at 8k 1.397 ms
  // on the GB200, 1.185 on the GB300; backward 4.127 and 3.832. The GB300's points are the B200
  // figures (forward 1,384.2, backward 994.9 TFLOPS at 8k, of 2,250) times that speed-up, written
  // to 0.1 TFLOPS.
  const double eps = 1e-4;
  CHECK(gb300.attention_efficiency(Dtype::bf16, 8192) ==
        Approx(1384.2 / 2250 * 1.397 / 1.185).epsilon(eps));
  CHECK(gb300.attention_backward_efficiency(Dtype::bf16, 8192) ==
        Approx(994.9 / 2250 * 4.127 / 3.832).epsilon(eps));
  // Beyond the benchmark's 32k the 32k speed-up holds: forward 21.692 / 18.014 ms on the B200's
  // 1,493.8 TFLOPS at 64k.
  CHECK(gb300.attention_efficiency(Dtype::bf16, 65536) ==
        Approx(1493.8 / 2250 * 21.692 / 18.014).epsilon(eps));
  // The GB200 keeps the B200's figures.
  CHECK(gb200.attention_efficiency(Dtype::bf16, 8192) == Approx(1384.2 / 2250));
  // Everything else is the GB200's: GEMMs in BF16 and FP8, HBM.
  for (const Dtype dtype : {Dtype::bf16, Dtype::fp8}) {
    CHECK(gb300.gemm_efficiency({8192, 8192, 8192}, dtype) ==
          gb200.gemm_efficiency({8192, 8192, 8192}, dtype));
  }
  CHECK(gb300.memory_op(1e9).memory_s == Approx(gb200.memory_op(1e9).memory_s));
  ComputeCalibration cal = load_compute_calibration(
      compute_calibration_path(load_cluster_preset("gb300-nvl72-128x72-rail").gpu));
  CHECK(cal.system.borrowed_from == "compute_efficiency.json");
  // FlashAttention-2 was not measured on a GB300: the B200's 399.9 TFLOPS forward at 8k.
  REQUIRE(select_attention_kernel(cal, "flash2"));
  CHECK(cal.attention.forward.at(Dtype::bf16).at(8192) == Approx(399.9 / 2250));
}
