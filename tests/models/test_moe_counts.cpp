// Mixture-of-experts, MLA and multi-token prediction counts: a small model counted by hand, and
// the MoE presets against the totals their authors publish.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// A 2-layer MoE model small enough to count by hand: h 64, 4 heads (MHA), vocab 100, SwiGLU,
// RMSNorm, untied; layer 0 dense (FFN 128), layer 1 MoE: 4 experts of width 32, top-2, one
// shared expert of width 16.
nlohmann::json tiny_moe_model() {
  return nlohmann::json::parse(R"({
    "name": "tiny-moe", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    "ffn_hidden_size": 128, "vocab_size": 100, "max_seq_len": 64, "ffn": "swiglu",
    "norm": "rmsnorm",
    "moe": {"num_experts": 4, "experts_per_token": 2, "expert_ffn_hidden_size": 32,
            "shared_experts": 1, "shared_expert_ffn_hidden_size": 16, "first_dense_layers": 1,
            "sources": {"num_experts": "t", "experts_per_token": "t",
                        "expert_ffn_hidden_size": "t", "shared_experts": "t",
                        "shared_expert_ffn_hidden_size": "t", "first_dense_layers": "t"}}
  })");
}

ModelSpec model_of(const nlohmann::json& j) {
  return load_model(JsonDocument::parse(j.dump(), "model.json").root());
}

// Our count against a published figure printed to `unit` (e.g. 0.1e9 for "3.3B"): within
// 0.5%, or, where the figure's own rounding is coarser than that, within one unit of its last
// digit (publishers truncate as well as round: DeepSeek-V3's 37.55B is printed "37B").
void check_published(double ours, double published, double unit) {
  INFO("ours " << ours / 1e9 << "B, published " << published / 1e9 << "B");
  if (std::abs(ours - published) <= 0.005 * published) return;
  CHECK(unit > 0.005 * published);  // the coarser rounding is the figure's, not ours
  CHECK(std::abs(ours - published) < unit);
}

// Llama 4's published totals count the vision encoder and its projector, which the text decoder
// presets leave out. Their parameters from the vision_config of meta-llama/Llama-4-Scout-17B-16E
// and -Maverick-17B-128E (the same in both): 34 layers of width 1408 with biased q, k, v, o
// projections, a GELU MLP 1408 -> 5632 -> 1408 with biases and two LayerNorms (weight and
// bias); a class embedding, 577 position embeddings ((336 / 14)^2 + 1), the 14 x 14 x 3 patch
// projection and two LayerNorms; the pixel-shuffle adapter (ratio 0.5: 4 x 1408 = 5632 -> 4096
// -> 4096) and the projector 4096 -> 5120, all without bias.
double llama4_vision_parameters() {
  const double w = 1408, mlp = 5632;
  const double layer = 4 * (w * w + w) + 2 * w * mlp + mlp + w + 4 * w;
  const double stem = w + 577 * w + 14 * 14 * 3 * w + 4 * w;
  const double adapter = 4 * w * 4096 + 4096.0 * 4096 + 4096.0 * 5120;
  return 34 * layer + stem + adapter;  // 871,932,416
}
}  // namespace

TEST_CASE("A 2-layer MoE model counted by hand") {
  const ParameterCounts p = count_parameters(model_of(tiny_moe_model()));
  // Attention 4 h^2 = 16384; norms 2h = 128; dense FFN 3 x 64 x 128 = 24576.
  CHECK(p.attention_per_layer == 16384);
  CHECK(p.per_layer() == 16384 + 24576 + 128);
  // One routed expert 3 x 64 x 32 = 6144; shared 3 x 64 x 16 = 3072; router 64 x 4 = 256.
  CHECK(p.expert == 6144);
  CHECK(p.shared_experts == 3072);
  CHECK(p.router == 256);
  CHECK(p.moe_layers == 1);
  CHECK(p.per_moe_layer(false) == 16384 + 128 + 256 + 3072 + 4 * 6144);  // 44416
  CHECK(p.per_moe_layer(true) == 16384 + 128 + 256 + 3072 + 2 * 6144);   // 32128
  // Embedding 6400, head 6400, final norm 64.
  CHECK(p.total() == 6400 + 6400 + 64 + 41088 + 44416);
  CHECK(p.active() == 6400 + 6400 + 64 + 41088 + 32128);
  CHECK(p.routed_experts() == 4 * 6144);
}

