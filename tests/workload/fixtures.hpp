// Scenarios for workload, model and step tests: a shipped scenario patched in memory, an
// H100-like GPU and the shipped compute calibrations.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"
#include "models/compute_cost.hpp"

namespace clustersim::test {

inline std::string source_path(const std::string& relative) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/" + relative;
}

inline nlohmann::json scenario_json(const std::string& relative) {
  return JsonDocument::load(source_path(relative)).root().raw();
}

// A small dense model (GPT-like shapes) that keeps tests fast.
inline nlohmann::json small_model() {
  return {{"name", "test-small"},     {"num_layers", 8},     {"hidden_size", 1024},
          {"num_attention_heads", 8}, {"num_kv_heads", 8},   {"ffn_hidden_size", 4096},
          {"vocab_size", 32000},      {"max_seq_len", 2048}, {"ffn", "gelu"},
          {"norm", "layernorm"}};
}

// The seed's optimized scenario with the small model and the given layout.
inline nlohmann::json small_scenario(int gpus, int dp, int tp, int pp) {
  nlohmann::json j = scenario_json("scenarios/seed-optimized-1024.json");
  j["name"] = "test";
  j["model"] = small_model();
  j["gpus"] = gpus;
  j["parallelism"] = {
      {"dp", dp}, {"tp", tp}, {"pp", pp}, {"zero_stage", 0}, {"sequence_parallel", tp > 1}};
  j["training"]["seq_len"] = 1024;
  j["training"]["global_batch"] = dp * 8;
  j["comm"]["fp32_layer_groups"] = nlohmann::json::array();
  return j;
}

// An MoE FFN for the small model: 16 experts of FFN 1024, top-2, sources as placeholders. With
// ep 8 (set by the caller) each GPU holds two experts.
inline nlohmann::json small_moe() {
  return {{"num_experts", 16},
          {"experts_per_token", 2},
          {"expert_ffn_hidden_size", 1024},
          {"sources",
           {{"num_experts", "t"}, {"experts_per_token", "t"}, {"expert_ffn_hidden_size", "t"}}}};
}

// small_scenario(8, 8, 1, 1) (8 GPUs of data parallelism) with ZeRO-3 as `implementation`.
inline nlohmann::json zero3_scenario(const std::string& implementation) {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["parallelism"]["zero_stage"] = 3;
  j["parallelism"]["zero3_implementation"] = implementation;
  return j;
}

// The H100 SXM's dense peaks (NVIDIA H100 datasheet: 989 TFLOP/s BF16/FP16, 1979 FP8), HBM3
// bandwidth (3.35 TB/s) and a 4 us kernel launch.
inline GpuSpec h100_like() {
  GpuSpec g;
  g.name = "test-h100";
  g.peak_flops = {{Dtype::bf16, 989e12}, {Dtype::fp16, 989e12}, {Dtype::fp8, 1979e12}};
  g.hbm_Bps = 3.35e12;
  g.kernel_launch_s = 4e-6;
  return g;
}

// A shipped compute-calibration file without its fitted `system` block and without a measured
// element-wise share (memory-bound kernels at the stream copy's rate): the GEMM, attention and
// copy figures alone, which hand-calculated expectations are written against.
inline models::ComputeCalibration nominal_calibration(
    const std::string& relative = "validation/data/compute_efficiency.json") {
  nlohmann::json root = scenario_json(relative);
  root.erase("system");
  root["memory"].erase("element_wise");
  return models::load_compute_calibration(JsonDocument::parse(root.dump(), relative));
}

inline Scenario load(const nlohmann::json& j) {
  return load_scenario(JsonDocument::parse(j.dump(), "test.json"));
}

// The JSON pointer of the ConfigError loading `j` raises, or "" when it loads.
inline std::string error_pointer(const nlohmann::json& j) {
  try {
    load(j);
  } catch (const ConfigError& e) {
    return e.pointer();
  }
  return "";
}

inline models::ComputeCostModel compute_model(const Scenario& s) {
  return models::ComputeCostModel(
      s.cluster.gpu,
      models::load_compute_calibration(source_path("validation/data/compute_efficiency.json")));
}

}  // namespace clustersim::test
