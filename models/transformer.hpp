// Parameter and FLOP counts of a dense decoder-only Transformer (ModelSpec), component by
// component, in the two conventions that published MFU/HFU figures use.
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

// Number of parameters (not bytes) per component.
struct ParameterCounts {
  double embedding = 0;            // token embedding V x h
  double position_embedding = 0;   // learned positions max_seq_len x h (0 with RoPE)
  double attention_per_layer = 0;  // Q, K, V, O weights and, if present, their biases
  double mlp_per_layer = 0;        // FFN weights (2 matrices GeLU, 3 SwiGLU) and biases
  double norms_per_layer = 0;      // the two pre-norms (LayerNorm: weight+bias, RMSNorm: weight)
  double final_norm = 0;
  double lm_head = 0;  // V x h when untied, 0 when the embedding is reused
  int num_layers = 0;

  double per_layer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }
  double layers() const { return per_layer() * num_layers; }
  double total() const { return embedding + position_embedding + layers() + final_norm + lm_head; }
  // Parameters that multiply activations (the N of PaLM's 6N): layers, final norm, LM head
  // (the embedding matrix when tied).
  double palm_n() const;
  // Everything except the embedding tables and the LM head ("non-embedding" parameters).
  double non_embedding() const { return layers() + final_norm; }
};

ParameterCounts count_parameters(const clustersim::ModelSpec& model);

// Parameters of one Transformer layer held by one tensor-parallel rank (Megatron's split:
// column-parallel Q/K/V and FFN-in weights and biases divided by tp, row-parallel O and FFN-out
// weights divided by tp with their biases replicated, norms replicated).
// Precondition: tp divides heads and ffn_hidden (validated by the loader); GQA with
// tp > num_kv_heads replicates KV heads so that each rank holds one.
double layer_parameters_per_tp_rank(const clustersim::ModelSpec& model, int tp);

// The weight matrices of one layer on one tensor-parallel rank, in forward order, as Megatron
// stores them: the fused Q/K/V projection, the output projection, the FFN input (gate and up
// fused for SwiGLU) and the FFN output, in elements. Biases and norms are the rest of
// layer_parameters_per_tp_rank.
std::vector<double> layer_weight_matrices_per_tp_rank(const clustersim::ModelSpec& model, int tp);

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
// the logit layer); selective repeats the attention core (Q K^T and attention over V).
FlopsPerToken flops_per_token(const clustersim::ModelSpec& model, int seq_len,
                              clustersim::Recompute recompute, FlopConvention convention);

// The parts of the Megatron-convention forward pass per token, for reports and tests.
struct ForwardFlopsBreakdown {
  double attention_projections_per_layer = 0;  // Q, K, V, O GEMMs: 4h^2 + 4 h (kv_heads d)
  double attention_core_per_layer = 0;         // Q K^T and attention over V: 4 s h
  double mlp_per_layer = 0;                    // 4 h f (GeLU) or 6 h f (SwiGLU)
  double logits = 0;                           // 2 h V
  int num_layers = 0;
  double per_layer() const {
    return attention_projections_per_layer + attention_core_per_layer + mlp_per_layer;
  }
  double total() const { return per_layer() * num_layers + logits; }
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
