// Compute cost model: efficiencies read from the calibration file and the roofline time.
// Expected values are hand calculations from the cited benchmark figures.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

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
  // Measured on an H200 (validation/data/h200-2026-12-04/torch-probe-2.json, by_k): BF16
  // 8192x8192x8192 sustained at 669.3 of 989 TFLOPS.
  CHECK(model.gemm_efficiency({8192, 8192, 8192}, Dtype::bf16) == Approx(669.3 / 989.0));
  // FP8 at K = 4096: forward (fast accumulation) 1213.3, backward (split) 1181.7 TFLOPS; one
  // forward and two backward GEMMs run at 3 / (1/1213.3 + 2/1181.7) = 1192.0 of 1979.
  CHECK(model.gemm_efficiency({4096, 4096, 4096}, Dtype::fp8) ==
        Approx(3.0 / (1.0 / 1213.3 + 2.0 / 1181.7) / 1979.0).epsilon(1e-4));
}

TEST_CASE("The Hopper curves are the points measured on the H200, unedited") {
  const std::string dir = std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/";
  const auto read = [&](const std::string& name) {
    return JsonDocument::load(dir + name).root().raw();
  };
  const auto cal = read("compute_efficiency.json");
  const auto run2 = read("h200-2026-12-04/torch-probe-2.json");
  const auto run3 = read("h200-2026-12-04/torch-probe-3.json");
  const auto& bf16 = cal.at("gemm").at("bf16").at("points");
  const auto& fp8 = cal.at("gemm").at("fp8").at("points");
  REQUIRE(bf16.size() == 7);
  REQUIRE(fp8.size() == 7);
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    const int k = 256 << i;  // K = 256, 512, ..., 16384 with M = N = 8192
    const std::string key = "8192x8192x" + std::to_string(k);
    INFO(key);
    CHECK(bf16[i].at("min_dim").get<int>() == k);
    CHECK(bf16[i].at("tflops").get<double>() ==
          run2.at("by_k").at("bf16/" + key).at("tflops").get<double>());
    // One forward GEMM with fast accumulation, two backward ones with split accumulation.
    const double fast = run3.at("by_k_fp8fast").at("fp8fast/" + key).at("tflops").get<double>();
    const double split = run2.at("by_k").at("fp8/" + key).at("tflops").get<double>();
    CHECK(fp8[i].at("tflops").get<double>() ==
          Approx(3.0 / (1.0 / fast + 2.0 / split)).margin(0.05));
  }
  // Attention: every cuDNN forward point is the measured one at its length.
  std::map<int, double> forward;
  for (const auto& r : run3.at("attention"))
    if (r.at("kernel") == "cudnn") forward[r.at("seq").get<int>()] = r.at("fwd_tflops");
  const auto& points = cal.at("attention").at("bf16").at("points");
  REQUIRE(points.size() == forward.size());
  for (const auto& p : points)
    CHECK(p.at("tflops").get<double>() == forward.at(p.at("seq_len").get<int>()));
}

TEST_CASE("GEMM efficiency is linear in log2 of the smallest dimension between points") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // 1448 (2^10.5) lies halfway (in log2) between 1024 (608.1 TFLOPS) and 2048 (640.4).
  CHECK(model.gemm_efficiency({1448.1547, 16384, 8192}, Dtype::bf16) ==
        Approx((608.1 + 640.4) / 2.0 / 989.0).epsilon(1e-4));
  // Below the first point the curve is flat: 64 -> the K = 256 figure.
  CHECK(model.gemm_efficiency({64, 8192, 8192}, Dtype::bf16) == Approx(456.4 / 989.0));
  // Above the last point (K = 16384) it is flat too.
  CHECK(model.gemm_efficiency({65536, 65536, 65536}, Dtype::bf16) == Approx(673.0 / 989.0));
}

TEST_CASE("A curve measured on cubes is read at the cube of as many multiply-adds") {
  // The A100 points are cuBLASLt cubes (Azure ND A100 v4): 4096^3 at 228.0 and 8192^3 at 253.7
  // of 312 TFLOPS. 2048 x 8192 x 8192 has the multiply-adds of a cube of side 2^(37/3), a third
  // of the way from 4096 to 8192 in log2: 228.0 + (253.7 - 228.0) / 3. Read at its smallest
  // dimension, as the H100's M = N = 8192 by K points are, it would take the 2048^3 cube's
  // 221.8.
  const ComputeCalibration a100 = load_compute_calibration(
      std::string(CLUSTERSIM_SOURCE_DIR) + "/validation/data/compute_efficiency-a100.json");
  const GemmEfficiencyCurve& cubes = a100.gemm.at(Dtype::bf16);
  CHECK(cubes.axis == GemmCurveAxis::cube_side);
  CHECK(cubes.of({2048, 8192, 8192}) == Approx((228.0 + (253.7 - 228.0) / 3) / 312));
  CHECK(cubes.of({4096, 4096, 4096}) == Approx(228.0 / 312));
  GemmEfficiencyCurve by_smallest = cubes;
  by_smallest.axis = GemmCurveAxis::smallest_dimension;
  CHECK(by_smallest.of({2048, 8192, 8192}) == Approx(221.8 / 312));
  // The Hopper curve has no read_at: its smallest dimension.
  CHECK(test::nominal_calibration().gemm.at(Dtype::bf16).axis == GemmCurveAxis::smallest_dimension);
}

