// Memory per GPU against the closed forms of Korthikanti et al. 2022 (activations) and
// Rajbhandari et al. 2020 (ZeRO model states), computed by hand here.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "core/units.hpp"
#include "input/scenario_loader.hpp"
#include "models/memory.hpp"
#include "models/transformer.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

std::string scenario_path(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

// A scenario built from the seed's optimized one with parts replaced.
Scenario patched(const nlohmann::json& patch) {
  nlohmann::json base = nlohmann::json::parse(R"({
    "name": "test", "model": "llama2-70b", "cluster": "h800-128x8-rail", "gpus": 1024,
    "parallelism": {"dp": 64, "tp": 8, "pp": 2, "sequence_parallel": true, "zero_stage": 1},
    "training": {"global_batch": 1024, "micro_batch": 1, "seq_len": 4096, "recompute": "selective"},
    "comm": {"grad_dtype": "bf16"}
  })");
  base.merge_patch(patch);
  return load_scenario(JsonDocument::parse(base.dump(), "test.json"));
}

}  // namespace

TEST_CASE("GPT activations per layer are Korthikanti et al.'s s b h (34 + 5 a s / h)") {
  const ModelSpec m = load_model_preset("gpt-174.6b-sc21");
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  // Table 2 of Korthikanti et al., one formula per configuration.
  CHECK(layer_activation_bytes(m, 2048, 1, 1, false, Recompute::none, AttentionKernel::unfused)
            .stored == Approx(sbh * (34 + 5 * a * s / h)));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, false, Recompute::none, AttentionKernel::unfused)
            .stored == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, AttentionKernel::unfused)
            .stored == Approx(sbh * (34 / t + 5 * a * s / (h * t))));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, false, Recompute::selective, AttentionKernel::unfused)
            .stored == Approx(sbh * (10 + 24 / t)));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::selective, AttentionKernel::unfused)
            .stored == Approx(sbh * 34 / t));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, false, Recompute::full, AttentionKernel::unfused)
            .stored == Approx(2 * sbh));
  SECTION("without dropout there are no masks: s b h (32 + 2 a s / h)") {
    // Korthikanti et al. §4.1 minus the attention and MLP dropout masks (h each, replicated)
    // and the attention-dropout mask and output (3 a s): the softmax output (2 a s) remains.
    CHECK(layer_activation_bytes(m, 2048, 1, 1, false, Recompute::none, AttentionKernel::unfused,
                                 false)
              .stored == Approx(sbh * (32 + 2 * a * s / h)));
    CHECK(
        layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, AttentionKernel::flash, false)
            .stored ==
        Approx(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, AttentionKernel::flash)
                   .stored -
               sbh * 2 / t));
  }
  SECTION("activations scale with the micro-batch size") {
    CHECK(
        layer_activation_bytes(m, 2048, 4, 8, true, Recompute::selective, AttentionKernel::unfused)
            .stored == Approx(4 * sbh * 34 / t));
  }
  SECTION("recomputation re-creates one layer's working set during backward") {
    CHECK(
        layer_activation_bytes(m, 2048, 1, 8, true, Recompute::selective, AttentionKernel::unfused)
            .transient == Approx(5 * a * s * s * b / t));
    CHECK(layer_activation_bytes(m, 2048, 1, 1, false, Recompute::full, AttentionKernel::unfused)
              .transient == Approx(sbh * (34 + 5 * a * s / h)));
  }
}

TEST_CASE("FlashAttention keeps no score tensors, only FP32 softmax statistics per head") {
  // GPT 174.6B: Korthikanti's 34 s b h without the 5 a s^2 b score term, plus 4 a s b bytes of
  // log-sum-exp (FP32 per head and query), sharded by TP like Q.
  const ModelSpec m = load_model_preset("gpt-174.6b-sc21");
  const double s = 2048, h = 12288, a = 96, t = 8;
  const double sbh = s * h;
  const auto flash = AttentionKernel::flash;
  CHECK(layer_activation_bytes(m, 2048, 1, 1, false, Recompute::none, flash).stored ==
        Approx(34 * sbh + 4 * a * s));
  CHECK(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, flash).stored ==
        Approx(34 * sbh / t + 4 * a * s / t));
  // Nothing left for selective recomputation to drop.
  CHECK(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::selective, flash).stored ==
        Approx(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, flash).stored));
}

