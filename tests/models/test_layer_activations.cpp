// The term-by-term activation count of MLA and MoE layers (models/layer_activations.hpp)
// against hand counts from the published shapes: DeepSeek-V3 (arXiv:2412.19437 §4.2: hidden
// 7168, 128 heads, query latent 1536, key/value latent 512, head widths 128 + 64 RoPE and 128
// for values, 256 routed experts of width 2048 of which 8 per token, one shared expert of 2048),
// and Llama 3 8B for the dense rule. Bytes per token and layer unless stated.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "input/presets.hpp"
#include "input/scenario_loader.hpp"
#include "models/layer_activations.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// DeepSeek-V3's pre-training settings: FlashAttention, no dropout (§4.2 names none).
ActivationOptions no_dropout(bool fp8) {
  ActivationOptions o;
  o.dropout = false;
  o.fp8_linears = fp8;
  return o;
}

// DeepSeek-V3's savings on top of FP8: recomputed norms and MLA up-projections (§3.2.3), the
// SwiGLU output recomputed from FP8 inputs and the attention output in E5M6 (§3.3.3).
ActivationOptions deepseek_savings() {
  ActivationOptions o = no_dropout(true);
  o.fp8_cache = true;
  o.recompute_norms = true;
  o.recompute_mla_up_proj = true;
  o.recompute_moe_act = true;
  return o;
}

std::string scenario_path(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

}  // namespace

TEST_CASE("DeepSeek-V3's MLA attention stores its latents and the per-head Q, K and V") {
  const ModelSpec m = load_model_preset("deepseek-v3");
  // BF16. Replicated: norm input 2 x 7168, down-projections' input 2 x 7168, the latents
  // 2 x (1536 + 512) and the up-projections' inputs (normalised latents) 2 x (1536 + 512):
  // 14336 + 14336 + 4096 + 4096 = 36864. Sharded: Q 2 x 128 x 192 = 49152, K and V
  // 2 x 128 x (192 + 128) = 81920, attention output 2 x 128 x 128 = 32768, FlashAttention's
  // FP32 statistics 4 x 128 = 512: 164352.
  const ActivationTerms bf16 = attention_activation_terms(m, 4096, no_dropout(false));
  CHECK(bf16.replicated == Approx(36864));
  CHECK(bf16.sharded == Approx(164352));
  CHECK(bf16.scores == 0);
  // FP8 linears keep 1-byte inputs: 7168 + 2048 less replicated (27648); the output projection
  // adds its FP8 copy of the attention output, 128 x 128 (180736).
  const ActivationTerms fp8 = attention_activation_terms(m, 4096, no_dropout(true));
  CHECK(fp8.replicated == Approx(27648));
  CHECK(fp8.sharded == Approx(180736));
  // Recomputed up-projections keep c_Q, c_KV and the 64-wide RoPE key (2 x 64) instead of the
  // normalised latents, Q, K and V: replicated 36864 - 4096 + 128, sharded 32768 + 512.
  ActivationOptions up = no_dropout(false);
  up.recompute_mla_up_proj = true;
  const ActivationTerms recomputed = attention_activation_terms(m, 4096, up);
  CHECK(recomputed.replicated == Approx(32896));
  CHECK(recomputed.sharded == Approx(33280));
}

TEST_CASE("A DeepSeek-V3 MoE FFN stores the router input, its scores and every routed copy") {
  const ModelSpec m = load_model_preset("deepseek-v3");
  // BF16. Replicated: norm input 2 x 7168, norm output (router and shared expert input)
  // 2 x 7168, FP32 scores 4 x 256: 29696. Shared expert (SwiGLU of 2048): gate and up
  // 2 x 2 x 2048, product 2 x 2048: 12288. Per routed copy: the dispatched input 2 x 7168,
  // its FP32 probability and int32 row index 4 + 4 (14344), gate and up and product of the
  // 2048-wide expert (12288).
  const ActivationTerms bf16 = ffn_activation_terms(m, true, no_dropout(false));
  CHECK(bf16.replicated == Approx(29696));
  CHECK(bf16.sharded == Approx(12288));
  CHECK(bf16.routed_copy == Approx(14344));
  CHECK(bf16.routed_copy_ffn == Approx(12288));
  // Eight copies per token: 29696 + 12288 + 8 x 26632 = 255040.
  CHECK(bf16.per_token_total(8) == Approx(255040));
  // FP8: the norm output gains the shared expert's FP8 copy (+7168), the linear inputs are
  // 1 byte: shared 8192 + 2048, per copy 7168 + 8 and 8192 + 2048.
  const ActivationTerms fp8 = ffn_activation_terms(m, true, no_dropout(true));
  CHECK(fp8.replicated == Approx(36864));
  CHECK(fp8.sharded == Approx(10240));
  CHECK(fp8.routed_copy == Approx(7176));
  CHECK(fp8.routed_copy_ffn == Approx(10240));
}

