// Parameter and FLOP counts of a decoder-only Transformer (ModelSpec: dense, or with
// mixture-of-experts FFNs, MLA attention and multi-token prediction modules), component by
// component, in the two conventions that published MFU/HFU figures use. FLOPs of an MoE model
// count the parameters a token passes through (top-k routed and the shared experts).
//
// Conventions (both count a multiply-add as 2 FLOPs and count the full s x s attention matrix,
// i.e. no discount for the causal mask, as both papers do):
//   * Megatron-LM (Narayanan et al., SC'21, eq. 3): GEMM FLOPs only, layer by layer: the Q/K/V/O
//     projections, the attention score and attention-over-values batched GEMMs, the MLP GEMMs and
//     the logit layer. For GPT shapes (MHA, GeLU FFN of 4h) with full recomputation this is
//     F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration; without recomputation it is
//     Korthikanti et al.'s eq. 7, 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
//   * PaLM (Chowdhery et al. 2022, Appendix B): 6N + 12 l h s per token of model FLOPs, where N
//     counts the parameters that multiply activations (every layer parameter, the final norm and
//     the LM head; the input token and position tables are lookups and do not count; with tied
//     embeddings the shared matrix counts once, as the LM head).
// Model FLOPs (forward + backward) are what MFU divides; hardware FLOPs add the recomputed
// forward work and are what HFU divides.
#pragma once

#include <vector>

#include "core/scenario.hpp"

namespace clustersim::models {

// Number of parameters (not bytes) per component. A mixture-of-experts model (ModelSpec::moe)
// has `moe_layers` layers whose FFN is a router, `experts` routed experts (of which each token
// uses `experts_per_token`) and its shared experts; its other layers keep the dense FFN.
struct ParameterCounts {
  double embedding = 0;            // token embedding V x h
  double position_embedding = 0;   // learned positions max_seq_len x h (0 with RoPE)
  double attention_per_layer = 0;  // Q, K, V, O weights and biases (MLA: its projections, norms)
  double mlp_per_layer = 0;        // dense FFN weights (2 matrices GeLU, 3 SwiGLU) and biases
  double norms_per_layer = 0;      // the two pre-norms (LayerNorm: weight+bias, RMSNorm: weight)
  double final_norm = 0;
  double lm_head = 0;  // V x h when untied, 0 when the embedding is reused
  int num_layers = 0;
  int moe_layers = 0;         // of num_layers, the layers with the MoE FFN
  int experts = 0;            // routed experts per MoE layer
  int experts_per_token = 0;  // top-k
  double expert = 0;          // one routed expert's FFN
  double shared_experts = 0;  // the shared experts of one MoE layer, together
  double router = 0;          // one MoE layer's router (h x experts)
  int mtp_modules = 0;        // multi-token prediction modules
  double mtp = 0;             // the multi-token prediction modules, all of their parameters
  double mtp_active = 0;      // the same with top-k routed experts (embedding and head shared)

  int dense_layers() const { return num_layers - moe_layers; }
  // One dense layer.
  double per_layer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }
  // One MoE layer: every routed expert, or (active) the top-k that one token uses.
  double per_moe_layer(bool active) const {
    return attention_per_layer + norms_per_layer + router + shared_experts +
           expert * (active ? experts_per_token : experts);
  }
  double layers() const { return layers_of(false); }
  // The layers' parameters one token passes through (layers() for a dense model).
  double active_layers() const { return layers_of(true); }
  // Every parameter, the multi-token prediction modules included.
  double total() const {
    return embedding + position_embedding + layers() + final_norm + lm_head + mtp;
  }
  // The parameters one token of the main model (no MTP module) passes through: total() of a
  // dense model without MTP; DeepSeek's and Qwen's "activated parameters".
  double active() const {
    return embedding + position_embedding + active_layers() + final_norm + lm_head;
  }
  // The routed experts' weights, which expert parallelism splits.
  double routed_experts() const { return expert * experts * moe_layers; }
  // Parameters that multiply activations for one token (the N of PaLM's 6N): active layers,
  // final norm, LM head (the embedding matrix when tied), and the MTP modules with their use
  // of the shared head.
  double palm_n() const;
  // Everything except the embedding tables and the LM head ("non-embedding" parameters).
  double non_embedding() const { return layers() + final_norm; }

 private:
  double layers_of(bool active) const {
    if (moe_layers == 0) return per_layer() * num_layers;
    return per_layer() * dense_layers() + per_moe_layer(active) * moe_layers;
  }
};

ParameterCounts count_parameters(const clustersim::ModelSpec& model);

// What one multi-token prediction module adds besides its Transformer layer, on one TP rank:
// the 2h -> h projection (split by tp) and its two norms (DeepSeek-V3 §2.2).
double mtp_module_own_parameters(const clustersim::ModelSpec& model, int tp);