TEST_CASE("FP8 linear layers keep 1-byte inputs for their weight gradients") {
  // GPT 174.6B with FlashAttention, s b h = 2048 x 12288. BF16: 34 s b h + 4 a s b. FP8: the
  // QKV and first-MLP inputs drop 2 x 1 byte x h, the second-MLP input 1 byte x 4h, and the
  // output projection adds an FP8 copy of its h-wide input: 34 - 2 - 4 + 1 = 29 s b h.
  const ModelSpec m = load_model_preset("gpt-174.6b-sc21");
  const double s = 2048, h = 12288, a = 96, t = 8;
  const double sbh = s * h;
  const auto flash = AttentionKernel::flash;
  CHECK(layer_activation_bytes(m, 2048, 1, 1, false, Recompute::none, flash, true, true).stored ==
        Approx(29 * sbh + 4 * a * s));
  // With TP and SP everything is split by t.
  CHECK(layer_activation_bytes(m, 2048, 1, 8, true, Recompute::none, flash, true, true).stored ==
        Approx(29 * sbh / t + 4 * a * s / t));
  // Without SP the replicated inputs are whole: 10 - 2 = 8 s b h, and (24 - 4 + 1) / t.
  CHECK(layer_activation_bytes(m, 2048, 1, 8, false, Recompute::none, flash, true, true).stored ==
        Approx(8 * sbh + 21 * sbh / t + 4 * a * s / t));
}

TEST_CASE("the GQA and SwiGLU generalisation counts K, V and the three FFN tensors") {
  // Llama-2-70B: kv = 8 x 128 = 1024, f = 28672. Per token and layer: replicated 10h, sharded
  // Q 2h + K 2kv + V 2kv + O-input 2h + SwiGLU 3 x 2f, scores 5 a s.
  const ModelSpec m = load_model_preset("llama2-70b");
  const double h = 8192, kv = 1024, f = 28672, a = 64, s = 4096;
  const ActivationCoefficients c = activation_coefficients(m, 4096, AttentionKernel::unfused);
  CHECK(c.replicated_per_token == Approx(10 * h));
  CHECK(c.sharded_per_token == Approx(4 * h + 4 * kv + 6 * f));
  CHECK(c.scores_per_token == Approx(5 * a * s));
  CHECK(layer_activation_bytes(m, 4096, 1, 8, true, Recompute::selective, AttentionKernel::unfused)
            .stored == Approx(s * (10 * h + 4 * h + 4 * kv + 6 * f) / 8));
}

TEST_CASE("ZeRO model states match the ZeRO paper's 7.5B-parameter example on 64 GPUs") {
  // Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, K = 12, N_d = 64: baseline 120 GB,
  // P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB per GPU. Our 7.5B GPT has 7.47e9 parameters;
  // scale its states per parameter to 7.5e9. Stage 3 as DeepSpeed implements it (the paper's):
  // a 2-byte parameter shard beside the optimizer's FP32 master.
  const auto stage = GENERATE(0, 1, 2, 3);
  const double expected_GB[] = {120.0, 31.4, 16.6, 1.875};
  INFO("ZeRO stage " << stage);
  nlohmann::json parallelism = {
      {"dp", 64}, {"tp", 1}, {"pp", 1}, {"sequence_parallel", false}, {"zero_stage", stage}};
  if (stage == 3) parallelism["zero3_implementation"] = "deepspeed-2021";
  const Scenario s = patched({{"model", "gpt-7.5b-sc21"},
                              {"gpus", 64},
                              {"parallelism", parallelism},
                              {"training", {{"global_batch", 64}, {"seq_len", 2048}}},
                              {"comm", {{"grad_dtype", "fp16"}}}});
  const MemoryEstimate e = estimate_memory(s);
  const StageMemory& m = e.worst();
  const double params = count_parameters(s.model).total();
  CHECK(m.parameters == Approx(params));
  const double states = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes;
  CHECK(states / params * 7.5e9 / 1e9 == Approx(expected_GB[stage]).epsilon(0.01));
}

