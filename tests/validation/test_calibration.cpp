// Calibration fits: α–β parameters recovered from synthetic nccl-tests logs, the calibration
// file round trip, GEMM JSON reading and the compute fit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>

#include "core/errors.hpp"
#include "validation/calibration.hpp"
#include "validation/gemm_log.hpp"
#include "validation/nccl_tests_log.hpp"

using namespace clustersim::validation;

namespace {

// nccl-tests' number formatting (src/util.cu getFloatStr): 2 decimals, then 1, then 0 as the
// column width allows.
std::string float_str(double value, int width) {
  int power = 0;
  for (double v = 1; value >= v; v *= 10) ++power;
  char buf[64];
  if (power < width - 2)
    std::snprintf(buf, sizeof buf, "%*.2f", width, value);
  else if (power < width - 1)
    std::snprintf(buf, sizeof buf, "%*.1f", width, value);
  else
    std::snprintf(buf, sizeof buf, "%*.0f", width, value);
  return buf;
}

struct Regime {
  double max_bytes, latency_us, busbw_GBps;
};

// A synthetic all_reduce_perf log for `nranks` ranks on one node whose times follow the α–β
// model exactly (then rounded as nccl-tests prints them).
std::string synthesize(const std::vector<Regime>& regimes, int nranks, double min_bytes,
                       double max_bytes) {
  const double factor = 2.0 * (nranks - 1) / nranks;
  std::ostringstream out;
  out << "# Collective test starting: all_reduce_perf\n"
      << "# nThread 1 nGpus " << nranks << " minBytes 8 maxBytes 8589934592 step: 2(factor)\n#\n"
      << "#       size         count      type   redop    root     time   algbw   busbw #wrong"
         "     time   algbw   busbw #wrong\n";
  for (double s = min_bytes; s <= max_bytes; s *= 2) {
    const Regime* r = &regimes.back();
    for (const auto& g : regimes)
      if (s <= g.max_bytes) {
        r = &g;
        break;
      }
    const double t = r->latency_us + s * factor / (r->busbw_GBps * 1e3);
    const double algbw = s / t / 1e3;
    char row[256];
    std::snprintf(row, sizeof row, "%12.0f  %12.0f  %8s  %6s  %6s", s, s / 4, "float", "sum", "-1");
    out << row;
    for (int k = 0; k < 2; ++k)
      out << "  " << float_str(t, 7) << "  " << float_str(algbw, 6) << "  "
          << float_str(algbw * factor, 6) << "  " << std::setw(6) << 0;
    out << "\n";
  }
  out << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0 \n";
  return out.str();
}

}  // namespace

TEST_CASE("one α–β regime is fitted back within 1% from a synthesized log") {
  // α = 20 µs, β = 400 GB/s busbw on 8 ranks (an NVLink-like table), 64 KiB .. 8 GiB.
  const auto log =
      parse_nccl_tests_text(synthesize({{1e30, 20.0, 400.0}}, 8, 65536, 8589934592.0), "s.log");
  const auto cal = fit_network_table(log.tables[0], "s.log");
  REQUIRE(cal.regimes.size() == 1);
  CHECK(cal.regimes[0].latency_us == Approx(20.0).epsilon(0.01));
  CHECK(cal.regimes[0].busbw_GBps == Approx(400.0).epsilon(0.01));
  CHECK(cal.link_class == "intra_node");
  CHECK(cal.r2 > 0.999);
  // The efficiency curve: busbw(S) / β = S·f/β / (α + S·f/β); at 8 GiB, by hand:
  // transfer = 8589934592·1.75/(400e3) = 37580.96 µs, efficiency = 37580.96/37600.96 = 0.99947.
  CHECK(cal.bw_efficiency.back().second == Approx(0.99947).epsilon(0.01));
}

TEST_CASE("two size regimes (a small-message protocol and a large one) are both recovered") {
  // Small messages: α = 6 µs, β = 20 GB/s; from 64 KiB on: α = 25 µs, β = 450 GB/s.
  const auto log = parse_nccl_tests_text(
      synthesize({{32768, 6.0, 20.0}, {1e30, 25.0, 450.0}}, 8, 8, 8589934592.0), "s2.log");
  const auto cal = fit_network_table(log.tables[0], "s2.log");
  REQUIRE(cal.regimes.size() == 2);
  CHECK(cal.regimes[0].max_bytes == 32768);
  CHECK(cal.regimes[1].min_bytes == 65536);
  CHECK(cal.regimes[0].latency_us == Approx(6.0).epsilon(0.01));
  CHECK(cal.regimes[0].busbw_GBps == Approx(20.0).epsilon(0.01));
  CHECK(cal.regimes[1].latency_us == Approx(25.0).epsilon(0.01));
  CHECK(cal.regimes[1].busbw_GBps == Approx(450.0).epsilon(0.01));
  CHECK(cal.peak_busbw_GBps == Approx(450.0).epsilon(0.01));
  CHECK(cal.max_abs_rel_residual < 0.01);
}

TEST_CASE("a plain α–β line through two exact points gives α and β by hand") {
  // t = 10 + S·1/(100e3): S = 1e6 -> 20 µs, S = 2e6 -> 30 µs (factor 1).
  const auto fit = fit_alpha_beta({{1e6, 20.0}, {2e6, 30.0}}, 1.0);
  CHECK(fit.latency_us == Approx(10.0));
  CHECK(fit.busbw_GBps == Approx(100.0));
  CHECK(fit.time_us(3e6, 1.0) == Approx(40.0));
}

