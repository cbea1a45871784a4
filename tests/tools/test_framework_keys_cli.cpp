// `check` names how a scenario's framework runs its kernels: FP8 current scaling, PyTorch's eager
// or per-block compiled element-wise kernels, op-level checkpointing, the unfused cross entropy.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/tools/cli_runner.hpp"

namespace cli = clustersim::test;
namespace fs = std::filesystem;

TEST_CASE("check names the framework's kernels and its checkpointing policy", "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("framework-keys");
  nlohmann::json s = nlohmann::json::parse(cli::shipped_scenario_text("seed-optimized-1024.json"));
  s["training"]["precision"] = "fp8";
  s["training"]["fp8_recipe"] = "current";
  s["training"]["recompute"] = "selective_op";
  s["training"]["kernel_fusion"] = "eager";
  s["training"]["cross_entropy"] = "unfused";
  cli::write_text(dir / "keys.json", s.dump());
  const cli::CliRun check = cli::run_cli("check keys.json", dir);
  INFO(check.out << check.err);
  REQUIRE(check.exit_code == 0);
  CHECK(check.out.find("fp8 (current scaling), selective_op recomputation") != std::string::npos);
  CHECK(check.out.find("PyTorch's eager element-wise kernels") != std::string::npos);
  CHECK(check.out.find("unfused cross entropy") != std::string::npos);

  CHECK(check.out.find("gradients gathered in BF16") == std::string::npos);

  s["training"]["kernel_fusion"] = "compiled_blocks";
  s["training"]["fp8_gradient_gather"] = false;
  cli::write_text(dir / "compiled.json", s.dump());
  const cli::CliRun compiled = cli::run_cli("check compiled.json", dir);
  CHECK(compiled.out.find("compiled blocks (final norm and loss eager)") != std::string::npos);
  CHECK(compiled.out.find("fp8 (current scaling) (gradients gathered in BF16)") !=
        std::string::npos);
  s["training"].erase("fp8_gradient_gather");

  // A recipe without FP8 is refused at its path, with exit code 2.
  s["training"]["precision"] = "bf16";
  cli::write_text(dir / "bad.json", s.dump());
  const cli::CliRun bad = cli::run_cli("check bad.json", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/training/fp8_recipe") != std::string::npos);
}

TEST_CASE("check says when the backward's TP collectives run beside its GEMMs", "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("tp-async-backward");
  nlohmann::json s = nlohmann::json::parse(cli::shipped_scenario_text("seed-optimized-1024.json"));
  const std::string said = "the backward's TP collectives beside its GEMMs";
  cli::write_text(dir / "off.json", s.dump());
  const cli::CliRun off = cli::run_cli("check off.json", dir);
  REQUIRE(off.exit_code == 0);
  CHECK(off.out.find(said) == std::string::npos);

  s["training"]["tp_async_backward"] = true;
  cli::write_text(dir / "on.json", s.dump());
  const cli::CliRun on = cli::run_cli("check on.json", dir);
  INFO(on.out << on.err);
  REQUIRE(on.exit_code == 0);
  CHECK(on.out.find(said) != std::string::npos);

  // Not a boolean: refused at its path, with exit code 2.
  s["training"]["tp_async_backward"] = "yes";
  cli::write_text(dir / "bad.json", s.dump());
  const cli::CliRun bad = cli::run_cli("check bad.json", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/training/tp_async_backward") != std::string::npos);
}

TEST_CASE("check says when pipeline receives are posted ahead, and only with interleaving",
          "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("overlap-p2p-comm");
  nlohmann::json s = nlohmann::json::parse(cli::shipped_scenario_text("seed-optimized-1024.json"));
  s["training"]["overlap_p2p_comm"] = true;
  // The shipped 1F1B layout: refused at the key's path, with exit code 2.
  cli::write_text(dir / "bad.json", s.dump());
  const cli::CliRun bad = cli::run_cli("check bad.json", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/training/overlap_p2p_comm") != std::string::npos);

  s["parallelism"]["schedule"] = "interleaved";
  s["parallelism"]["vpp"] = 2;
  cli::write_text(dir / "on.json", s.dump());
  const cli::CliRun on = cli::run_cli("check on.json", dir);
  INFO(on.out << on.err);
  REQUIRE(on.exit_code == 0);
  CHECK(on.out.find("each pipeline receive posted when the pass before it ends") !=
        std::string::npos);
}

TEST_CASE("check names how micro-batch gradients accumulate and FSDP2's copies", "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("grad-accumulation");
  nlohmann::json s = nlohmann::json::parse(cli::shipped_scenario_text("seed-optimized-1024.json"));
  s["training"]["grad_accumulation"] = "deepspeed-bf16";
  s["parallelism"]["zero_stage"] = 3;
  s["parallelism"]["zero3_implementation"] = "fsdp2";
  cli::write_text(dir / "on.json", s.dump());
  const cli::CliRun on = cli::run_cli("check on.json", dir);
  INFO(on.out << on.err);
  REQUIRE(on.exit_code == 0);
  CHECK(on.out.find("micro-batch gradients cast and added into FP32 (DeepSpeed BF16_Optimizer)") !=
        std::string::npos);
  CHECK(on.out.find("PyTorch FSDP2: each gather copied out") != std::string::npos);
  // The seed's layout has pp 2: FSDP2 keeps the stage gathered and its gradients unsharded.
  CHECK(on.out.find("with pipeline parallelism gathered once a step and reduced after the last "
                    "backward") != std::string::npos);
  CHECK(on.out.find("all of them in 16 bits, kept gathered all step") != std::string::npos);
  CHECK(on.out.find("unsharded, accumulated over the step's micro-batches") != std::string::npos);
  CHECK(on.out.find("DP reduction once per step (after the last backward)") != std::string::npos);

  s["training"]["grad_accumulation"] = "autograd";
  s["training"]["optimizer_kernels"] = "foreach";
  cli::write_text(dir / "autograd.json", s.dump());
  const cli::CliRun autograd = cli::run_cli("check autograd.json", dir);
  CHECK(autograd.out.find("micro-batch gradients added into .grad by autograd") !=
        std::string::npos);
  CHECK(autograd.out.find("PyTorch's foreach AdamW and clip_grad_norm_") != std::string::npos);

  // Not one of the three: refused at its path, with exit code 2.
  s["training"]["grad_accumulation"] = "manual";
  cli::write_text(dir / "bad.json", s.dump());
  const cli::CliRun bad = cli::run_cli("check bad.json", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("/training/grad_accumulation") != std::string::npos);
}

TEST_CASE("check names how context parallelism moves K and V", "[tools][cli]") {
  const fs::path dir = cli::cli_scratch("cp-implementation");
  nlohmann::json s = nlohmann::json::parse(cli::shipped_scenario_text("seed-optimized-1024.json"));
  const int dp = s["parallelism"]["dp"].get<int>();
  REQUIRE(dp % 2 == 0);
  s["parallelism"]["cp"] = 2;
  s["parallelism"]["dp"] = dp / 2;
  for (const auto& [value, words] :
       {std::pair<const char*, const char*>{nullptr, "x CP 2 (Transformer Engine's ring)"},
        {"all_gather", "x CP 2 (K/V all-gathered)"},
        {"torch", "x CP 2 (PyTorch's context_parallel)"}}) {
    if (value != nullptr) s["parallelism"]["cp_implementation"] = value;
    cli::write_text(dir / "cp.json", s.dump());
    const cli::CliRun check = cli::run_cli("check cp.json", dir);
    INFO(check.out << check.err);
    REQUIRE(check.exit_code == 0);
    CHECK(check.out.find(words) != std::string::npos);
  }
}