TEST_CASE("ZeRO shards model states over the data- and context-parallel ranks together") {
  // Context-parallel ranks hold the same weights and reduce gradients with the data-parallel
  // ones, so the distributed optimizer shards over dp x cp: 16 ranks here, as with dp = 16.
  // ZeRO-3 as FSDP on 16 ranks: the FP32 parameter shard is the optimizer's master copy, so
  // (4 + 2 + 8) B / 16 per parameter: FP32 shard, BF16 gradient, Adam's two FP32 moments.
  const Scenario s =
      patched({{"model", "gpt-7.5b-sc21"},
               {"gpus", 16},
               {"parallelism",
                {{"dp", 4},
                 {"cp", 4},
                 {"tp", 1},
                 {"pp", 1},
                 {"sequence_parallel", false},
                 {"zero_stage", 3}}},
               {"training", {{"global_batch", 16}, {"seq_len", 2048}, {"attention", "flash"}}},
               {"comm", {{"grad_dtype", "bf16"}}}});
  const MemoryEstimate e = estimate_memory(s);
  const StageMemory& m = e.worst();
  CHECK(m.weights_bytes / m.parameters == Approx(4.0 / 16));
  CHECK(m.gradients_bytes / m.parameters == Approx(2.0 / 16));
  CHECK(m.optimizer_bytes / m.parameters == Approx(8.0 / 16));
}

TEST_CASE("BF16 Adam state keeps its three tensors in 2 bytes each") {
  // Master copy, momentum and variance: 3 x 4 B = 12 B per parameter in FP32, 3 x 2 B = 6 B in
  // BF16 (Apex DistributedFusedAdam dtype bf16 with store_params); ZeRO-1 over dp 4 quarters it.
  nlohmann::json patch = {
      {"model", "gpt-7.5b-sc21"},
      {"gpus", 4},
      {"parallelism",
       {{"dp", 4}, {"tp", 1}, {"pp", 1}, {"sequence_parallel", false}, {"zero_stage", 1}}},
      {"training", {{"global_batch", 4}, {"seq_len", 2048}}}};
  const StageMemory fp32 = estimate_memory(patched(patch)).worst();
  patch["training"]["optimizer_state_dtype"] = "bf16";
  const StageMemory bf16 = estimate_memory(patched(patch)).worst();
  CHECK(fp32.optimizer_bytes == Approx(12.0 * fp32.parameters / 4));
  CHECK(bf16.optimizer_bytes == Approx(6.0 * bf16.parameters / 4));
  CHECK(bf16.weights_bytes == Approx(fp32.weights_bytes));
  patch["training"]["optimizer_state_dtype"] = "fp16";
  CHECK_THROWS_AS(patched(patch), ConfigError);
}

namespace {
// GPT 174.6B on 24 GPUs, dp 2 x pp 12, ZeRO-3 as `implementation`, gradients in `grad_dtype`
// (training left to the caller).
nlohmann::json gpt_174b_pp12_zero3(const std::string& implementation,
                                   const std::string& grad_dtype) {
  return {{"model", "gpt-174.6b-sc21"},
          {"gpus", 24},
          {"parallelism",
           {{"dp", 2},
            {"tp", 1},
            {"pp", 12},
            {"sequence_parallel", false},
            {"zero_stage", 3},
            {"zero3_implementation", implementation}}},
          {"comm", {{"grad_dtype", grad_dtype}}}};
}
}  // namespace

TEST_CASE("DeepSpeed 2021 ZeRO-3 holds one gathered weight matrix and its gradient") {
  // GPT 174.6B, pp 12: a middle stage's largest matrix is the FFN's h x 4h = 12288 x 49152,
  // gathered in 2 bytes with its 2-byte gradient. The first stage's is the token embedding,
  // 51200 x 12288 (the learned positions are a matrix of their own). FSDP-style ZeRO-3 holds two
  // whole layers and a layer's gradient instead.
  nlohmann::json patch = gpt_174b_pp12_zero3("deepspeed-2021", "fp16");
  patch["training"] = {
      {"global_batch", 2}, {"seq_len", 2048}, {"recompute", "full"}, {"attention", "unfused"}};
  const MemoryEstimate ds = estimate_memory(patched(patch));
  CHECK(ds.stages.at(5).zero3_gathered_bytes == Approx(12288.0 * 49152 * 4));
  CHECK(ds.stages.at(0).zero3_gathered_bytes == Approx(51200.0 * 12288 * 4));
  patch["parallelism"]["zero3_implementation"] = "fsdp";
  const MemoryEstimate fsdp = estimate_memory(patched(patch));
  const double layer = 12.0 * 12288 * 12288 + 13.0 * 12288;  // weights, biases, norms
  CHECK(fsdp.stages.at(5).zero3_gathered_bytes == Approx(layer * (2 * 2 + 2)));
}

