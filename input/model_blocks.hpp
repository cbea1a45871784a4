// The optional blocks of a model preset beyond the dense Transformer: the mixture-of-experts
// FFN ("moe"), multi-head latent attention ("mla") and multi-token prediction ("mtp_layers").
//
//   "moe": {"num_experts", "experts_per_token" (top-k), "expert_ffn_hidden_size",
//           "shared_experts" (default 0), "shared_expert_ffn_hidden_size" (per shared expert;
//           required with shared experts), "first_dense_layers" (default 0),
//           "moe_layer_freq" (default 1), "capacity_factor" (default 0 = dropless),
//           "routing_imbalance" (default 1), "sources": {key: citation}}
//   "mla": {"q_lora_rank" (0 = none), "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
//           "v_head_dim", "sources": {key: citation}}
//   "mtp_layers": multi-token prediction modules (default 0)
//
// Every key a block sets is cited in the block's own "sources". Errors are ConfigErrors at the
// key's JSON pointer (e.g. models/presets/x.json:/moe/experts_per_token).
#pragma once

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::input {

// Reads "moe", "mla" and "mtp_layers" of model object `n` into `m`, whose dense keys are read,
// and checks them against those (layer counts, attention heads).
void read_model_blocks(const JsonNode& n, ModelSpec& m);

}  // namespace clustersim::input
