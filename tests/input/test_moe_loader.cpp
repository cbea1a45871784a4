// Mixture-of-experts and MLA model keys and expert parallelism: what loads, and each error at
// its JSON path.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/json_reader.hpp"
#include "input/scenario_loader.hpp"

using namespace clustersim;
using nlohmann::json;

namespace {

// A small MoE model written inline: 4 layers, the first dense, 8 experts of which each token
// takes 2, one shared expert, MLA attention. Every block key is cited.
json moe_model() {
  return json::parse(R"({
    "name": "tiny-moe", "num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16,
    "ffn_hidden_size": 4096, "vocab_size": 32000, "max_seq_len": 4096, "ffn": "swiglu",
    "norm": "rmsnorm", "mtp_layers": 1,
    "moe": {"num_experts": 8, "experts_per_token": 2, "expert_ffn_hidden_size": 512,
            "shared_experts": 1, "shared_expert_ffn_hidden_size": 512, "first_dense_layers": 1,
            "sources": {"num_experts": "t", "experts_per_token": "t",
                        "expert_ffn_hidden_size": "t", "shared_experts": "t",
                        "shared_expert_ffn_hidden_size": "t", "first_dense_layers": "t"}},
    "mla": {"q_lora_rank": 256, "kv_lora_rank": 128, "qk_nope_head_dim": 64,
            "qk_rope_head_dim": 32, "v_head_dim": 64,
            "sources": {"q_lora_rank": "t", "kv_lora_rank": "t", "qk_nope_head_dim": "t",
                        "qk_rope_head_dim": "t", "v_head_dim": "t"}}
  })");
}

// 64 GPUs of the seed's cluster: tp 2 x dp 32, ep 8.
json moe_scenario() {
  json doc = json::parse(R"({
    "name": "moe", "cluster": "h800-128x8-rail", "gpus": 64,
    "parallelism": {"tp": 2, "pp": 1, "ep": 8, "sequence_parallel": true},
    "training": {"global_batch": 64, "micro_batch": 1, "seq_len": 4096}
  })");
  doc["model"] = moe_model();
  return doc;
}

Scenario load(const json& doc) {
  return load_scenario(JsonDocument::parse(doc.dump(), "moe.json"));
}

// Requires a ConfigError from `doc` at `pointer` of file moe.json, its message containing
// `fragment`.
void expect_error(const json& doc, const std::string& pointer, const std::string& fragment) {
  try {
    load(doc);
  } catch (const ConfigError& e) {
    INFO(e.what());
    CHECK(e.file() == "moe.json");
    CHECK(e.pointer() == pointer);
    CHECK(std::string(e.what()).rfind("moe.json:" + pointer + ": ", 0) == 0);
    CHECK(e.message().find(fragment) != std::string::npos);
    return;
  }
  FAIL("no ConfigError for a document that should fail at " << pointer);
}

json with_model(const json& patch) {
  json doc = moe_scenario();
  doc["model"].merge_patch(patch);
  return doc;
}

// The scenario without key `key` of the model's MoE block (nor its citation).
json without_moe_key(const std::string& key) {
  json doc = moe_scenario();
  doc["model"]["moe"].erase(key);
  doc["model"]["moe"]["sources"].erase(key);
  return doc;
}

json with_parallelism(const json& patch) {
  json doc = moe_scenario();
  doc["parallelism"].merge_patch(patch);
  return doc;
}

}  // namespace

TEST_CASE("An MoE model with MLA and an ep layout loads with every key") {
  const Scenario s = load(moe_scenario());
  REQUIRE(s.model.moe);
  REQUIRE(s.model.mla);
  const MoeSpec& e = *s.model.moe;
  CHECK(e.num_experts == 8);
  CHECK(e.experts_per_token == 2);
  CHECK(e.expert_ffn_hidden == 512);
  CHECK(e.shared_experts == 1);
  CHECK(e.shared_expert_ffn_hidden == 512);
  CHECK(e.first_dense_layers == 1);
  CHECK(e.moe_layer_freq == 1);
  CHECK(e.capacity_factor == 0);  // dropless unless given
  CHECK(e.routing_imbalance == 1);
  CHECK(s.model.moe_layer_count() == 3);  // layers 1, 2, 3
  CHECK_FALSE(s.model.is_moe_layer(0));
  CHECK(s.model.mla->q_lora_rank == 256);
  CHECK(s.model.mla->qk_head_dim() == 96);
  CHECK(s.model.mtp_layers == 1);
  CHECK(s.parallelism.dp == 32);  // 64 / tp 2
  CHECK(s.parallelism.ep == 8);
  CHECK(s.parallelism.etp == 0);
  CHECK(s.parallelism.expert_tp() == 2);
  CHECK(s.parallelism.expert_dp() == 4);  // tp 2 x dp 32 / (etp 2 x ep 8)
}