TEST_CASE("FSDP2 under pipeline parallelism keeps its stage gathered and its gradients whole") {
  // GPT 174.6B (96 layers of 12 h^2 + 13 h parameters, h = 12288) on pp 12, dp 2, FSDP2 with
  // FP32 gradient reduction and 4 micro-batches a step. A middle stage holds 8 layers. With
  // pipeline parallelism it keeps their 16-bit parameters gathered and their FP32 gradients
  // unsharded all step (on top of the FP32 master shard), and nothing per unit in flight; FSDP
  // (flat parameters, no pipeline-stage policy) holds two gathered layers and one gradient.
  nlohmann::json patch = gpt_174b_pp12_zero3("fsdp2", "fp32");
  patch["training"] = {
      {"global_batch", 8}, {"micro_batch", 1}, {"seq_len", 2048}, {"recompute", "full"}};
  const double layer = 12.0 * 12288 * 12288 + 13.0 * 12288;
  const double stage = 8 * layer;
  const StageMemory kept = estimate_memory(patched(patch)).stages.at(5);
  REQUIRE(kept.parameters == Approx(stage));
  CHECK(kept.zero3_gathered_bytes == 0);
  CHECK(kept.gradients_bytes == Approx(4 * stage));
  CHECK(kept.weights_bytes == Approx(4 * stage / 2 + 2 * stage));  // FP32 shard + BF16 whole
  patch["parallelism"]["zero3_implementation"] = "fsdp";
  const StageMemory flat = estimate_memory(patched(patch)).stages.at(5);
  CHECK(flat.zero3_gathered_bytes == Approx(layer * (2 * 2 + 4)));
  CHECK(flat.gradients_bytes == Approx(4 * stage / 2));
  // One micro-batch a step: nothing accumulates, the gradients are sharded as they are reduced.
  patch["parallelism"]["zero3_implementation"] = "fsdp2";
  patch["training"]["global_batch"] = 2;
  const StageMemory one = estimate_memory(patched(patch)).stages.at(5);
  CHECK(one.gradients_bytes == Approx(4 * stage / 2));
  CHECK(one.zero3_gathered_bytes == Approx(layer * 4));  // one layer's FP32 gradient in flight
}

TEST_CASE("FP32 layer groups keep the embedding and LM-head gradients in 4 bytes") {
  const Scenario with = patched(
      {{"comm", {{"grad_dtype", "fp16"}, {"fp32_layer_groups", {"embedding", "lm_head"}}}}});
  const Scenario without = patched({{"comm", {{"grad_dtype", "fp16"}}}});
  const MemoryEstimate a = estimate_memory(with);
  const MemoryEstimate b = estimate_memory(without);
  // Stage 0 holds the vocab-parallel embedding V h / tp; stage 1 the LM head, same size.
  const double table = 32000.0 * 8192 / 8;
  CHECK(a.stages[0].gradients_bytes - b.stages[0].gradients_bytes == Approx(2 * table));
  CHECK(a.stages[1].gradients_bytes - b.stages[1].gradients_bytes == Approx(2 * table));
}

