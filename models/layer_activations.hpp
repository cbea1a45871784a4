// Stored activations of one Transformer layer, term by term, for the layers the dense count
// (models/memory.hpp, activation_coefficients) does not describe: multi-head latent attention
// (DeepSeek-V2 §2.1, DeepSeek-V3 §2.1.1), mixture-of-experts FFNs with their routed token
// copies, and the recomputed modules and FP8 activation cache of DeepSeek-V3 (§3.2.3, §3.3.3).
//
// The rule is Korthikanti et al. 2022's (§4.1): every tensor a backward kernel reads is stored
// from the forward pass to the backward pass. Each term is named in layer_activations.cpp with
// the kernel that reads it. Bytes per token, before parallelism; layer_activations applies
// the layout.
#pragma once

#include "core/scenario.hpp"
#include "models/memory.hpp"

namespace clustersim::models {

// What changes the stored tensors besides the model: the training section's kernels and
// precision and its recompute modules.
struct ActivationOptions {
  AttentionKernel attention = AttentionKernel::flash;
  bool dropout = true;
  bool fp8_linears = false;  // precision fp8: linear layers keep FP8 copies of their inputs
  bool fp8_cache = false;    // training.fp8_activation_cache
  bool recompute_norms = false;
  bool recompute_mla_up_proj = false;
  bool recompute_moe_act = false;
  bool recompute_mlp = false;
  bool recompute_shared_experts = false;
  bool any_module() const {
    return recompute_norms || recompute_mla_up_proj || recompute_moe_act || recompute_mlp ||
           recompute_shared_experts;
  }
};
ActivationOptions activation_options(const clustersim::Training& training);

// Bytes per token of one layer, by how the layout splits them.
struct ActivationTerms {
  double replicated = 0;  // split only by sequence parallelism (norm inputs, MLA latents, router)
  double sharded = 0;     // split by tensor parallelism (heads, FFN columns)
  double scores = 0;      // unfused attention's score tensors: split by tp, dropped by selective
  // Per routed copy of a token (an MoE layer makes experts_per_token of them): the dispatched
  // hidden-wide input of the expert, its routing probability and row index, and the
  // expert-width tensors (split by expert tensor parallelism).
  double routed_copy = 0;
  double routed_copy_ffn = 0;
  double per_token_total(double copies) const {
    return replicated + sharded + scores + copies * (routed_copy + routed_copy_ffn);
  }
};

// The attention block with the norm before it: MLA when the model has `mla`, otherwise
// multi-head / grouped-query attention with the model's head width.
ActivationTerms attention_activation_terms(const clustersim::ModelSpec& model, int seq_len,
                                           const ActivationOptions& options);
// The FFN block with the norm before it: the dense FFN, or (moe) the router, the routed
// experts per copy and the shared experts.
ActivationTerms ffn_activation_terms(const clustersim::ModelSpec& model, bool moe,
                                     const ActivationOptions& options);
ActivationTerms layer_activation_terms(const clustersim::ModelSpec& model, int seq_len, bool moe,
                                       const ActivationOptions& options);

// How the layout splits one layer's tensors on one GPU.
struct ActivationLayout {
  int tp = 1;
  int etp = 1;  // expert tensor parallelism (Parallelism::expert_tp())
  bool sequence_parallel = false;
  // Routed copies of one token the busiest GPU holds: experts_per_token x the routing
  // imbalance (capped by the capacity factor).
  double copies_per_token = 0;
};

// One layer's stored activations on one GPU for a micro-batch of `tokens` local tokens (before
// the sequence-parallel split), under `recompute`. `transient` is what recomputation re-creates
// for one layer at a time during its backward: the recompute modules' tensors, the score
// tensors under selective recomputation, the whole layer under full recomputation.
LayerActivations layer_activations(const clustersim::ModelSpec& model, int seq_len, double tokens,
                                   bool moe, const ActivationLayout& layout,
                                   clustersim::Recompute recompute,
                                   const ActivationOptions& options);

// Whether the term-by-term count applies (a model with MLA or MoE, or a scenario with recompute
// modules or the FP8 cache); otherwise the dense count is used unchanged.
bool uses_activation_terms(const clustersim::Scenario& scenario);

// The forward FLOPs per token of one layer's recompute modules that run GEMMs: the MLA
// up-projections (queries from the query latent, keys and values from the key/value latent),
// 2 FLOPs per multiply-add. Norms and the SwiGLU are element-wise (no GEMM FLOPs).
double module_recompute_flops_per_token(const clustersim::ModelSpec& model,
                                        const ActivationOptions& options);

}  // namespace clustersim::models