TEST_CASE("moe_layer_freq: layer i is an MoE layer when i % freq == 0, after the dense ones") {
  json doc = with_model({{"moe", {{"moe_layer_freq", 2}, {"first_dense_layers", 0}}}});
  doc["model"]["moe"]["sources"]["moe_layer_freq"] = "t";
  const Scenario s = load(doc);
  CHECK(s.model.is_moe_layer(0));
  CHECK_FALSE(s.model.is_moe_layer(1));
  CHECK(s.model.is_moe_layer(2));
  CHECK(s.model.moe_layer_count() == 2);
}

TEST_CASE("MoE block errors name their key") {
  expect_error(with_model({{"moe", {{"experts_per_token", 9}}}}), "/model/moe/experts_per_token",
               "[1, 8]");
  expect_error(with_model({{"moe", {{"num_expert", 8}}}}), "/model/moe/num_expert", "num_experts");
  expect_error(without_moe_key("expert_ffn_hidden_size"), "/model/moe/expert_ffn_hidden_size",
               "missing");
  expect_error(without_moe_key("shared_expert_ffn_hidden_size"),
               "/model/moe/shared_expert_ffn_hidden_size", "need their FFN width");
  expect_error(with_model({{"moe", {{"shared_experts", 0}}}}),
               "/model/moe/shared_expert_ffn_hidden_size", "shared_experts is 0");
  expect_error(with_model({{"moe", {{"first_dense_layers", 4}}}}), "/model/moe/first_dense_layers",
               "no MoE layer");
}

TEST_CASE("MoE knobs outside their physical range are refused") {
  json doc = with_model({{"moe", {{"routing_imbalance", 4.5}}}});
  doc["model"]["moe"]["sources"]["routing_imbalance"] = "t";
  // 8 experts, top-2: all tokens on the same 2 experts is 4 x the mean, the most there is.
  expect_error(doc, "/model/moe/routing_imbalance", "num_experts / experts_per_token = 4");
  doc["model"]["moe"]["routing_imbalance"] = 4;
  CHECK(load(doc).model.moe->routing_imbalance == 4);
  doc["model"]["moe"]["routing_imbalance"] = 0.9;
  expect_error(doc, "/model/moe/routing_imbalance", "");
  json cap = with_model({{"moe", {{"capacity_factor", -1}}}});
  cap["model"]["moe"]["sources"]["capacity_factor"] = "t";
  expect_error(cap, "/model/moe/capacity_factor", "");
}

TEST_CASE("Every key of an MoE or MLA block is cited in the block's sources") {
  json doc = moe_scenario();
  doc["model"]["moe"]["sources"].erase("num_experts");
  expect_error(doc, "/model/moe/num_experts", "no citation");
  doc = moe_scenario();
  doc["model"]["mla"].erase("sources");
  expect_error(doc, "/model/mla/sources", "missing");
  doc = moe_scenario();
  doc["model"]["mla"]["sources"]["rope_theta"] = "t";
  expect_error(doc, "/model/mla/sources/rope_theta", "does not set");
}

TEST_CASE("MLA errors name their key") {
  expect_error(with_model({{"mla", {{"kv_lora_rank", 0}}}}), "/model/mla/kv_lora_rank", "");
  expect_error(with_model({{"num_kv_heads", 4}}), "/model/num_kv_heads", "latent");
  expect_error(with_model({{"head_dim", 64}}), "/model/head_dim", "mla");
}

TEST_CASE("A head width of its own frees hidden_size from splitting into the heads") {
  json doc = moe_scenario();
  doc["model"].erase("mla");
  doc["model"]["num_attention_heads"] = 24;  // 1024 / 24 is not whole
  expect_error(doc, "/model/num_attention_heads", "do not divide hidden_size");
  doc["model"]["head_dim"] = 128;
  doc["model"]["num_kv_heads"] = 4;
  const Scenario s = load(doc);
  CHECK(s.model.head_dim() == 128);
}

TEST_CASE("Expert parallelism follows Megatron-Core's layout rules") {
  expect_error(with_parallelism({{"ep", 3}}), "/parallelism/ep", "8 routed experts");
  // tp 2 x dp 32 = 64 ranks per stage: etp 2 x ep 8 = 16 divides them, etp 16 x ep 8 not.
  expect_error(with_parallelism({{"ep", 8}, {"etp", 16}}), "/parallelism/etp",
               "not divisible by etp x ep");
  // The expert FFN of width 512 does not split 3 ways (nor does 64 ranks).
  expect_error(with_parallelism({{"etp", 3}, {"ep", 1}}), "/parallelism/etp", "");
  expect_error(with_parallelism({{"sequence_parallel", false}}), "/parallelism/sequence_parallel",
               "sequence_parallel");
  json ok = with_parallelism({{"etp", 1}, {"ep", 8}});
  CHECK(load(ok).parallelism.expert_tp() == 1);
  CHECK(load(ok).parallelism.expert_dp() == 8);  // 64 / (1 x 8)
}