TEST_CASE("the optimized seed layout's first stage is counted term by term") {
  const Scenario s = load_scenario(scenario_path("seed-optimized-1024"));
  const MemoryEstimate e = estimate_memory(s);
  REQUIRE(e.stages.size() == 2);
  const StageMemory& st = e.stages[0];
  const double h = 8192, kv = 1024, f = 28672, d = 128, V = 32000, seq = 4096;
  const double layer = h * h / 8 + 2 * h * d + h * h / 8 + 3 * h * f / 8 + 2 * h;
  const double params = 40 * layer + V * h / 8;
  CHECK(st.parameters == Approx(params));
  CHECK(st.weights_bytes == Approx(2 * params));
  CHECK(st.gradients_bytes == Approx(2 * 40 * layer + 4 * V * h / 8));  // FP16, embedding FP32
  CHECK(st.optimizer_bytes == Approx(12 * params / 64));                // ZeRO-1 over DP 64
  // 1F1B with pp = 2: two micro-batches in flight on the first stage.
  CHECK(st.micro_batches_in_flight == 2);
  // FlashAttention (the default): no score tensors, 4 B of softmax statistics per head (64).
  // Llama 2 trains without dropout (its preset): the attention and MLP blocks' 10 s b h lose
  // their two h-sized dropout masks (8 h left), and the embedding output keeps no mask.
  const double per_layer = seq * (8 * h + 4 * h + 4 * kv + 6 * f + 4 * 64) / 8;
  CHECK(st.activation_per_micro_batch_bytes == Approx(40 * per_layer));
  CHECK(st.activation_transient_bytes == 0);
  CHECK(e.fits());
}

TEST_CASE("1-bit Adam adds FP32 worker and server errors and packed sign buffers") {
  const Scenario s = patched({{"comm", {{"compression", "onebit_adam"}}}});
  const MemoryEstimate e = estimate_memory(s);
  const StageMemory& st = e.stages[0];
  CHECK(st.onebit_adam_bytes == Approx(st.parameters * (4 + 4.0 / 64 + 2.0 / 8)));
  CHECK(estimate_memory(patched(nlohmann::json::object())).stages[0].onebit_adam_bytes == 0);
}

TEST_CASE("the usable HBM is capacity minus CUDA context and allocator reserve") {
  Scenario s = load_scenario(scenario_path("seed-optimized-1024"));
  SECTION("the capacity is what CUDA reports where the GPU file gives it") {
    // h800-sxm: "hbm_reported_GiB": 79.11 beside the datasheet's 80 GB (74.5 GiB).
    const MemoryEstimate e = estimate_memory(s);
    CHECK(e.hbm_bytes == Approx(79.11 * kGiB));
    CHECK(e.usable_bytes() == Approx(79.11 * kGiB * 0.95 - 0.75 * kGiB));
    CHECK(e.physical_bytes() == Approx((79.11 - 0.75) * kGiB));
    CHECK(e.headroom_bytes() == Approx(e.usable_bytes() - e.peak_bytes()));
  }
  SECTION("else the datasheet's decimal GB") {
    s.cluster.gpu.reported_memory_bytes = 0;
    const MemoryEstimate e = estimate_memory(s);
    CHECK(e.hbm_bytes == 80e9);
    CHECK(e.usable_bytes() == Approx(80e9 * 0.95 - 0.75 * kGiB));
  }
}

TEST_CASE("a 70B model fits pure data parallelism only with ZeRO-3") {
  SECTION("without sharding each GPU needs ~16 bytes x 69e9 parameters") {
    const MemoryEstimate e = estimate_memory(load_scenario(scenario_path("seed-dp-1024-no-zero")));
    CHECK_FALSE(e.fits());
    CHECK(e.peak_bytes() > 16 * 68.9e9);
  }
  SECTION("with ZeRO-3 every seed data-parallel scale fits") {
    for (const char* name :
         {"seed-dp-64", "seed-dp-256", "seed-dp-512", "seed-dp-1024", "seed-dp-1024-as-written"}) {
      INFO(name);
      CHECK(estimate_memory(load_scenario(scenario_path(name))).fits());
    }
  }
  SECTION("the optimized DP 64 x TP 8 x PP 2 layout fits") {
    CHECK(estimate_memory(load_scenario(scenario_path("seed-optimized-1024"))).fits());
  }
}