// Parameters of one Transformer layer held by one tensor-parallel rank (Megatron's split:
// column-parallel Q/K/V and FFN-in weights and biases divided by tp, row-parallel O and FFN-out
// weights divided by tp with their biases replicated, norms replicated).
// Precondition: tp divides heads and ffn_hidden (validated by the loader); GQA with
// tp > num_kv_heads replicates KV heads so that each rank holds one. MLA (Megatron-Core's
// MLASelfAttention): the down-projections and latent norms replicated, the up-projections
// column-parallel and the output projection row-parallel. For a dense layer (the dense FFN).
double layer_parameters_per_tp_rank(const clustersim::ModelSpec& model, int tp);

// The parameters of one MoE layer on one GPU: `dense` the part split by tensor parallelism as
// a dense layer's is (attention, norms, shared experts column/row-parallel; the router
// replicated, as Megatron-Core's TopKRouter is), `experts` its num_experts / ep routed experts,
// each split by expert tensor parallelism (Parallelism::expert_tp()).
struct LayerParameters {
  double dense = 0;
  double experts = 0;
};
LayerParameters moe_layer_parameters_on_gpu(const clustersim::ModelSpec& model,
                                            const clustersim::Parallelism& parallelism);

// The weight matrices of one layer on one tensor-parallel rank, in forward order, as Megatron
// stores them: the fused Q/K/V projection, the output projection, the FFN input (gate and up
// fused for SwiGLU) and the FFN output, in elements. Biases and norms are the rest of
// layer_parameters_per_tp_rank.
std::vector<double> layer_weight_matrices_per_tp_rank(const clustersim::ModelSpec& model, int tp);
// The parameter tensors of one dense layer as PyTorch holds them: those four matrices, their
// biases when the model has them, and the two norms' gains (and biases for LayerNorm). Kernels
// that loop over parameters (gradient accumulation, DeepSpeed 2021's gathers) run one per tensor.
int layer_param_tensors(const clustersim::ModelSpec& model);

enum class FlopConvention { megatron, palm };
const char* to_string(FlopConvention c);

// FLOPs per token of training (one token of one sequence of length seq_len).
struct FlopsPerToken {
  double forward = 0;    // one forward pass
  double backward = 0;   // the backward pass (2x forward: gradients w.r.t. inputs and weights)
  double recompute = 0;  // forward work repeated by activation recomputation
  double model() const { return forward + backward; }                 // MFU numerator
  double hardware() const { return forward + backward + recompute; }  // HFU numerator
};

// Per-token FLOPs for sequences of `seq_len` tokens. Preconditions: seq_len > 0.
// Recomputation (Korthikanti et al. 2022 §4): full repeats the forward pass of every layer (not
// the logit layer); selective repeats the attention core (Q K^T and attention over V);
// selective_op repeats the matmuls op-level checkpointing drops (models/op_checkpoint.hpp).
FlopsPerToken flops_per_token(const clustersim::ModelSpec& model, int seq_len,
                              clustersim::Recompute recompute, FlopConvention convention);

// The parts of the Megatron-convention forward pass per token, for reports and tests.
struct ForwardFlopsBreakdown {
  double attention_projections_per_layer = 0;  // Q, K, V, O GEMMs: 4h^2 + 4 h (kv_heads d)
  double attention_core_per_layer = 0;         // Q K^T and attention over V: 4 s h
  double mlp_per_layer = 0;                    // dense FFN: 4 h f (GeLU) or 6 h f (SwiGLU)
  double moe_mlp_per_layer = 0;  // MoE FFN: router, top-k routed and shared experts' GEMMs
  double logits = 0;             // 2 h V
  double mtp = 0;                // the MTP modules: layer, 2h -> h projection, logits
  int num_layers = 0;
  int moe_layers = 0;
  double per_layer() const {  // one dense layer
    return attention_projections_per_layer + attention_core_per_layer + mlp_per_layer;
  }
  double per_moe_layer() const {
    return attention_projections_per_layer + attention_core_per_layer + moe_mlp_per_layer;
  }
  // All Transformer layers of the main model.
  double layers() const {
    if (moe_layers == 0) return per_layer() * num_layers;
    return per_layer() * (num_layers - moe_layers) + per_moe_layer() * moe_layers;
  }
  double total() const { return layers() + logits + mtp; }
};
ForwardFlopsBreakdown forward_flops_per_token(const clustersim::ModelSpec& model, int seq_len);

// FLOPs of one optimizer step: per-token FLOPs times the tokens of the global batch.
struct StepFlops {
  FlopsPerToken per_token;
  double tokens = 0;
  double model() const { return per_token.model() * tokens; }
  double hardware() const { return per_token.hardware() * tokens; }
};
StepFlops flops_per_step(const clustersim::Scenario& scenario, FlopConvention convention);

}  // namespace clustersim::models
