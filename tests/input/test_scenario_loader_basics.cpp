#include <catch2/catch.hpp>

#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"

using namespace clustersim;

TEST_CASE("the default scenario loads with the seed's optimized layout") {
  const Scenario s =
      load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-optimized-1024.json");
  CHECK(s.gpus == 1024);
  CHECK(s.parallelism.dp == 64);
  CHECK(s.parallelism.tp == 8);
  CHECK(s.parallelism.pp == 2);
  CHECK(s.model.num_layers == 80);
  CHECK(s.cluster.total_gpus() == 1024);
}

TEST_CASE("the default gradient bucket is Megatron-Core's: max(40M, 1M x dp x cp) parameters") {
  // `gpus` GPUs of the seed's cluster at tp 8, the given cp, dp inferred; grad dtype `dtype`.
  const auto bucket = [](int gpus, int cp, const std::string& dtype, const std::string& extra) {
    const std::string text =
        R"({"model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": )" + std::to_string(gpus) +
        R"(, "parallelism": {"tp": 8, "cp": )" + std::to_string(cp) +
        R"(}, "training": {"global_batch": 1024, "micro_batch": 1, "seq_len": 4096)" + extra +
        R"(}, "comm": {"grad_dtype": ")" + dtype + R"("}})";
    return load_scenario(JsonDocument::parse(text, "bucket.json")).training.grad_bucket_bytes;
  };
  CHECK(bucket(64, 1, "bf16", "") == Approx(40e6 * 2));   // dp 8: the 40M floor
  CHECK(bucket(64, 1, "fp32", "") == Approx(40e6 * 4));   // parameters, not bytes
  CHECK(bucket(512, 1, "bf16", "") == Approx(64e6 * 2));  // dp 64: 1M per rank
  CHECK(bucket(512, 4, "bf16", "") == Approx(64e6 * 2));  // dp 16 x cp 4
  CHECK(bucket(512, 1, "bf16", R"(, "grad_bucket_MiB": 25)") == Approx(25.0 * 1024 * 1024));
}

TEST_CASE("gradients are reduced in FP32 unless the run trains in FP16, as in Megatron-LM") {
  // `training` and `comm` members appended to a small Llama 3 8B scenario.
  const auto grad_dtype = [](const std::string& training, const std::string& comm) {
    const std::string text =
        R"({"model": "llama3-8b", "cluster": "h800-128x8-rail", "gpus": 64,)"
        R"( "parallelism": {"tp": 8}, "training": {"global_batch": 1024, "micro_batch": 1,)"
        R"( "seq_len": 4096)" +
        training + "}" + comm + "}";
    return load_scenario(JsonDocument::parse(text, "dtype.json")).comm.grad_dtype;
  };
  CHECK(grad_dtype("", "") == Dtype::fp32);  // BF16 training, no "comm" section
  CHECK(grad_dtype(R"(, "precision": "fp8")", R"(, "comm": {})") == Dtype::fp32);
  CHECK(grad_dtype(R"(, "precision": "fp16")", "") == Dtype::fp16);
  CHECK(grad_dtype(R"(, "precision": "fp16")", R"(, "comm": {"compression": "none"})") ==
        Dtype::fp16);
  CHECK(grad_dtype("", R"(, "comm": {"grad_dtype": "bf16"})") == Dtype::bf16);  // as written
}

TEST_CASE("dropout follows the model preset unless the scenario says otherwise") {
  const auto dropout = [](const std::string& model, const std::string& training) {
    const std::string text =
        R"({"model": ")" + model +
        R"(", "cluster": "h800-128x8-rail", "gpus": 64,)"
        R"( "parallelism": {"tp": 8}, "training": {"global_batch": 1024, "micro_batch": 1,)"
        R"( "seq_len": 2048)" +
        training + "}}";
    return load_scenario(JsonDocument::parse(text, "dropout.json")).training.dropout;
  };
  CHECK_FALSE(dropout("llama3-8b", ""));  // Llama 3: hidden and attention dropout 0
  CHECK(dropout("gpt3-175b", ""));        // GPT-3: Megatron-LM's dropout 0.1
  CHECK(dropout("llama3-8b", R"(, "dropout": true)"));
  CHECK_FALSE(dropout("gpt3-175b", R"(, "dropout": false)"));
}