TEST_CASE("the published DGX H100 table calibrates to an NVLink busbw near its plateau") {
  const auto log =
      load_nccl_tests_log(std::string(CLUSTERSIM_SOURCE_DIR) +
                          "/tests/validation/data/dgx-h100-allreduce-nvls.v2.13-layout.txt");
  const auto cal = fit_network_table(log.tables[0], "dgx");
  // The published plateau is 480 GB/s busbw at 8-16 GiB; the fitted asymptote must lie
  // between the largest measured busbw and a few percent above it.
  CHECK(cal.peak_busbw_GBps > 470);
  CHECK(cal.peak_busbw_GBps < 500);
  CHECK(cal.time_us(17179869184.0) == Approx(62648).epsilon(0.02));
}

TEST_CASE("a calibration file survives a write and a strict read") {
  const auto log = parse_nccl_tests_text(
      synthesize({{32768, 6.0, 20.0}, {1e30, 25.0, 450.0}}, 8, 8, 1073741824.0), "s3.log");
  Calibration c = calibrate({log}, {}, {});
  c.name = "synthetic";
  c.created = "2026-01-01T00:00:00Z";
  const auto path = std::filesystem::temp_directory_path() / "clustersim-test-calib.json";
  write_calibration(path.string(), c);
  const Calibration back = load_calibration(path.string());
  std::filesystem::remove(path);
  REQUIRE(back.network.size() == 1);
  CHECK(back.name == "synthetic");
  CHECK(back.network[0].regimes.size() == c.network[0].regimes.size());
  CHECK(back.network[0].regimes[1].busbw_GBps == Approx(c.network[0].regimes[1].busbw_GBps));
  CHECK(back.network[0].time_us(1e8) == Approx(c.network[0].time_us(1e8)));
  CHECK(back.find("intra_node", NcclTestsOp::all_reduce, 8) != nullptr);
  CHECK(back.find("inter_node", NcclTestsOp::all_reduce, 8) == nullptr);
}

TEST_CASE("a calibration file with an unknown key is rejected at its pointer") {
  const auto doc = clustersim::JsonDocument::parse(
      R"({"format": "clustersim-calibration/1", "network": [{"link_class": "intra_node",
          "op": "all_reduce", "nranks": 8, "regimes": [{"min_bytes": 8, "max_bytes": 16,
          "latency_us": 5, "busbw_GBps": 10, "bandwith": 3}]}]})",
      "c.json");
  try {
    calibration_from_json(doc.root());
    FAIL("expected a ConfigError");
  } catch (const clustersim::ConfigError& e) {
    CHECK(e.pointer() == "/network/0/regimes/0/bandwith");
  }
}

TEST_CASE("GEMM JSON is read, and time and TFLOP/s must agree") {
  const std::string text = R"({"format": "clustersim-gemm-sweep/1",
    "device": {"name": "NVIDIA H100 80GB HBM3"}, "driver_version": "550.54.15",
    "cuda_runtime_version": "12.4", "date": "2026-01-02",
    "results": [
      {"name": "qkv_fwd", "dtype": "bf16", "m": 4096, "n": 3072, "k": 8192, "time_us": 400},
      {"name": "square", "dtype": "fp8", "m": 8192, "n": 8192, "k": 8192, "tflops": 1290.1}]})";
  const auto log = parse_gemm_log(text, "g.json");
  REQUIRE(log.results.size() == 2);
  CHECK(log.device == "NVIDIA H100 80GB HBM3");
  CHECK(log.cuda_version == "12.4");
  // 2·4096·3072·8192 = 206158430208 FLOPs in 400 µs = 515.4 TFLOP/s.
  CHECK(log.results[0].flops == Approx(206158430208.0));
  CHECK(log.results[0].tflops() == Approx(515.396).epsilon(1e-4));
  // 2·8192³ = 1.0995e12 FLOPs at 1290.1 TFLOP/s = 852.3 µs.
  CHECK(log.results[1].time_us == Approx(1.0995116e12 / 1290.1e12 * 1e6).epsilon(1e-6));
  CHECK(log.results[1].dtype == clustersim::Dtype::fp8);

  const std::string bad = R"({"format": "clustersim-gemm-sweep/1", "results": [
      {"dtype": "bf16", "m": 1024, "n": 1024, "k": 1024, "time_us": 10, "tflops": 900}]})";
  CHECK_THROWS_AS(parse_gemm_log(bad, "bad.json"), clustersim::ConfigError);
}

TEST_CASE("the compute fit recovers launch cost and effective throughput from GEMM timings") {
  // time = 5 µs + flops / 700 TFLOP/s exactly (no memory term), peak 989 TFLOP/s.
  GemmLog log;
  log.file = "synthetic";
  for (double s : {512.0, 1024.0, 2048.0, 4096.0, 8192.0}) {
    GemmMeasurement g;
    g.name = "square";
    g.m = g.n = g.k = s;
    g.flops = 2 * s * s * s;
    g.time_us = 5.0 + g.flops / 700e12 * 1e6;
    log.results.push_back(g);
  }
  const auto cc = fit_compute({log}, {{clustersim::Dtype::bf16, 989.0}});
  REQUIRE(cc.models.size() == 1);
  CHECK(cc.models[0].launch_us == Approx(5.0).epsilon(0.01));
  CHECK(cc.models[0].effective_tflops == Approx(700.0).epsilon(0.01));
  CHECK(*cc.models[0].max_efficiency == Approx(700.0 / 989.0).epsilon(0.01));
  REQUIRE(cc.points.size() == 5);
  // 8192³: 1.0995e12 FLOPs in 5 + 1570.7 µs -> 697.8 TFLOP/s -> 70.55% of 989.
  CHECK(*cc.points[4].efficiency == Approx(0.7055).epsilon(0.002));
}
