// `clustersim run` as a planner reads it: the per-GPU figures Megatron-LM and NeMo print, the time
// to train, and a layout that does not fit simulated on request.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

using clustersim::test::read_text;
using clustersim::test::run_cli;
using clustersim::test::write_text;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path scratch() {
  static const fs::path dir = clustersim::test::cli_scratch("run-cli");
  return dir;
}

// The number printed after `label` on its row, up to the next space.
std::string field_after(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  REQUIRE(at != std::string::npos);
  const auto start = out.find_first_not_of(' ', at + label.size());
  return out.substr(start, out.find(' ', start) - start);
}

}  // namespace

TEST_CASE("run prints TFLOP/s and tokens/s per GPU and the time to train", "[tools][cli]") {
  json s = json::parse(clustersim::test::kSmall);
  s["training"]["tokens_total"] = 1e12;
  write_text(scratch() / "small.json", s.dump());
  const auto r = run_cli("run small.json --json out.json", scratch());
  REQUIRE(r.exit_code == 0);
  const json out = json::parse(read_text(scratch() / "out.json"));
  // tokens/s per GPU: the step's tokens (4 sequences x 2048) over its time, over 8 GPUs.
  const double step_s = out.at("step_time_s").get<double>();
  const double per_gpu = 4.0 * 2048.0 / step_s / 8.0;
  const std::string row = r.out.substr(r.out.find("per GPU"));
  CHECK_THAT(
      row, Catch::Contains(std::to_string(static_cast<long>(std::lround(per_gpu))) + " tokens/s"));
  // TFLOP/s per GPU = MFU x the 989.4 TFLOP/s dense BF16 peak of the H800.
  const double tflops = out.at("mfu").get<double>() * 989.4;
  CHECK(std::stod(field_after(r.out, "per GPU")) == Approx(tflops).margin(0.051));
  // 10^12 tokens at 4 x 2048 tokens per step_s seconds.
  const double days = 1e12 / (4.0 * 2048.0 / step_s) / 86400.0;
  CHECK(std::stod(field_after(r.out, "time to train")) == Approx(days).margin(0.0051));
}

TEST_CASE("run --ignore-memory simulates a layout that does not fit and says so", "[tools][cli]") {
  // Llama 3 70B on 8 GPUs (TP 8, no ZeRO): 70.6e9 parameters x 16 B (BF16 weights and gradients,
  // 12 B of Adam states) / 8 = 141 GB per GPU before activations, twice the H800's 80 GB.
  json s = json::parse(clustersim::test::kSmall);
  s["model"] = "llama3-70b";
  write_text(scratch() / "big.json", s.dump());
  const auto refused = run_cli("run big.json --json big-out.json", scratch());
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out, Catch::Contains("does NOT fit"));
  CHECK_FALSE(fs::exists(scratch() / "big-out.json"));
  const auto r = run_cli("run big.json --ignore-memory --json big-out.json", scratch());
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("does NOT fit"));
  CHECK_THAT(r.out, Catch::Contains("Simulated anyway (--ignore-memory)"));
  const json out = json::parse(read_text(scratch() / "big-out.json"));
  CHECK(out.at("fits_in_memory").get<bool>() == false);
  CHECK(out.at("step_time_s").get<double>() > 0);
}

TEST_CASE("run times attention with the kernel the scenario names", "[tools][cli]") {
  // Llama 3 8B, seq 2048, TP 8 (4 of 32 heads per GPU), 4 micro-batches of 1, nothing overlapped
  // with compute: the step differs by the attention kernels' time alone. Per layer and
  // micro-batch, the causal forward is 4 S^2 heads d / 2 = 4 x 2048^2 x 4 x 128 / 2 FLOPs and the
  // backward 2.5 times that. Measured on an H200 at 2k (validation/data/h200-2026-12-04/
  // torch-probe-3.json): cuDNN 457.0 forward, 370.2 backward; FlashAttention-2 273.8 and 222.1
  // TFLOPS; both times the GPU's sustained fraction.
  json s = json::parse(clustersim::test::kSmall);
  // Replayed from a CUDA graph: passes this small are issued slower than the GPU runs them, and
  // the host's dispatch would hide part of the difference.
  s["training"]["cuda_graphs"] = "full_iteration";
  const auto step_with = [&](const std::string& kernel) {
    s["training"]["attention"] = kernel;
    write_text(scratch() / ("attn-" + kernel + ".json"), s.dump());
    const auto r =
        run_cli("run attn-" + kernel + ".json --json attn-" + kernel + ".out.json", scratch());
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(read_text(scratch() / ("attn-" + kernel + ".out.json")))
        .at("step_time_s")
        .get<double>();
  };
  const json calibration = json::parse(read_text(fs::path(CLUSTERSIM_SOURCE_DIR) / "validation" /
                                                 "data" / "compute_efficiency.json"));
  const double sustained =
      calibration.at("system").at("parameters").at("tensor_sustained_fraction").get<double>();
  const double forward = 4.0 * 2048 * 2048 * 4 * 128 / 2;
  const double per_layer =
      forward / 273.8e12 + 2.5 * forward / 222.1e12 - (forward / 457e12 + 2.5 * forward / 370.2e12);
  const double expected = 4 * 32 * per_layer / sustained;
  CHECK(step_with("flash2") - step_with("flash") == Approx(expected).epsilon(0.01));
}

TEST_CASE("an attention kernel the GPU's calibration has no figures for is refused",
          "[tools][cli]") {
  // The A100 calibration measures one fused kernel and lists no others.
  const std::string a100 = R"({"name": "a100", "model": "llama3-8b", "cluster": "dgx-a100-sc21",
  "gpus": 8, "parallelism": {"dp": 1, "tp": 8, "pp": 1, "sequence_parallel": true},
  "training": {"global_batch": 4, "micro_batch": 1, "seq_len": 2048, "precision": "bf16",
  "attention": "flash3"}})";
  write_text(scratch() / "a100-fa3.json", a100);
  const auto r = run_cli("check a100-fa3.json", scratch());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("a100-fa3.json") && Catch::Contains("/training/attention") &&
                        Catch::Contains("compute_efficiency-a100.json"));
}