TEST_CASE("DeepSeek-V3's memory savings cut its MoE layer from 394816 to 159424 bytes a token") {
  const ModelSpec m = load_model_preset("deepseek-v3");
  // FP8 without savings: attention 27648 + 180736 = 208384; MoE 36864 + 10240 +
  // 8 x (7176 + 10240) = 186432.
  CHECK(layer_activation_terms(m, 4096, true, no_dropout(true)).per_token_total(8) ==
        Approx(394816));
  // With the savings. Attention: norm input 14336, latents 4096, RoPE key 128 (18560); the
  // attention output once in E5M6, 1.5 x 16384 = 24576, and the statistics 512 (25088).
  // MoE: norm input 14336 and scores 1024 (15360); the shared expert 10240; per copy the FP8
  // input and its probability and index 7176, the SwiGLU inputs in FP8 2 x 2048 = 4096.
  const ActivationOptions o = deepseek_savings();
  const ActivationTerms attention = attention_activation_terms(m, 4096, o);
  CHECK(attention.replicated == Approx(18560));
  CHECK(attention.sharded == Approx(25088));
  const ActivationTerms moe = ffn_activation_terms(m, true, o);
  CHECK(moe.replicated == Approx(15360));
  CHECK(moe.sharded == Approx(10240));
  CHECK(moe.routed_copy_ffn == Approx(4096));
  // 43648 + 15360 + 10240 + 8 x 11272 = 159424.
  CHECK(layer_activation_terms(m, 4096, true, o).per_token_total(8) == Approx(159424));
}

TEST_CASE("The layout splits MLA and routed-copy activations as Megatron-Core places them") {
  const ModelSpec m = load_model_preset("deepseek-v3");
  const ActivationOptions o = no_dropout(false);
  const ActivationTerms t = layer_activation_terms(m, 4096, true, o);
  const double tokens = 4096;
  SECTION("one GPU per layer, routing imbalance 1.5") {
    ActivationLayout l;
    l.copies_per_token = 8 * 1.5;
    // 66560 + 176640 + 12 x 26632 bytes per token (BF16 totals of the two cases above).
    const LayerActivations a = layer_activations(m, 4096, tokens, true, l, Recompute::none, o);
    CHECK(a.stored == Approx(tokens * (66560 + 176640 + 12 * 26632)));
    CHECK(a.transient == 0);
    CHECK(t.replicated == Approx(66560));
    CHECK(t.sharded == Approx(176640));
  }
  SECTION("tp 2 with sequence parallelism and expert tp 2") {
    ActivationLayout l;
    l.tp = 2;
    l.etp = 2;
    l.sequence_parallel = true;
    l.copies_per_token = 8;
    // SP halves the replicated part, TP the sharded part. Each rank dispatches the copies of its
    // T / 2 tokens; the TP group all-gathers them (x 2) and splits each expert's width by 2:
    // 8 copies of 14344 per token, and 8 copies of 12288 / 2.
    const LayerActivations a = layer_activations(m, 4096, tokens, true, l, Recompute::none, o);
    CHECK(a.stored == Approx(tokens * (66560 / 2.0 + 176640 / 2.0 + 8 * 14344 + 8 * 6144)));
  }
  SECTION("full recomputation keeps the 16-bit layer input") {
    ActivationLayout l;
    l.copies_per_token = 8;
    const LayerActivations a = layer_activations(m, 4096, tokens, true, l, Recompute::full, o);
    CHECK(a.stored == Approx(tokens * 2 * 7168));
    CHECK(a.transient == Approx(tokens * t.per_token_total(8)));
  }
  SECTION("recompute modules re-create what they dropped, one layer at a time") {
    ActivationLayout l;
    l.copies_per_token = 8;
    ActivationOptions up = o;
    up.recompute_mla_up_proj = true;
    // 36864 - 32896 replicated and 164352 - 33280 sharded, from the MLA case above.
    const LayerActivations a = layer_activations(m, 4096, tokens, true, l, Recompute::none, up);
    CHECK(a.transient == Approx(tokens * (3968 + 131072)));
  }
}