TEST_CASE("ep and etp need an MoE model") {
  json doc = moe_scenario();
  doc["model"] = "llama2-70b";
  doc["gpus"] = 64;
  doc["parallelism"] = {{"tp", 8}, {"pp", 1}, {"ep", 8}, {"sequence_parallel", true}};
  expect_error(doc, "/parallelism/ep", "dense");
  doc["parallelism"] = {{"tp", 8}, {"pp", 1}, {"etp", 1}};
  expect_error(doc, "/parallelism/etp", "dense");
  doc["parallelism"] = {{"tp", 8}, {"pp", 1}};
  const Scenario dense = load(doc);
  CHECK_FALSE(dense.model.moe);
  CHECK(dense.parallelism.ep == 1);
}

TEST_CASE("The MoE simulation settings load, and what is not simulated is refused at its path",
          "[input][moe]") {
  json doc = moe_scenario();
  doc["training"]["moe_dispatcher"] = "deepep";
  doc["training"]["moe_comm_overlap"] = true;
  doc["training"]["moe_comm_sms"] = 20;
  doc["training"]["moe_expert_gemm"] = "grouped";
  doc["model"]["moe"]["expert_groups"] = 4;
  doc["model"]["moe"]["groups_per_token"] = 2;
  doc["model"]["moe"]["sources"]["expert_groups"] = "t";
  doc["model"]["moe"]["sources"]["groups_per_token"] = "t";
  const Scenario s = load(doc);
  CHECK(s.training.moe_dispatcher == MoeDispatcher::deepep);
  CHECK(s.training.moe_comm_overlap);
  CHECK(s.training.moe_comm_sms == 20);
  CHECK(s.training.moe_expert_gemm == MoeExpertGemm::grouped);
  CHECK(load(moe_scenario()).training.moe_expert_gemm == MoeExpertGemm::per_expert);
  json bad_gemm = doc;
  bad_gemm["training"]["moe_expert_gemm"] = "cutlass";
  expect_error(bad_gemm, "/training/moe_expert_gemm", "per_expert");
  CHECK(s.model.moe->expert_groups == 4);
  CHECK(s.model.moe->groups_per_token == 2);

  json no_overlap = doc;
  no_overlap["training"]["moe_comm_overlap"] = false;
  expect_error(no_overlap, "/training/moe_comm_sms", "moe_comm_overlap");
  json all_sms = doc;
  all_sms["training"]["moe_comm_sms"] = 132;  // the H800 preset's 132 SMs
  expect_error(all_sms, "/training/moe_comm_sms", "leave none");
  json one_group = doc;
  one_group["model"]["moe"].erase("groups_per_token");
  one_group["model"]["moe"]["sources"].erase("groups_per_token");
  expect_error(one_group, "/model/moe/groups_per_token", "both");
  json uneven = doc;
  uneven["model"]["moe"]["expert_groups"] = 3;  // 8 experts
  expect_error(uneven, "/model/moe/expert_groups", "do not divide");
  // The zero-bubble schedules split MoE and MLA layers' backwards too.
  json zb = doc;
  zb["parallelism"]["schedule"] = "zb-h1";
  zb["parallelism"]["pp"] = 2;
  CHECK(load(zb).parallelism.schedule == PipelineSchedule::zb_h1);
  json dual = zb;
  dual["parallelism"]["schedule"] = "dualpipe";
  CHECK(load(dual).micro_batches() == 4);  // 64 / dp 16
  json odd = dual;
  odd["parallelism"]["pp"] = 1;
  expect_error(odd, "/parallelism/pp", "dualpipe needs an even pp");
  json few = dual;
  few["training"]["global_batch"] = 32;  // 2 micro-batches
  expect_error(few, "/training/global_batch", "at least 2 x pp = 4, not 2");
  json zero3 = doc;
  zero3["parallelism"]["zero_stage"] = 3;
  expect_error(zero3, "/parallelism/zero_stage", "ZeRO-3");
  json dense = doc;
  dense["model"] = "llama3-8b";
  dense["parallelism"].erase("ep");
  dense["training"].erase("moe_comm_sms");
  expect_error(dense, "/training/moe_comm_overlap", "mixture-of-experts");
  json dense_gemm = dense;
  dense_gemm["training"].erase("moe_comm_overlap");
  dense_gemm["training"].erase("moe_dispatcher");
  expect_error(dense_gemm, "/training/moe_expert_gemm", "mixture-of-experts");
}

