// The memory budget of the commands that simulate steps (--max-memory, step/work_estimate.hpp):
// a step estimated above it exits 2 before anything is simulated or written, naming the
// scenario, the estimate, its main term and the budget; `check` prints the estimate.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

namespace cli = clustersim::test;
namespace fs = std::filesystem;

namespace {

// The small scenario (Llama 3 8B on 8 GPUs, TP 8, PP 1) with `micro_batches` per step, written
// as NAME into the scratch directory of this process, where the commands run.
const fs::path& dir() {
  static const fs::path d = cli::cli_scratch("max-memory");
  return d;
}
std::string small_with(const std::string& name, long long micro_batches) {
  nlohmann::json s = nlohmann::json::parse(cli::kSmall);
  s["training"]["global_batch"] = micro_batches;
  // The run's length: campaign refuses a scenario without it before anything else, and every
  // command one shorter than a step (10^10 micro-batches of 2048 tokens: 2e13).
  s["training"]["tokens_total"] = 1e15;
  cli::write_text(dir() / name, s.dump());
  return name;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("run on 10^10 micro-batches exits 2 with the estimate before simulating",
          "[tools][cli]") {
  // 10^10 micro-batches: 2 x 10^10 passes, hundreds of gigabytes at 12 B or more each, above
  // half of any machine's memory.
  const std::string file = small_with("absurd.json", 10'000'000'000);
  const cli::CliRun r = cli::run_cli("run " + file + " --json out.json", dir());
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "absurd.json:/training/global_batch: simulating this step is estimated"));
  CHECK(has(r.err, "passes from 10000000000 micro-batches x 1 stage)"));
  CHECK(has(r.err, "above the memory budget of"));
  CHECK(has(r.err, "of this machine's"));
  CHECK(has(r.err, "--max-memory SIZE raises it"));
  CHECK_FALSE(has(r.out, "step time"));
  CHECK_FALSE(fs::exists(dir() / "out.json"));
}

TEST_CASE("run and campaign hold a step to --max-memory", "[tools][cli]") {
  // 10^8 micro-batches: 2 x 10^8 passes, gigabytes; above 1G, below 1T.
  const std::string file = small_with("large.json", 100'000'000);
  for (const char* command : {"run", "campaign"}) {
    CAPTURE(command);
    const cli::CliRun r =
        cli::run_cli(std::string(command) + " " + file + " --max-memory 1G", dir());
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "large.json:/training/global_batch"));
    CHECK(has(r.err, "passes from 100000000 micro-batches x 1 stage"));
    CHECK(has(r.err, "above the memory budget of 1.0 GiB (--max-memory 1G;"));
  }
  // The small step itself fits a budget of 1G.
  const cli::CliRun ok =
      cli::run_cli("run " + small_with("small.json", 4) + " --max-memory 1G", dir());
  CHECK(ok.exit_code == 0);
}

TEST_CASE("check prints the simulation's estimate and writes it to its JSON", "[tools][cli]") {
  const std::string file = small_with("absurd-check.json", 100'000'000);
  const cli::CliRun r = cli::run_cli("check " + file + " --json check.json", dir());
  REQUIRE(r.exit_code == 0);
  CHECK(has(r.out, "peak memory"));
  CHECK(has(r.out, "passes from 100000000 micro-batches x 1 stage"));
  const nlohmann::json j = nlohmann::json::parse(cli::read_text(dir() / "check.json"));
  const nlohmann::json& e = j.at("simulation_estimate");
  CHECK(e.at("gpus") == 8);
  CHECK(e.at("actors") == 1);
  // At least the 32 layer forwards and 32 layer backwards of each micro-batch.
  CHECK(e.at("ops").get<double>() > 64 * 1e8);
  // A forward and a backward pass per micro-batch, each recorded in 12 bytes at least.
  CHECK(e.at("passes").get<double>() >= 2 * 1e8);
  CHECK(e.at("peak_memory_bytes").get<double>() > 12 * 2 * 1e8);
}

TEST_CASE("a max-memory that is not a size exits 2 naming the option", "[tools][cli]") {
  const std::string file = small_with("small-bad-size.json", 4);
  const std::string value = GENERATE("0", "abc", "-5", "2P", "");
  CAPTURE(value);
  const cli::CliRun r = cli::run_cli("run " + file + " --max-memory '" + value + "'", dir());
  CHECK(r.exit_code == 2);
  CHECK(has(r.err, "--max-memory"));
  CHECK_FALSE(has(r.out, "step time"));
}

TEST_CASE("regress hands each run its --max-memory", "[tools][cli]") {
  const std::string scenario = small_with("regressed.json", 4);
  const nlohmann::json baseline = {
      {"evaluator", "run"},
      {"tolerance_pct", 1.0},
      {"metrics", {"step_time_s"}},
      {"scenarios", {{{"scenario", scenario}, {"values", {{"step_time_s", 1.0}}}}}}};
  cli::write_text(dir() / "baseline.json", baseline.dump());
  // A 1 KiB budget: the small step's estimate (tens of megabytes) is above it.
  const cli::CliRun r =
      cli::run_cli("regress --baseline baseline.json --max-memory 1K --quiet", dir());
  CHECK(r.exit_code == 1);
  CHECK(has(r.out + r.err, "regressed.json:/gpus: simulating this step is estimated to need"));
  CHECK(has(r.out + r.err, "(--max-memory 1024; a larger --max-memory raises it)"));
}