TEST_CASE("DualPipe holds two stages' states and p + 1 micro-batches of activations") {
  // DeepSeek-V3 technical report table 2: DualPipe keeps 2x the parameters and PP + 1
  // micro-batches of activations per device; rank s holds stages s and p - 1 - s
  // (deepseek-ai/DualPipe dualpipe.py: p - s micro-batches of the first, s + 1 of the second). pp
  // 4, dp 32, 32 micro-batches; 1F1B's stage s holds min(p - s, m) micro-batches of its own stage.
  nlohmann::json par = {{"dp", 32}, {"tp", 8}, {"pp", 4}};
  const MemoryEstimate one = estimate_memory(patched({{"parallelism", par}}));
  par["schedule"] = "dualpipe";
  const MemoryEstimate dual = estimate_memory(patched({{"parallelism", par}}));
  REQUIRE(dual.stages.size() == 4);
  for (std::size_t s = 0; s < 4; ++s) {
    const StageMemory& a = one.stages[s];
    const StageMemory& b = one.stages[3 - s];
    const StageMemory& d = dual.stages[s];
    INFO("rank " << s);
    CHECK(d.parameters == Approx(a.parameters + b.parameters));
    CHECK(d.weights_bytes + d.gradients_bytes + d.optimizer_bytes ==
          Approx(a.weights_bytes + a.gradients_bytes + a.optimizer_bytes + b.weights_bytes +
                 b.gradients_bytes + b.optimizer_bytes));
    CHECK(d.micro_batches_in_flight == 5);
    CHECK(a.micro_batches_in_flight == 4 - static_cast<double>(s));
    // Rank s is at position s of the forward direction (stage s, p - s = 4 - s micro-batches,
    // as 1F1B's stage s) and at position 3 - s of the reverse one (stage 3 - s, s + 1).
    const double forward = 4 - static_cast<double>(s);
    const double reverse = static_cast<double>(s) + 1;
    CHECK(d.activations_bytes - d.activation_transient_bytes ==
          Approx(forward * a.activation_per_micro_batch_bytes +
                 reverse * b.activation_per_micro_batch_bytes));
    CHECK(d.nccl_buffers_bytes == Approx(a.nccl_buffers_bytes));
  }
}

TEST_CASE("BF16 moments beside an FP32 master copy take 8 bytes per parameter") {
  // DeepSeek-V3's report (§3.3.3): FP32 master weights, BF16 momentum and variance:
  // 4 + 2 + 2 = 8 B per parameter, against 12 B all in FP32; ZeRO-1 over dp 64.
  const StageMemory fp32 = estimate_memory(patched(nlohmann::json::object())).stages[0];
  const StageMemory mixed =
      estimate_memory(patched({{"training", {{"optimizer_moments_dtype", "bf16"}}}})).stages[0];
  CHECK(fp32.optimizer_bytes == Approx(12.0 * fp32.parameters / 64));
  CHECK(mixed.optimizer_bytes == Approx(8.0 * mixed.parameters / 64));
  // Under FSDP the FP32 parameter shard is the master copy: Adam adds the two BF16 moments only,
  // 2 + 2 = 4 B per parameter, sharded over dp 64 like the rest.
  const StageMemory fsdp =
      estimate_memory(patched({{"parallelism", {{"zero_stage", 3}}},
                               {"training", {{"optimizer_moments_dtype", "bf16"}}}}))
          .stages[0];
  CHECK(fsdp.optimizer_bytes == Approx(4.0 * fsdp.parameters / 64));
}

TEST_CASE("Over the usable HBM but inside the fragmentation reserve is tight, not 'does not fit'") {
  // 80 GiB of HBM, 0.75 GiB of CUDA context, 5% (4 GiB) fragmentation reserve: 75.25 GiB
  // usable, 79.25 GiB without the reserve.
  models::MemoryEstimate est;
  est.hbm_bytes = 80 * kGiB;
  est.reserved_bytes =
      est.reserve.cuda_context_bytes + est.reserve.allocator_fragmentation_fraction * est.hbm_bytes;
  est.stages.resize(1);
  CHECK(est.usable_bytes() == Approx(75.25 * kGiB));
  CHECK(est.physical_bytes() == Approx(79.25 * kGiB));
  const auto needing = [&](double gib) {
    est.stages[0].weights_bytes = gib * kGiB;
    return std::make_pair(est.fits(), est.tight());
  };
  CHECK(needing(75.0) == std::make_pair(true, false));
  CHECK(needing(77.0) == std::make_pair(false, true));
  CHECK(needing(79.5) == std::make_pair(false, false));
}