TEST_CASE("Recompute modules and the FP8 activation cache load and fail at their paths") {
  json doc = moe_scenario();
  doc["training"]["precision"] = "fp8";
  doc["training"]["recompute_modules"] = {"layernorm", "mla_up_proj", "moe_act"};
  doc["training"]["fp8_activation_cache"] = true;
  const Scenario s = load(doc);
  CHECK(s.training.recompute_norms);
  CHECK(s.training.recompute_mla_up_proj);
  CHECK(s.training.recompute_moe_act);
  CHECK(s.training.fp8_activation_cache);
  CHECK(s.training.recompute == Recompute::none);

  json defaults = moe_scenario();
  const Scenario d = load(defaults);
  CHECK_FALSE(d.training.recompute_norms);
  CHECK_FALSE(d.training.recompute_mla_up_proj);
  CHECK_FALSE(d.training.recompute_moe_act);
  CHECK_FALSE(d.training.fp8_activation_cache);

  json selective = doc;
  selective["training"]["recompute"] = "selective";
  CHECK(load(selective).training.recompute_moe_act);
  json full = doc;
  full["training"]["recompute"] = "full";
  expect_error(full, "/training/recompute_modules", "full recomputation");
  json twice = doc;
  twice["training"]["recompute_modules"] = {"layernorm", "layernorm"};
  expect_error(twice, "/training/recompute_modules/1", "twice");
  json unknown = doc;
  unknown["training"]["recompute_modules"] = {"core_attn"};
  expect_error(unknown, "/training/recompute_modules/0", "");
  json bf16 = doc;
  bf16["training"].erase("precision");
  expect_error(bf16, "/training/fp8_activation_cache", "fp8");
  json no_mla = doc;
  no_mla["model"].erase("mla");
  expect_error(no_mla, "/training/recompute_modules", "multi-head latent attention");
  json dense = doc;
  dense["model"] = "llama3-8b";
  dense["parallelism"].erase("ep");
  dense["training"]["recompute_modules"] = {"moe_act"};
  expect_error(dense, "/training/recompute_modules", "mixture-of-experts");
  // The pre-norms exist in every model.
  dense["training"]["recompute_modules"] = {"layernorm"};
  CHECK(load(dense).training.recompute_norms);
  // "mlp" recomputes dense layers' MLPs: loaded for a dense model without a warning; for a model
  // whose every layer is an MoE layer it changes nothing, which the loader says.
  json no_shared = dense;
  no_shared["training"]["recompute_modules"] = {"shared_experts"};
  expect_error(no_shared, "/training/recompute_modules", "shared experts");
  json shared = moe_scenario();
  shared["training"]["recompute_modules"] = {"shared_experts"};
  CHECK(load(shared).training.recompute_shared_experts);
  dense["training"]["recompute_modules"] = {"mlp"};
  const Scenario mlp = load(dense);
  CHECK(mlp.training.recompute_mlp);
  CHECK(mlp.warnings.empty());
  json all_moe = moe_scenario();
  all_moe["model"]["moe"]["first_dense_layers"] = 0;
  all_moe["training"]["recompute_modules"] = {"mlp"};
  const Scenario none_dense = load(all_moe);
  REQUIRE(none_dense.model.moe_layer_count() == none_dense.model.num_layers);
  REQUIRE(none_dense.warnings.size() == 1);
  CHECK_THAT(none_dense.warnings[0], Catch::Contains("every layer of this model is an MoE layer"));
}

TEST_CASE(
    "HybridEP loads inside one NVLink domain of a measured architecture, else fails at "
    "its path",
    "[input][moe]") {
  json doc = moe_scenario();  // tp 2, ep 8 on 8-GPU H800 nodes
  doc["training"]["moe_dispatcher"] = "hybridep";
  doc["training"]["moe_comm_sms"] = 32;  // HybridEP's SMs: no moe_comm_overlap needed
  // etp 2 (= tp, the default): an EP group spans 16 consecutive GPUs, two nodes.
  expect_error(doc, "/training/moe_dispatcher", "one NVLink domain");
  doc["parallelism"]["etp"] = 1;
  const Scenario s = load(doc);
  CHECK(s.training.moe_dispatcher == MoeDispatcher::hybridep);
  CHECK(s.training.moe_comm_sms == 32);
  json a100 = doc;
  a100["cluster"] = "dgx-a100-sc21";
  expect_error(a100, "/training/moe_dispatcher", "no measured bandwidth for the ampere GPU");
}
