// GEMM timings -> compute-efficiency file -> models/compute_cost's loader: a round trip through
// a known efficiency curve. The synthetic timings are generated here from the curve
// (time = 2mnk / (peak x efficiency)), so the efficiencies read back must be the curve's.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "models/compute_cost.hpp"
#include "validation/compute_efficiency.hpp"

using namespace clustersim;
using namespace clustersim::validation;

namespace {

const std::string kSource = CLUSTERSIM_SOURCE_DIR;
const std::string kTool = CLUSTERSIM_BINARY;

constexpr double kBf16PeakTflops = 989;  // H100 SXM dense BF16 (datasheet)
constexpr double kFp8PeakTflops = 1979;  // H100 SXM dense FP8 (datasheet)

// The known curves: efficiency at the smallest GEMM dimension (made-up values, deliberately
// unlike the shipped defaults so that a copied default cannot pass for a round trip).
const std::map<double, double> kBf16Curve = {{256, 0.40}, {1024, 0.62}, {4096, 0.74}, {8192, 0.78}};
const std::map<double, double> kFp8Curve = {
    {1024, 0.15}, {2048, 0.50}, {8192, 0.66}, {16384, 0.70}};
constexpr double kAttentionEfficiency = 0.5;

// The curve's value at x: linear in log2(x) between its points, clamped at both ends (the rule
// models/compute_cost.hpp documents).
double curve_at(const std::map<double, double>& curve, double x) {
  if (x <= curve.begin()->first) return curve.begin()->second;
  if (x >= curve.rbegin()->first) return curve.rbegin()->second;
  auto hi = curve.lower_bound(x);
  auto lo = std::prev(hi);
  const double t =
      (std::log2(x) - std::log2(lo->first)) / (std::log2(hi->first) - std::log2(lo->first));
  return lo->second + t * (hi->second - lo->second);
}

// Two shapes per curve point, both with smallest dimension d, timed at the curve's efficiency.
std::vector<GemmMeasurement> synthetic_rows(const std::map<double, double>& curve, Dtype dtype,
                                            double peak_tflops) {
  std::vector<GemmMeasurement> rows;
  for (const auto& [d, eff] : curve) {
    for (const auto& [m, n, k] : {std::tuple{2 * d, 2 * d, d}, std::tuple{d, 4 * d, 2 * d}}) {
      GemmMeasurement g;
      g.name = "synthetic";
      g.dtype = dtype;
      g.m = m;
      g.n = n;
      g.k = k;
      g.flops = 2 * m * n * k;
      g.time_us = g.flops / (peak_tflops * 1e12 * eff) * 1e6;
      rows.push_back(g);
    }
  }
  return rows;
}

GemmLog synthetic_log() {
  GemmLog log;
  log.file = "synthetic.json";
  log.device = "NVIDIA H100 80GB HBM3";
  log.date = "2026-01-01";
  log.results = synthetic_rows(kBf16Curve, Dtype::bf16, kBf16PeakTflops);
  for (const auto& g : synthetic_rows(kFp8Curve, Dtype::fp8, kFp8PeakTflops))
    log.results.push_back(g);
  return log;
}

// Inputs of compute_efficiency_from_gemm: `log` over the shipped file's other sections, with the
// BF16 peak (and FP8's when `fp8`).
ComputeEfficiencyInputs inputs(const GemmLog& log, bool fp8 = false) {
  ComputeEfficiencyInputs in;
  in.logs = {log};
  in.peaks_tflops = {{Dtype::bf16, kBf16PeakTflops}};
  if (fp8) in.peaks_tflops[Dtype::fp8] = kFp8PeakTflops;
  in.base = JsonDocument::load(kSource + "/validation/data/compute_efficiency.json").root().raw();
  in.base_file = "validation/data/compute_efficiency.json";
  return in;
}

void check_round_trip(const models::ComputeCalibration& cal) {
  for (const auto& [dtype, curve] :
       {std::pair{Dtype::bf16, kBf16Curve}, std::pair{Dtype::fp8, kFp8Curve}}) {
    REQUIRE(cal.gemm.count(dtype) == 1);
    const auto& loaded = cal.gemm.at(dtype);
    CHECK(loaded.points.size() == curve.size());
    // At the points, between them (geometric midpoints) and beyond both ends.
    std::vector<double> queries = {curve.begin()->first / 2, curve.rbegin()->first * 2};
    for (auto it = curve.begin(); it != curve.end(); ++it) {
      queries.push_back(it->first);
      if (std::next(it) != curve.end())
        queries.push_back(std::sqrt(it->first * std::next(it)->first));
    }
    for (const double x : queries) {
      INFO(to_string(dtype) << " min_dim " << x);
      CHECK(loaded.at(x) == Approx(curve_at(curve, x)).epsilon(0.01));
    }
  }
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("GEMM timings from a known curve come back as that curve through compute_cost's loader") {
  const ComputeEfficiencyInputs in = inputs(synthetic_log(), true);
  const auto result = compute_efficiency_from_gemm(in);

  const auto path = std::filesystem::temp_directory_path() / "clustersim-test-efficiency.json";
  write_file_atomically(path.string(), result.document.dump(2));
  const models::ComputeCalibration cal = models::load_compute_calibration(path.string());
  std::filesystem::remove(path);
  check_round_trip(cal);

  // What the GEMM rows do not measure is the base file's, and the file says so.
  const auto base =
      models::load_compute_calibration(JsonDocument::parse(in.base.dump(), in.base_file));
  CHECK(cal.hbm_efficiency == base.hbm_efficiency);
  for (double seq_len : {512.0, 2048.0, 8192.0}) {
    CHECK(cal.attention.forward.at(Dtype::bf16).at(seq_len) ==
          base.attention.forward.at(Dtype::bf16).at(seq_len));
  }
  CHECK(cal.gemm.at(Dtype::fp16).points.size() == base.gemm.at(Dtype::fp16).points.size());
  CHECK(result.document["description"].get<std::string>().find("Copied from " + in.base_file) !=
        std::string::npos);
}

TEST_CASE("GEMM timings of cubes alone make a curve read at the cube of as many multiply-adds") {
  // 1024^3 at 40 % and 4096^3 at 80 % of the H100's 989 TFLOPS; a 1024 x 4096 x 16384 GEMM has
  // the multiply-adds of the 4096^3 cube, so the curve gives it 80 %, not the 1024^3 cube's 40 %.
  GemmLog log;
  log.file = "cubes.json";
  log.device = "NVIDIA H100 80GB HBM3";
  for (const auto& [d, eff] : {std::pair{1024.0, 0.4}, std::pair{4096.0, 0.8}}) {
    GemmMeasurement g;
    g.dtype = Dtype::bf16;
    g.m = g.n = g.k = d;
    g.flops = 2 * d * d * d;
    g.time_us = g.flops / (kBf16PeakTflops * 1e12 * eff) * 1e6;
    log.results.push_back(g);
  }
  const auto result = compute_efficiency_from_gemm(inputs(log));
  CHECK(result.document["gemm"]["bf16"]["read_at"] == "cube_side");
  const auto cal =
      models::load_compute_calibration(JsonDocument::parse(result.document.dump(), "cubes.json"));
  CHECK(cal.gemm.at(Dtype::bf16).of({1024, 4096, 16384}) == Approx(0.8));
  // Rows of other shapes are read at their smallest dimension, as before.
  CHECK_FALSE(compute_efficiency_from_gemm(inputs(synthetic_log(), true))
                  .document["gemm"]["bf16"]
                  .contains("read_at"));
}

TEST_CASE("attention rows at several sequence lengths become the attention curve") {
  // Causal attention, head dim 128, 32 heads, timed at a made-up efficiency per sequence length;
  // two rows at 4096 (batch 1 and 2, same efficiency). The curve read back must hold those
  // efficiencies at the measured lengths and interpolate in log2 between them.
  const std::map<double, double> curve = {{1024, 0.30}, {4096, 0.45}, {16384, 0.55}};
  GemmLog log;
  log.file = "attention.json";
  log.device = "NVIDIA H100 80GB HBM3";
  for (const auto& [seq, eff] : curve) {
    for (double batch : seq == 4096 ? std::vector<double>{1, 2} : std::vector<double>{1}) {
      GemmMeasurement g;
      g.name = "attention";
      g.kind = "attention";
      g.m = g.n = seq;
      g.k = 128;
      g.batch = 32 * batch;
      g.flops = 4.0 * seq * seq * 128 * 32 * batch / 2;
      g.time_us = g.flops / (kBf16PeakTflops * 1e12 * eff) * 1e6;
      log.results.push_back(g);
    }
  }
  const auto result = compute_efficiency_from_gemm(inputs(log));
  const models::ComputeCalibration cal =
      models::load_compute_calibration(JsonDocument::parse(result.document.dump(), "out.json"));
  const auto& loaded = cal.attention.forward.at(Dtype::bf16);
  REQUIRE(loaded.points.size() == 3);
  for (const auto& [seq, eff] : curve) CHECK(loaded.at(seq) == Approx(eff));
  CHECK(loaded.at(2048) == Approx(curve_at(curve, 2048)));
  CHECK(loaded.at(512) == Approx(0.30));
  CHECK(loaded.at(65536) == Approx(0.55));
}

TEST_CASE("a GEMM faster than the peak or without a known peak is refused with its location") {
  ComputeEfficiencyInputs in = inputs(synthetic_log());
  SECTION("no fp8 peak") {
    in.peaks_tflops = {{Dtype::bf16, kBf16PeakTflops}};
    try {
      compute_efficiency_from_gemm(in);
      FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
      CHECK(e.file() == "synthetic.json");
      CHECK(e.pointer() == "/results/" + std::to_string(2 * kBf16Curve.size()) + "/dtype");
    }
  }
  SECTION("a peak below a measurement") {
    // The fastest bf16 row runs at 0.78 x 989 = 771 TFLOP/s.
    in.peaks_tflops = {{Dtype::bf16, 700}, {Dtype::fp8, kFp8PeakTflops}};
    CHECK_THROWS_AS(compute_efficiency_from_gemm(in), ConfigError);
  }
}

TEST_CASE("calibrate --compute-out writes a file the step simulator's loader reads back",
          "[slow]") {
  // The synthetic sweep in the clustersim-gemm-sweep/1 format, with one attention row.
  nlohmann::json sweep = {{"format", "clustersim-gemm-sweep/1"},
                          {"device", {{"name", "NVIDIA H100 80GB HBM3"}}},
                          {"date", "2026-01-01"},
                          {"results", nlohmann::json::array()}};
  for (const auto& g : synthetic_log().results)
    sweep["results"].push_back({{"name", g.name},
                                {"dtype", to_string(g.dtype)},
                                {"m", g.m},
                                {"n", g.n},
                                {"k", g.k},
                                {"time_us", g.time_us}});
  // Causal attention, 8192 tokens, head dim 128, 32 heads: 4·s²·d·heads / 2 FLOPs.
  const double attention_flops = 4.0 * 8192 * 8192 * 128 * 32 / 2;
  sweep["results"].push_back(
      {{"name", "attention"},
       {"kind", "attention"},
       {"dtype", "bf16"},
       {"m", 8192},
       {"n", 8192},
       {"k", 128},
       {"batch", 32},
       {"flops", attention_flops},
       {"time_us", attention_flops / (kBf16PeakTflops * 1e12 * kAttentionEfficiency) * 1e6}});
  const auto dir = std::filesystem::temp_directory_path();
  const auto in = dir / "clustersim-test-sweep.json";
  const auto out = dir / "clustersim-test-compute-out.json";
  std::ofstream(in) << sweep.dump(2);
  std::filesystem::remove(out);

  const int rc = run(kTool + " calibrate --gemm " + in.string() +
                     " --peak-tflops bf16=989 fp8=1979 --created 2026-01-01 --compute-out " +
                     out.string() + " > /dev/null");
  REQUIRE(rc == 0);
  const models::ComputeCalibration cal = models::load_compute_calibration(out.string());
  check_round_trip(cal);
  // One measured sequence length: that efficiency at every length.
  REQUIRE(cal.attention.forward.at(Dtype::bf16).points.size() == 1);
  CHECK(cal.attention.forward.at(Dtype::bf16).points[0].seq_len == 8192);
  for (double seq_len : {1024.0, 8192.0, 32768.0}) {
    CHECK(cal.attention.forward.at(Dtype::bf16).at(seq_len) ==
          Approx(kAttentionEfficiency).epsilon(0.01));
  }

  // Without the peaks there is nothing to divide by: exit 2 and no file.
  std::filesystem::remove(out);
  CHECK(run(kTool + " calibrate --gemm " + in.string() + " --compute-out " + out.string() +
            " > /dev/null 2>&1") == 2);
  CHECK_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(in);
}