TEST_CASE("A dense GQA layer counts the same term by term as Korthikanti et al.'s rule") {
  // Llama 3 8B (h 4096, 8 KV heads of 128, SwiGLU 14336), BF16, FlashAttention, no dropout.
  // Replicated: two norm inputs and the QKV and first-MLP inputs, 8 x 4096 = 32768. Sharded:
  // Q 2 x 4096, K and V 2 x 2 x 1024, attention output 2 x 4096 (20480), statistics 4 x 32,
  // SwiGLU gate, up and product 3 x 2 x 14336 (86016).
  const ModelSpec m = load_model_preset("llama3-8b");
  const ActivationTerms t = layer_activation_terms(m, 8192, false, no_dropout(false));
  CHECK(t.replicated == Approx(32768));
  CHECK(t.sharded == Approx(20480 + 128 + 86016));
  const ActivationCoefficients c = activation_coefficients(m, 8192, AttentionKernel::flash, false);
  CHECK(t.replicated == Approx(c.replicated_per_token));
  CHECK(t.sharded == Approx(c.sharded_per_token));
  // Recomputing the two norms drops their outputs, the QKV and first-MLP inputs: 2 x 2 x 4096.
  ActivationOptions norms = no_dropout(false);
  norms.recompute_norms = true;
  CHECK(layer_activation_terms(m, 8192, false, norms).replicated == Approx(32768 - 16384));
}

TEST_CASE("Recomputing the dense MLP keeps only its input and re-runs its GEMMs") {
  // Llama 3 8B, BF16, no dropout: without the module the MLP stores its norm's input 2 x 4096,
  // the first linear's input 2 x 4096 (replicated) and the SwiGLU's gate, up and product
  // 3 x 2 x 14336 (sharded); with "mlp" only the checkpoint's input, 2 x 4096, is kept.
  const ModelSpec m = load_model_preset("llama3-8b");
  ActivationOptions o = no_dropout(false);
  const ActivationTerms plain = ffn_activation_terms(m, false, o);
  CHECK(plain.replicated == Approx(16384));
  CHECK(plain.sharded == Approx(86016));
  o.recompute_mlp = true;
  const ActivationTerms kept = ffn_activation_terms(m, false, o);
  CHECK(kept.replicated == Approx(8192));
  CHECK(kept.sharded == 0);
  // An MoE FFN is not the dense MLP: DeepSeek-V3's is unchanged.
  const ModelSpec ds = load_model_preset("deepseek-v3");
  CHECK(ffn_activation_terms(ds, true, o).sharded ==
        Approx(ffn_activation_terms(ds, true, no_dropout(false)).sharded));

  // The recomputed GEMMs: 3 x 2 x 4096 x 14336 FLOPs per token in each of Llama's 32 layers;
  // in DeepSeek-V3 only its 3 dense layers' 3 x 2 x 7168 x 18432 (its MTP module's layer is an
  // MoE layer, as its last layer is).
  Scenario s = load_scenario(scenario_path("deepseek-v3-2048-h800"));
  const double before = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  s.training.recompute_mlp = true;
  const double after = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  CHECK(after - before == Approx(3.0 * 6 * 7168 * 18432));
  s.model = m;
  s.model.mtp_layers = 0;
  s.training.recompute_mla_up_proj = false;
  const double dense_before = [&] {
    Scenario t = s;
    t.training.recompute_mlp = false;
    return flops_per_step(t, FlopConvention::megatron).per_token.recompute;
  }();
  CHECK(flops_per_step(s, FlopConvention::megatron).per_token.recompute - dense_before ==
        Approx(32.0 * 6 * 4096 * 14336));
}