TEST_CASE("On XLA's measured H100 table, cubes read at equal multiply-adds predict other shapes") {
  // validation/data/gemm/xla-sm90-bf16.json: 125 BF16 GEMMs, each side 256 ... 4096. A curve of
  // its five cubes predicts the 24 non-cube shapes whose sides are all at least 1024 within 3.7 %
  // (mean absolute) when read at (m n k)^(1/3), and 45 % too slow at the smallest dimension (e.g.
  // 4096 x 1024 x 4096, measured 738.5 TFLOP/s: 682.4 at the cube of side 2580, 236.3 at 1024^3;
  // tools/gemm_curve_reading.py prints the same figures).
  const auto doc = JsonDocument::load(std::string(CLUSTERSIM_SOURCE_DIR) +
                                      "/validation/data/gemm/xla-sm90-bf16.json");
  struct Shape {
    double m, n, k, tflops;
  };
  std::vector<Shape> shapes;
  for (const auto& r : doc.root().at("results").items()) {
    shapes.push_back(
        {r.positive_at("m"), r.positive_at("n"), r.positive_at("k"), r.positive_at("tflops")});
  }
  REQUIRE(shapes.size() == 125);
  GemmEfficiencyCurve cubes;
  cubes.axis = GemmCurveAxis::cube_side;
  for (const Shape& s : shapes) {
    if (s.m == s.n && s.n == s.k) cubes.points.push_back({s.m, s.tflops / 1000.0, "xla"});
  }
  std::sort(
      cubes.points.begin(), cubes.points.end(),
      [](const EfficiencyPoint& a, const EfficiencyPoint& b) { return a.min_dim < b.min_dim; });
  REQUIRE(cubes.points.size() == 5);
  GemmEfficiencyCurve by_smallest = cubes;
  by_smallest.axis = GemmCurveAxis::smallest_dimension;
  double equal_work = 0, smallest = 0;
  int n = 0;
  for (const Shape& s : shapes) {
    if ((s.m == s.n && s.n == s.k) || std::min({s.m, s.n, s.k}) < 1024) continue;
    equal_work += std::abs(cubes.of({s.m, s.n, s.k}) * 1000.0 / s.tflops - 1);
    smallest += std::abs(by_smallest.of({s.m, s.n, s.k}) * 1000.0 / s.tflops - 1);
    ++n;
  }
  REQUIRE(n == 24);
  CHECK(equal_work / n < 0.05);
  CHECK(smallest / n > 0.40);
  CHECK(cubes.of({4096, 1024, 4096}) * 1000.0 ==
        Approx(632.0 + (783.3 - 632.0) * (std::log2(std::cbrt(4096.0 * 1024 * 4096)) - 11)));
}

TEST_CASE("GEMM efficiency never exceeds the best-shape efficiency") {
  const auto doc = JsonDocument::load(kCalibration);
  std::string text = doc.root().raw().dump();
  // Lower the BF16 ceiling to 500 TFLOPS: every BF16 point above it is capped.
  text = replace(text, "\"tflops\":701.3", "\"tflops\":500.0");
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
  CHECK(c.time_s == Approx(flops / 669.3e12 + 4e-6));
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
  // cuDNN causal attention at 8k measured on an H200 (torch-probe-3.json): forward 536.3
  // TFLOPS, backward 470.3.
  CHECK(model.attention_efficiency(Dtype::bf16, 8192) == Approx(536.3 / 989.0));
  const double flops = 1e12;
  CHECK(model.attention(flops, 0, Dtype::fp8, 8192).compute_s == Approx(flops / 536.3e12));
  CHECK(model.attention_backward(flops, 0, Dtype::fp8, 8192).compute_s == Approx(flops / 470.3e12));
}

