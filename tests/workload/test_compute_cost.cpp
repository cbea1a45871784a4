// Compute cost model: efficiencies read from the calibration file and the roofline time.
// Expected values are hand calculations from the cited benchmark figures.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "tests/workload/fixtures.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

const std::string kCalibration =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency.json";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);
  return text.replace(pos, from.size(), to);
}

}  // namespace

TEST_CASE("GEMM efficiency at a calibration point is the measured fraction of peak") {
  const auto cal = test::nominal_calibration();
  const ComputeCostModel model(test::h100_like(), cal);
  // TileLang H800 FP16 8192x8192x8192: 758 of 989 TFLOPS.
  CHECK(model.gemm_efficiency({8192, 8192, 8192}, Dtype::bf16) == Approx(758.0 / 989.0));
  // cuBLASLt FP8 4096^3: 1216.9 of 1979 TFLOPS.
  CHECK(model.gemm_efficiency({4096, 4096, 4096}, Dtype::fp8) == Approx(1216.9 / 1979.0));
}

TEST_CASE("GEMM efficiency is linear in log2 of the smallest dimension between points") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // 2048 lies halfway (in log2) between 1024 (628 TFLOPS) and 4096 (736 TFLOPS).
  CHECK(model.gemm_efficiency({2048, 16384, 8192}, Dtype::bf16) ==
        Approx((628.0 + 736.0) / 2.0 / 989.0));
  // Below the first point the curve is flat: 64 -> the K = 256 figure.
  CHECK(model.gemm_efficiency({64, 8192, 8192}, Dtype::bf16) == Approx(386.0 / 989.0));
  // Above the last point it is flat too.
  CHECK(model.gemm_efficiency({65536, 65536, 65536}, Dtype::bf16) == Approx(758.0 / 989.0));
}

TEST_CASE("GEMM efficiency never exceeds the best-shape efficiency") {
  const auto doc = JsonDocument::load(kCalibration);
  std::string text = doc.root().raw().dump();
  // Lower the BF16 ceiling to 500 TFLOPS: every BF16 point above it is capped.
  text = replace(text, "\"tflops\":794.5", "\"tflops\":500.0");
  const auto cal = load_compute_calibration(JsonDocument::parse(text, "capped.json"));
  const ComputeCostModel model(test::h100_like(), cal);
  CHECK(model.gemm_efficiency({8192, 8192, 8192}, Dtype::bf16) == Approx(500.0 / 989.0));
}

TEST_CASE("A large GEMM is compute-bound and takes FLOPs over achieved rate plus a launch") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  const OpCost c = model.gemm({8192, 8192, 8192}, Dtype::bf16);
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  CHECK(c.flops == Approx(flops));
  CHECK_FALSE(c.memory_bound());
  CHECK(c.time_s == Approx(flops / 758e12 + 4e-6));
  // Three identical GEMMs cost three times one.
  CHECK(model.gemm({8192, 8192, 8192}, Dtype::bf16, 3).time_s == Approx(3 * c.time_s));
}

TEST_CASE("A memory-bound kernel takes bytes over the measured HBM bandwidth plus a launch") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // Achieved HBM: 3.35 TB/s x (3.04 / 3.35) = 3.04 TB/s.
  const OpCost c = model.memory_op(1e9);
  CHECK(c.memory_bound() == true);
  CHECK(c.time_s == Approx(1e9 / 3.04e12 + 4e-6));
  // A skinny GEMM (m = 1) is memory-bound: reading the 8192 x 8192 BF16 weight dominates.
  const OpCost skinny = model.gemm({1, 8192, 8192}, Dtype::bf16);
  CHECK(skinny.memory_bound());
  CHECK(skinny.memory_s == Approx((8192.0 + 8192.0 * 8192.0 + 8192.0) * 2 / 3.04e12));
}

TEST_CASE("Attention under FP8 training runs at the BF16 attention rate") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // FlashAttention-3 Figure 5(d), cuDNN causal forward at 8k: 529 TFLOPS; Figure 6(b): 518
  // backward.
  CHECK(model.attention_efficiency(Dtype::bf16, 8192) == Approx(529.0 / 989.0));
  const double flops = 1e12;
  CHECK(model.attention(flops, 0, Dtype::fp8, 8192).compute_s == Approx(flops / 529e12));
  CHECK(model.attention_backward(flops, 0, Dtype::fp8, 8192).compute_s == Approx(flops / 518e12));
}

TEST_CASE("Attention efficiency follows the sequence length of the call") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // cuDNN causal forward (FlashAttention-3 Figure 5(d)): 484 TFLOPS at 2k, 518 at 4k.
  CHECK(model.attention_efficiency(Dtype::bf16, 2048) == Approx(484.0 / 989.0));
  // Between points, linear in log2(length): 3k lies log2(1.5) = 0.585 of the way to 4k.
  const double t = std::log2(3072.0 / 2048.0);
  CHECK(model.attention_efficiency(Dtype::bf16, 3072) ==
        Approx((484.0 + t * (518.0 - 484.0)) / 989.0));
  // Clamped outside the measured lengths: 512 -> 315, 16k -> 539 (forward), 516 (backward).
  CHECK(model.attention_efficiency(Dtype::bf16, 128) == Approx(315.0 / 989.0));
  CHECK(model.attention_efficiency(Dtype::bf16, 131072) == Approx(539.0 / 989.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 131072) == Approx(516.0 / 989.0));
}

