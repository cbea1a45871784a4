#include "input/model_blocks.hpp"

#include <string>

#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

// Widths and counts are bounded as the dense keys are (presets.cpp): far beyond any model,
// small enough that products of them stay exact in a double.
constexpr std::int64_t kMaxExperts = 1 << 16;
constexpr std::int64_t kMaxWidth = 1 << 26;
constexpr std::int64_t kMaxLayers = 100000;
// Capacity beyond this many times the mean is no capacity limit at all for any real model.
constexpr double kMaxCapacityFactor = 1000;
constexpr int kMaxMtpLayers = 64;

int int_key(const JsonNode& n, const char* key, std::int64_t min, std::int64_t max) {
  return static_cast<int>(n.int_at(key, min, max));
}
int int_key_or(const JsonNode& n, const char* key, int fallback, std::int64_t min,
               std::int64_t max) {
  return static_cast<int>(n.int_or(key, fallback, min, max));
}

void check_shared_experts(const JsonNode& n, MoeSpec& e) {
  if (e.shared_experts > 0 && !n.has("shared_expert_ffn_hidden_size")) {
    n.fail_at("shared_expert_ffn_hidden_size",
              std::to_string(e.shared_experts) +
                  " shared experts need their FFN width (shared_expert_ffn_hidden_size)");
  }
  if (e.shared_experts == 0 && n.has("shared_expert_ffn_hidden_size")) {
    n.fail_at("shared_expert_ffn_hidden_size",
              "is given but shared_experts is 0; set shared_experts or remove this key");
  }
}

void check_moe_layers(const JsonNode& n, const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  if (e.first_dense_layers >= m.num_layers) {
    n.fail_at("first_dense_layers", std::to_string(e.first_dense_layers) +
                                        " dense layers leave no MoE layer of the model's " +
                                        std::to_string(m.num_layers));
  }
  if (m.moe_layer_count() == 0) {
    n.fail_at("moe_layer_freq", "moe_layer_freq " + std::to_string(e.moe_layer_freq) +
                                    " leaves no MoE layer after the first " +
                                    std::to_string(e.first_dense_layers) + " of " +
                                    std::to_string(m.num_layers));
  }
}

// Tokens on the busiest expert / the mean is at least 1 (balanced) and at most
// num_experts / top-k: every token routed to the same top-k experts.
void check_routing_imbalance(const JsonNode& n, const MoeSpec& e) {
  const double most = static_cast<double>(e.num_experts) / e.experts_per_token;
  if (e.routing_imbalance < 1 || e.routing_imbalance > most) {
    n.fail_at("routing_imbalance",
              number_text(e.routing_imbalance) +
                  " is outside [1, num_experts / experts_per_token = " + number_text(most) +
                  "]: tokens on the busiest expert / the mean cannot be below 1 or above that");
  }
}

// Group-limited routing: both keys or neither, the groups dividing the experts, a token's
// groups at most all of them.
void read_group_limit(const JsonNode& n, MoeSpec& e) {
  if (n.has("expert_groups") != n.has("groups_per_token")) {
    n.fail_at(n.has("expert_groups") ? "groups_per_token" : "expert_groups",
              "group-limited routing needs both expert_groups and groups_per_token");
  }
  if (!n.has("expert_groups")) return;
  e.expert_groups = int_key(n, "expert_groups", 1, e.num_experts);
  e.groups_per_token = int_key(n, "groups_per_token", 1, e.expert_groups);
  if (e.num_experts % e.expert_groups != 0) {
    n.fail_at("expert_groups", std::to_string(e.expert_groups) + " groups do not divide the " +
                                   std::to_string(e.num_experts) + " routed experts");
  }
}

void read_moe(const JsonNode& n, ModelSpec& m) {
  n.only_keys({"num_experts", "experts_per_token", "expert_ffn_hidden_size", "shared_experts",
               "shared_expert_ffn_hidden_size", "first_dense_layers", "moe_layer_freq",
               "capacity_factor", "routing_imbalance", "expert_groups", "groups_per_token",
               "sources"});
  require_sources(n,
                  {"num_experts", "experts_per_token", "expert_ffn_hidden_size", "shared_experts",
                   "shared_expert_ffn_hidden_size", "first_dense_layers", "moe_layer_freq",
                   "capacity_factor", "routing_imbalance", "expert_groups", "groups_per_token"});
  MoeSpec e;
  e.num_experts = int_key(n, "num_experts", 1, kMaxExperts);
  e.experts_per_token = int_key(n, "experts_per_token", 1, e.num_experts);
  e.expert_ffn_hidden = int_key(n, "expert_ffn_hidden_size", 1, kMaxWidth);
  e.shared_experts = int_key_or(n, "shared_experts", 0, 0, kMaxExperts);
  e.shared_expert_ffn_hidden = int_key_or(n, "shared_expert_ffn_hidden_size", 0, 1, kMaxWidth);
  e.first_dense_layers = int_key_or(n, "first_dense_layers", 0, 0, kMaxLayers);
  e.moe_layer_freq = int_key_or(n, "moe_layer_freq", 1, 1, kMaxLayers);
  e.capacity_factor = number_in_or(n, "capacity_factor", 0, 0, kMaxCapacityFactor);
  e.routing_imbalance = number_in_or(n, "routing_imbalance", 1, 1, kMaxExperts);
  read_group_limit(n, e);
  check_shared_experts(n, e);
  check_routing_imbalance(n, e);
  m.moe = e;
  check_moe_layers(n, m);
}

void read_mla(const JsonNode& n, MlaSpec& a) {
  n.only_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
               "sources"});
  require_sources(
      n, {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  a.q_lora_rank = int_key(n, "q_lora_rank", 0, kMaxWidth);
  a.kv_lora_rank = int_key(n, "kv_lora_rank", 1, kMaxWidth);
  a.qk_nope_head_dim = int_key(n, "qk_nope_head_dim", 1, kMaxWidth);
  a.qk_rope_head_dim = int_key(n, "qk_rope_head_dim", 1, kMaxWidth);
  a.v_head_dim = int_key(n, "v_head_dim", 1, kMaxWidth);
}

// MLA has its own head widths and no KV heads to group.
void check_mla_against_heads(const JsonNode& n, const ModelSpec& m) {
  if (n.has("head_dim")) {
    n.fail_at("head_dim",
              "is not used with \"mla\": its qk_nope_head_dim, qk_rope_head_dim "
              "and v_head_dim give the head widths");
  }
  if (m.num_kv_heads != m.num_heads) {
    n.fail_at("num_kv_heads",
              "multi-head latent attention has no grouped KV heads: every one "
              "of the " +
                  std::to_string(m.num_heads) +
                  " heads gets its keys and values from the shared latent");
  }
}

}  // namespace

void read_model_blocks(const JsonNode& n, ModelSpec& m) {
  m.attention_head_dim = int_key_or(n, "head_dim", 0, 1, kMaxWidth);
  m.mtp_layers = int_key_or(n, "mtp_layers", 0, 0, kMaxMtpLayers);
  if (const auto moe = n.find("moe")) read_moe(*moe, m);
  if (const auto mla = n.find("mla")) {
    MlaSpec a;
    read_mla(*mla, a);
    m.mla = a;
    check_mla_against_heads(n, m);
  }
}

}  // namespace clustersim::input