TEST_CASE("Attention efficiency follows the sequence length of the call") {
  const ComputeCostModel model(test::h100_like(), test::nominal_calibration());
  // cuDNN causal forward measured on an H200 (torch-probe-3.json): 457.0 TFLOPS at 2k, 505.2
  // at 4k.
  CHECK(model.attention_efficiency(Dtype::bf16, 2048) == Approx(457.0 / 989.0));
  // Between points, linear in log2(length): 3k lies log2(1.5) = 0.585 of the way to 4k.
  const double t = std::log2(3072.0 / 2048.0);
  CHECK(model.attention_efficiency(Dtype::bf16, 3072) ==
        Approx((457.0 + t * (505.2 - 457.0)) / 989.0));
  // Clamped outside the measured lengths: below 512 -> 310.6; above 128k -> 555.6 (forward),
  // 535.6 (backward); the backward starts at 1k (290.8), its 512 point being left out.
  CHECK(model.attention_efficiency(Dtype::bf16, 128) == Approx(310.6 / 989.0));
  CHECK(model.attention_efficiency(Dtype::bf16, 262144) == Approx(555.6 / 989.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 262144) == Approx(535.6 / 989.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 512) == Approx(290.8 / 989.0));
  // Long context: 64k forward 593.4, backward 533.5.
  CHECK(model.attention_efficiency(Dtype::bf16, 65536) == Approx(593.4 / 989.0));
  CHECK(model.attention_backward_efficiency(Dtype::bf16, 65536) == Approx(533.5 / 989.0));
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

TEST_CASE("training.attention selects FlashAttention-2 or -3 from the calibration's figures") {
  // Measured on an H200 (torch-probe-3.json), causal, head dim 128, at 8k: cuDNN 536.3 forward,
  // FlashAttention-2 307.6 forward and 284.4 backward; at 512 FlashAttention-2 181.0 forward,
  // 119.2 backward. FlashAttention-3 (not measured) keeps its paper's figures (Shah et al.
  // 2024, Figures 5(d) and 6(b), H100 SXM5): 602 forward, 559 backward at 8k.
  const auto model_with = [](const std::string& kernel) {
    ComputeCalibration cal = test::nominal_calibration();
    REQUIRE(select_attention_kernel(cal, kernel));
    return ComputeCostModel(test::h100_like(), cal);
  };
  const ComputeCostModel cudnn = model_with("flash");
  CHECK(cudnn.attention_efficiency(Dtype::bf16, 8192) == Approx(536.3 / 989.0));
  const ComputeCostModel fa3 = model_with("flash3");
  CHECK(fa3.attention_efficiency(Dtype::bf16, 8192) == Approx(602.0 / 989.0));
  CHECK(fa3.attention_backward_efficiency(Dtype::bf16, 8192) == Approx(559.0 / 989.0));
  const ComputeCostModel fa2 = model_with("flash2");
  CHECK(fa2.attention_efficiency(Dtype::bf16, 8192) == Approx(307.6 / 989.0));
  CHECK(fa2.attention_backward_efficiency(Dtype::bf16, 8192) == Approx(284.4 / 989.0));
  CHECK(fa2.attention_efficiency(Dtype::bf16, 512) == Approx(181.0 / 989.0));
  CHECK(fa2.attention_backward_efficiency(Dtype::bf16, 512) == Approx(119.2 / 989.0));
  // FP8 training keeps attention in BF16: 1 TFLOP of forward at 8k takes 1/307.6 s.
  CHECK(fa2.attention(1e12, 0, Dtype::fp8, 8192).compute_s == Approx(1e12 / 307.6e12));
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
          "/gemm/bf16/points/2/min_dim");
  }
  SECTION("a measured rate above the peak") {
    CHECK(error_pointer(replace(text, "\"tflops\":310.6", "\"tflops\":1310.6")) ==
          "/attention/bf16/points/0/tflops");
  }
  SECTION("attention points out of order") {
    CHECK(error_pointer(replace(text, "\"seq_len\":2048", "\"seq_len\":1000")) ==
          "/attention/backward/bf16/points/1/seq_len");
  }
  SECTION("an HBM figure measured on something that has no name") {
    CHECK(error_pointer(replace(text, "\"peak_TBps\":", "\"measured\":\"triad\",\"peak_TBps\":")) ==
          "/memory/hbm_efficiency/measured");
  }
  SECTION("a curve read at a size that has no name") {
    CHECK(error_pointer(
              replace(text, "\"best_shape\":", "\"read_at\":\"largest\",\"best_shape\":")) ==
          "/gemm/bf16/read_at");
  }
  SECTION("an unknown key") {
    const std::string bad = replace(text, "\"hbm_efficiency\"", "\"hbm_eficiency\"");
    CHECK_THROWS_AS(load_compute_calibration(JsonDocument::parse(bad, "bad.json")), ConfigError);
  }
}