TEST_CASE("Multi-token prediction adds a layer, a 2h x h projection and two norms") {
  nlohmann::json j = tiny_moe_model();
  j["mtp_layers"] = 1;
  const ParameterCounts p = count_parameters(model_of(j));
  // The module's layer is an MoE layer like the last one: 44416 (32128 active) + 2 x 64 x 64
  // + 2 x 64.
  CHECK(p.mtp == 44416 + 8192 + 128);
  CHECK(p.mtp_active == 32128 + 8192 + 128);
  CHECK(p.total() == 98368 + 52736);
  CHECK(p.active() == 86080);  // the main model's
}

TEST_CASE("MLA attention counted by hand, latent norms included") {
  nlohmann::json j = tiny_moe_model();
  j["mla"] = nlohmann::json::parse(R"({"q_lora_rank": 16, "kv_lora_rank": 8,
    "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
    "sources": {"q_lora_rank": "t", "kv_lora_rank": "t", "qk_nope_head_dim": "t",
                "qk_rope_head_dim": "t", "v_head_dim": "t"}})");
  const ModelSpec m = model_of(j);
  // Q: 64 x 16 + 16 x 4 x (8 + 4) = 1792; KV: 64 x (8 + 4) + 8 x 4 x (8 + 8) = 1280;
  // O: 4 x 8 x 64 = 2048; RMSNorms on the latents 16 + 8.
  CHECK(count_parameters(m).attention_per_layer == 1792 + 1280 + 2048 + 24);
  // Per token: Q K^T over s keys with 12-wide heads, attention over 8-wide values.
  const ForwardFlopsBreakdown b = forward_flops_per_token(m, 16);
  CHECK(b.attention_core_per_layer == 2 * 16 * 4 * (12 + 8));
  CHECK(b.attention_projections_per_layer == 2 * (1792 + 1280 + 2048));
  // Tensor parallelism 2: down-projections and latent norms whole, the rest halved.
  const double down = 64 * 16 + 64 * 12 + 24;
  CHECK(layer_parameters_per_tp_rank(m, 2) ==
        down + (16 * 4 * 12 + 8 * 4 * 16 + 2048) / 2.0 + 3 * 64 * 128 / 2.0 + 128);
}

TEST_CASE("MoE FLOPs per token count the active experts") {
  const ModelSpec m = model_of(tiny_moe_model());
  const ForwardFlopsBreakdown b = forward_flops_per_token(m, 16);
  // Router 2 x 64 x 4 = 512; top-2 and shared experts: 3 GEMMs x 2 x 64 x (2 x 32 + 16).
  CHECK(b.moe_mlp_per_layer == 512 + 3 * 2 * 64 * 80);
  CHECK(b.mlp_per_layer == 3 * 2 * 64 * 128);
  // Dense layer 32768 + 4096 + 49152, MoE layer 32768 + 4096 + 31232, logits 2 x 64 x 100.
  CHECK(b.total() == 86016 + 68096 + 12800);
  // The same as 2 x the active parameters that multiply activations (no embedding lookup, no
  // norms) plus the attention core.
  const ParameterCounts p = count_parameters(m);
  CHECK(b.total() == 2 * (p.active() - p.embedding - p.final_norm - 2 * p.norms_per_layer) +
                         2 * b.attention_core_per_layer);
  const FlopsPerToken palm = flops_per_token(m, 16, Recompute::none, FlopConvention::palm);
  CHECK(palm.forward == 2 * (p.active() - p.embedding) + 2 * b.attention_core_per_layer);
}

TEST_CASE(
    "Routed experts are split by ep and etp, their states by the expert-data-parallel "
    "group") {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "name": "moe", "cluster": "h800-128x8-rail", "gpus": 8,
    "parallelism": {"tp": 1, "pp": 1, "ep": 4, "zero_stage": 1},
    "training": {"global_batch": 8, "micro_batch": 1, "seq_len": 64},
    "comm": {"grad_dtype": "bf16"}
  })");
  doc["model"] = tiny_moe_model();
  const Scenario s = load_scenario(JsonDocument::parse(doc.dump(), "moe.json"));
  const StageMemory st = estimate_memory(s).worst();
  // One MoE layer, 4 experts / ep 4 = one expert of 6144 parameters on each GPU.
  CHECK(st.expert_parameters == 6144);
  // BF16 weights (2 B) and gradients (2 B) whole; Adam's 12 B sharded by ZeRO-1 over the
  // expert-data-parallel group: 8 GPUs / ep 4 = 2.
  CHECK(st.expert_state_bytes == 6144 * 2 + 6144 * 2 + 6144 * 12 / 2.0);
  // Everything else is whole on every GPU: 98368 - 4 x 6144, plus the expert.
  CHECK(st.parameters == 98368 - 4 * 6144 + 6144);
  // An MTP module sits on the last stage: its MoE layer's expert and the rest of its 52736.
  doc["model"]["mtp_layers"] = 1;
  const StageMemory mtp =
      estimate_memory(load_scenario(JsonDocument::parse(doc.dump(), "moe.json"))).worst();
  CHECK(mtp.expert_parameters == 2 * 6144);
  CHECK(mtp.parameters == st.parameters + 52736 - 4 * 6144 + 6144);
}