TEST_CASE("Without a backward figure the attention backward runs at the forward's rate") {
  // The A100 file holds FlashAttention-2's combined forward + backward figures: 182 of 312 at
  // 8k (Figure 4(d)).
  const ComputeCostModel model(
      test::h100_like(), load_compute_calibration(std::string(CLUSTERSIM_SOURCE_DIR) +
                                                  "/validation/data/compute_efficiency-a100.json"));
  CHECK(model.attention_efficiency(Dtype::bf16, 8192) == Approx(182.0 / 312.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 8192) == Approx(182.0 / 312.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 2048) == Approx(155.0 / 312.0));
}

TEST_CASE("training.attention selects FlashAttention-2 or -3 from the same published figures") {
  // FlashAttention-3 (Shah et al. 2024) Figure 5(d), causal forward, head dim 128, H100 SXM5, at
  // 8k: cuDNN 529, FlashAttention-3 602, FlashAttention-2 333 TFLOPS; Figure 6(b), backward at
  // 8k: cuDNN 518, FlashAttention-3 559, FlashAttention-2 318; at 512: FlashAttention-2 191
  // forward, 214 backward.
  const auto model_with = [](const std::string& kernel) {
    ComputeCalibration cal = test::nominal_calibration();
    REQUIRE(select_attention_kernel(cal, kernel));
    return ComputeCostModel(test::h100_like(), cal);
  };
  const ComputeCostModel cudnn = model_with("flash");
  CHECK(cudnn.attention_efficiency(Dtype::bf16, 8192) == Approx(529.0 / 989.0));
  const ComputeCostModel fa3 = model_with("flash3");
  CHECK(fa3.attention_efficiency(Dtype::bf16, 8192) == Approx(602.0 / 989.0));
  CHECK(fa3.attention_backward_efficiency(Dtype::bf16, 8192) == Approx(559.0 / 989.0));
  const ComputeCostModel fa2 = model_with("flash2");
  CHECK(fa2.attention_efficiency(Dtype::bf16, 8192) == Approx(333.0 / 989.0));
  CHECK(fa2.attention_backward_efficiency(Dtype::bf16, 8192) == Approx(318.0 / 989.0));
  CHECK(fa2.attention_efficiency(Dtype::bf16, 512) == Approx(191.0 / 989.0));
  CHECK(fa2.attention_backward_efficiency(Dtype::bf16, 512) == Approx(214.0 / 989.0));
  // FP8 training keeps attention in BF16: 1 TFLOP of forward at 8k takes 1/333 s.
  CHECK(fa2.attention(1e12, 0, Dtype::fp8, 8192).compute_s == Approx(1e12 / 333e12));
}

TEST_CASE("A calibration without a kernel's figures cannot select it") {
  // The A100 file measures one kernel (FlashAttention-2's paper figures) and lists no others.
  ComputeCalibration a100 = load_compute_calibration(
      std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency-a100.json");
  const double before = a100.attention.forward.at(Dtype::bf16).at(8192);
  CHECK_FALSE(select_attention_kernel(a100, "flash3"));
  CHECK(a100.attention.forward.at(Dtype::bf16).at(8192) == before);
  CHECK(select_attention_kernel(a100, "flash"));
}

TEST_CASE("A malformed calibration file is rejected at the offending JSON pointer") {
  const auto doc = JsonDocument::load(kCalibration);
  const std::string text = doc.root().raw().dump();
  // The JSON pointer the loader's ConfigError names for `bad` (read as bad.json).
  auto error_pointer = [](const std::string& bad) {
    try {
      load_compute_calibration(JsonDocument::parse(bad, "bad.json"));
    } catch (const ConfigError& e) {
      CHECK(e.file() == "bad.json");
      return e.pointer();
    }
    FAIL("expected ConfigError");
    return std::string();
  };
  SECTION("points out of order") {
    CHECK(error_pointer(replace(text, "\"min_dim\":1024,", "\"min_dim\":128,")) ==
          "/gemm/bf16/points/1/min_dim");
  }
  SECTION("a measured rate above the peak") {
    CHECK(error_pointer(replace(text, "\"tflops\":315", "\"tflops\":1315")) ==
          "/attention/bf16/points/0/tflops");
  }
  SECTION("attention points out of order") {
    CHECK(error_pointer(replace(text, "\"seq_len\":2048", "\"seq_len\":1000")) ==
          "/attention/backward/bf16/points/2/seq_len");
  }
  SECTION("an unknown key") {
    const std::string bad = replace(text, "\"hbm_efficiency\"", "\"hbm_eficiency\"");
    CHECK_THROWS_AS(load_compute_calibration(JsonDocument::parse(bad, "bad.json")), ConfigError);
  }
}