TEST_CASE("Recomputing the shared experts drops their internals and re-runs their GEMMs") {
  // DeepSeek-V3, BF16: the shared expert (SwiGLU of 2048) stores gate, up and product,
  // 3 x 2 x 2048 = 12288 bytes per token (sharded); recomputed from the norm output it stores
  // none, and nothing else changes.
  const ModelSpec m = load_model_preset("deepseek-v3");
  ActivationOptions o = no_dropout(false);
  const ActivationTerms plain = ffn_activation_terms(m, true, o);
  o.recompute_shared_experts = true;
  const ActivationTerms kept = ffn_activation_terms(m, true, o);
  CHECK(plain.sharded == Approx(12288));
  CHECK(kept.sharded == 0);
  CHECK(kept.replicated == Approx(plain.replicated));
  CHECK(kept.routed_copy_ffn == Approx(plain.routed_copy_ffn));
  // Its three GEMMs, 3 x 2 x 7168 x 2048 FLOPs per token, again in each of the 58 MoE layers
  // and the MTP module's layer (an MoE layer, as the model's last is).
  Scenario s = load_scenario(scenario_path("deepseek-v3-2048-h800"));
  const double before = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  s.training.recompute_shared_experts = true;
  const double after = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  CHECK(after - before == Approx(59.0 * 6 * 7168 * 2048));
}

TEST_CASE("Recomputing DeepSeek-V3's MLA up-projections adds their GEMMs to the backward") {
  // 2 x (1536 x 128 x 192 + 512 x 128 x (128 + 128)) = 2 x 54525952 FLOPs per token and layer,
  // in all 61 layers and the MTP module's.
  const ModelSpec m = load_model_preset("deepseek-v3");
  ActivationOptions o;
  CHECK(module_recompute_flops_per_token(m, o) == 0);
  o.recompute_mla_up_proj = true;
  CHECK(module_recompute_flops_per_token(m, o) == Approx(109051904));
  Scenario s = load_scenario(scenario_path("deepseek-v3-2048-h800"));
  s.training.recompute_mla_up_proj = false;
  const double before = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  s.training.recompute_mla_up_proj = true;
  const double after = flops_per_step(s, FlopConvention::megatron).per_token.recompute;
  CHECK(after - before == Approx(109051904.0 * 62));
}

TEST_CASE("The DeepSeek-V3 scenario's middle stage stores four MoE layers per micro-batch") {
  // Stage 1 holds layers 3-6, all MoE; micro-batch of one 4096-token sequence, tp 1, balanced
  // routing: 4 x 4096 x 394816 bytes under FP8, 4 x 4096 x 159424 with the savings.
  Scenario s = load_scenario(scenario_path("deepseek-v3-2048-h800"));
  s.parallelism.schedule = PipelineSchedule::one_f_one_b;  // one stage per rank
  s.training.recompute_norms = s.training.recompute_mla_up_proj = false;
  s.training.recompute_moe_act = s.training.fp8_activation_cache = false;
  CHECK(estimate_memory(s).stages.at(1).activation_per_micro_batch_bytes ==
        Approx(4.0 * 4096 * 394816));
  s.training.recompute_norms = s.training.recompute_mla_up_proj = true;
  s.training.recompute_moe_act = s.training.fp8_activation_cache = true;
  const MemoryEstimate est = estimate_memory(s);
  CHECK(est.stages.at(1).activation_per_micro_batch_bytes == Approx(4.0 * 4096 * 159424));
  // The last stage: 2 MoE layers, the head (final norm and head inputs 2 x 2 x 7168, FP32
  // logits 4 x 129280: 545792), and the MTP module: an MoE layer, its norm inputs 2 x 2 x 7168
  // and FP8 projection input 2 x 7168 (43008) and its own pass through the head.
  CHECK(est.stages.at(15).activation_per_micro_batch_bytes ==
        Approx(4096.0 * (3 * 159424 + 2 * 545792 + 43008)));
}