TEST_CASE("MoE presets count their published totals") {
  SECTION("DeepSeek-V3") {
    const ParameterCounts p = count_parameters(load_model_preset("deepseek-v3"));
    // DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: 671B total parameters, 37B
    // activated for each token (main model); the MTP module: 11.5B unique parameters
    // (README_WEIGHTS.md of deepseek-ai/DeepSeek-V3); Hugging Face: 685B with the MTP module.
    check_published(p.total() - p.mtp, 671e9, 1e9);
    check_published(p.active(), 37e9, 1e9);
    check_published(p.total(), 685e9, 1e9);
  }
  SECTION("Qwen3-30B-A3B") {
    // Qwen/Qwen3-30B-A3B model card: 30.5B in total, 3.3B activated, 29.9B non-embedding.
    const ParameterCounts p = count_parameters(load_model_preset("qwen3-30b-a3b"));
    check_published(p.total(), 30.5e9, 0.1e9);
    check_published(p.active(), 3.3e9, 0.1e9);
    check_published(p.non_embedding(), 29.9e9, 0.1e9);
  }
  SECTION("Qwen3-235B-A22B") {
    // Qwen/Qwen3-235B-A22B model card: 235B in total, 22B activated, 234B non-embedding.
    const ParameterCounts p = count_parameters(load_model_preset("qwen3-235b-a22b"));
    check_published(p.total(), 235e9, 1e9);
    check_published(p.active(), 22e9, 1e9);
    check_published(p.non_embedding(), 234e9, 1e9);
  }
  SECTION("Mixtral 8x7B") {
    // Mistral AI, "Mixtral of experts" (December 2023): 46.7B total, 12.9B per token.
    const ParameterCounts p = count_parameters(load_model_preset("mixtral-8x7b"));
    check_published(p.total(), 46.7e9, 0.1e9);
    check_published(p.active(), 12.9e9, 0.1e9);
  }
  SECTION("Mixtral 8x22B") {
    // Mistral AI, "Cheaper, Better, Faster, Stronger" (April 2024): 141B total, 39B active.
    const ParameterCounts p = count_parameters(load_model_preset("mixtral-8x22b"));
    check_published(p.total(), 141e9, 1e9);
    check_published(p.active(), 39e9, 1e9);
  }
  SECTION("Llama 4 Scout") {
    const ParameterCounts p = count_parameters(load_model_preset("llama4-scout"));
    // Every layer an MoE layer: attention 2 x 5120 x (40 + 8) x 128, 16 routed experts and a
    // shared one of 3 x 5120 x 8192, the router 5120 x 16, two norms.
    CHECK(p.moe_layers == 48);
    CHECK(p.per_moe_layer(false) == 62914560.0 + 17 * 125829120.0 + 81920 + 10240);
    // Meta AI, "The Llama 4 herd" (April 2025): Scout 17B active, 109B total parameters; the
    // total includes the vision encoder (0.87B).
    check_published(p.total() + llama4_vision_parameters(), 109e9, 1e9);
    check_published(p.active(), 17e9, 1e9);
  }
  SECTION("Llama 4 Maverick") {
    const ParameterCounts p = count_parameters(load_model_preset("llama4-maverick"));
    // Dense and MoE layers alternate: 24 of each. A dense layer's SwiGLU FFN is 16384 wide
    // (intermediate_size_mlp): 3 x 5120 x 16384; an MoE layer has 128 routed experts and a
    // shared one of 3 x 5120 x 8192 and the router 5120 x 128.
    CHECK(p.moe_layers == 24);
    CHECK(p.per_layer() == 62914560.0 + 251658240.0 + 10240);
    CHECK(p.per_moe_layer(false) == 62914560.0 + 129 * 125829120.0 + 655360 + 10240);
    // Meta AI, "The Llama 4 herd" (April 2025): Maverick 17B active, 400B total parameters;
    // the total includes the vision encoder (0.87B).
    check_published(p.total() + llama4_vision_parameters(), 400e9, 1e9);
    check_published(p.active(), 17e9, 1e9);
  }
}
