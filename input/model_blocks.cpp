#include "input/model_blocks.hpp"

#include <string>

#include "input/input_keys.hpp"
#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

int int_key(const JsonNode& n, const char* key, std::int64_t min, std::int64_t max) {
  return static_cast<int>(n.int_at(key, min, max));
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
  const ObjectSpec& keys = moe_keys();
  only_table_keys(n, keys);
  require_sources(n, keys.number_names());
  MoeSpec e;
  e.num_experts = static_cast<int>(int_at(n, keys, "num_experts"));
  // At most the routed experts: a bound that depends on another key.
  e.experts_per_token = int_key(n, "experts_per_token", 1, e.num_experts);
  e.expert_ffn_hidden = static_cast<int>(int_at(n, keys, "expert_ffn_hidden_size"));
  e.shared_experts = static_cast<int>(int_or(n, keys, "shared_experts", 0));
  e.shared_expert_ffn_hidden =
      static_cast<int>(int_or(n, keys, "shared_expert_ffn_hidden_size", 0));
  e.first_dense_layers = static_cast<int>(int_or(n, keys, "first_dense_layers", 0));
  e.moe_layer_freq = static_cast<int>(int_or(n, keys, "moe_layer_freq", 1));
  e.capacity_factor = number_or(n, keys, "capacity_factor", 0);
  e.routing_imbalance = number_or(n, keys, "routing_imbalance", 1);
  read_group_limit(n, e);
  check_shared_experts(n, e);
  check_routing_imbalance(n, e);
  m.moe = e;
  check_moe_layers(n, m);
}

void read_mla(const JsonNode& n, MlaSpec& a) {
  const ObjectSpec& keys = mla_keys();
  only_table_keys(n, keys);
  require_sources(n, keys.number_names());
  a.q_lora_rank = static_cast<int>(int_at(n, keys, "q_lora_rank"));
  a.kv_lora_rank = static_cast<int>(int_at(n, keys, "kv_lora_rank"));
  a.qk_nope_head_dim = static_cast<int>(int_at(n, keys, "qk_nope_head_dim"));
  a.qk_rope_head_dim = static_cast<int>(int_at(n, keys, "qk_rope_head_dim"));
  a.v_head_dim = static_cast<int>(int_at(n, keys, "v_head_dim"));
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
  m.attention_head_dim = static_cast<int>(int_or(n, model_keys(), "head_dim", 0));
  m.mtp_layers = static_cast<int>(int_or(n, model_keys(), "mtp_layers", 0));
  if (const auto moe = n.find("moe")) read_moe(*moe, m);
  if (const auto mla = n.find("mla")) {
    MlaSpec a;
    read_mla(*mla, a);
    m.mla = a;
    check_mla_against_heads(n, m);
  }
}

}  // namespace clustersim::input
