// A layout over the usable HBM but inside the memory model's unverified fragmentation reserve
// (models/memory.hpp MemoryEstimate::tight): `check` calls it TIGHT, `run` simulates it without
// --ignore-memory and says so, and the JSON keeps fits_in_memory false.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

namespace cli = clustersim::test;
namespace fs = std::filesystem;

TEST_CASE("A tight layout is simulated and named tight, not refused", "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("tight");
  // DeepSeek-V3 on 2048 H800 as its report ran it fits (70.5 of 74.4 GiB usable); with FP32
  // Adam moments and the experts' activation function stored, not recomputed, it needs about
  // 77.4 GiB: over the usable HBM, under the 78.36 GiB the H800 has beside its CUDA context.
  nlohmann::json s =
      nlohmann::json::parse(cli::shipped_scenario_text("deepseek-v3-2048-h800.json"));
  s["training"]["optimizer_moments_dtype"] = "fp32";
  s["training"]["recompute_modules"] = {"layernorm", "mla_up_proj"};
  cli::write_text(dir / "fp32-moments.json", s.dump());

  const cli::CliRun check = cli::run_cli("check fp32-moments.json --json check.json", dir);
  REQUIRE(check.exit_code == 0);
  const auto verdict = nlohmann::json::parse(cli::read_text(dir / "check.json"));
  INFO(check.out);
  REQUIRE(verdict.at("fits") == false);
  REQUIRE(verdict.at("tight") == true);
  CHECK(check.out.find("Verdict: TIGHT") != std::string::npos);

  const cli::CliRun run = cli::run_cli("run fp32-moments.json -q --json run.json", dir);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("is TIGHT in GPU memory") != std::string::npos);
  CHECK(run.out.find("step time") != std::string::npos);
  const auto j = nlohmann::json::parse(cli::read_text(dir / "run.json"));
  CHECK(j.at("fits_in_memory") == false);
  // The 79.11 GiB CUDA reports for an 80 GB H100 / H800, less the 0.75 GiB CUDA context.
  CHECK(j.at("memory_physical_GiB").get<double>() == Approx(79.11 - 0.75));
  CHECK(j.at("memory_per_gpu_GiB").get<double>() > j.at("memory_usable_GiB").get<double>());
  fs::remove_all(dir);
}
