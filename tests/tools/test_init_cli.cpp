// `clustersim init`: a starting scenario that `check` accepts, every defaulted key written out at
// its default. (tests/tools/check_schema.py validates its output against the schema.)
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "input/input_keys.hpp"
#include "tests/tools/cli_runner.hpp"

using clustersim::test::cli_scratch;
using clustersim::test::CliRun;
using clustersim::test::read_text;
using clustersim::test::run_cli;
using nlohmann::json;

TEST_CASE("init writes a scenario check accepts, its layout and defaults as worked out by hand") {
  const auto dir = cli_scratch("init");
  const CliRun init =
      run_cli("init --model llama3-8b --cluster h800-128x8-rail --gpus 64 -o out/start.json", dir);
  INFO(init.err);
  REQUIRE(init.exit_code == 0);
  const json s = json::parse(read_text(dir / "out/start.json"));
  // Llama 3 8B: 32 heads, 8 KV heads, FFN 14336; 8 GPUs per node: tp 8 divides them all;
  // dp = 64 / 8 = 8; 1024 sequences are 128 per DP rank; 4096 tokens fit its 8192.
  CHECK(s["parallelism"]["tp"] == 8);
  CHECK(s["parallelism"]["dp"] == 8);
  CHECK(s["training"]["global_batch"] == 1024);
  CHECK(s["training"]["seq_len"] == 4096);
  // Megatron-LM's bucket of 40M gradients, FP32 for BF16 training: 160e6 B / 2^20 MiB.
  CHECK(s["training"]["grad_bucket_MiB"] == 152.587890625);
  CHECK(s["training"]["dropout"] == false);  // the preset: Llama 3 trains without dropout
  CHECK(s["comm"]["grad_dtype"] == "fp32");
  // Every key of the tables with a default is there, except those that apply only with another
  // setting or to mixture-of-experts models.
  for (const auto& key : clustersim::input::parallelism_keys().names()) {
    const bool conditional = key == "ep" || key == "etp" || key == "zero3_implementation" ||
                             key == "cp_implementation" || key == "layers_per_stage";
    CHECK(s["parallelism"].contains(key) != conditional);
  }
  const CliRun check = run_cli("check out/start.json", dir);
  INFO(check.err);
  CHECK(check.exit_code == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("init narrows tensor parallelism to the GPUs given and refuses more than the cluster") {
  const auto dir = cli_scratch("init-narrow");
  const CliRun four = run_cli("init --model llama3-8b --gpus 4", dir);
  REQUIRE(four.exit_code == 0);
  const json s = json::parse(four.out);
  // 4 GPUs: tp 4 (divides 32 heads, 8 KV heads, 14336, 8 per node), dp 1.
  CHECK(s["parallelism"]["tp"] == 4);
  CHECK(s["parallelism"]["dp"] == 1);
  // h800-128x8-rail holds 128 x 8 = 1024 GPUs.
  const CliRun too_many = run_cli("init --gpus 1025 -o x.json", dir);
  CHECK(too_many.exit_code == 2);
  CHECK(too_many.err.find("1..1024") != std::string::npos);
  const CliRun partial = run_cli("init --gpus 12 -o x.json", dir);
  CHECK(partial.exit_code == 2);
  CHECK(partial.err.find("/gpus: 12 GPUs do not fill whole nodes of 8 GPUs") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "x.json"));
  std::filesystem::remove_all(dir);
}
