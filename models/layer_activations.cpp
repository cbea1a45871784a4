#include "models/layer_activations.hpp"

#include "models/op_checkpoint.hpp"

namespace clustersim::models {

namespace {

// Korthikanti et al. 2022 §4.1: activations in 16-bit floating point, dropout masks one byte
// per element.
constexpr double kActivationBytes = 2.0;
constexpr double kMaskBytes = 1.0;
// FP8 linear layers keep the FP8 cast of their input for the weight-gradient GEMM
// (Transformer Engine linear.py / layernorm_linear.py, TE v1.8; DeepSeek-V3 §3.3.3: "cache
// activations in FP8 format for the backward pass of the Linear operator").
constexpr double kFp8ActivationBytes = 1.0;
// DeepSeek-V3 §3.3.3 (1): the inputs of the linear layer after the attention operator, which
// the attention backward reads too, are cached in "a customized E5M6 data format": 1 sign,
// 5 exponent and 6 mantissa bits = 12 bits.
constexpr double kE5M6Bytes = 12.0 / 8.0;
// FlashAttention keeps one FP32 log-sum-exp per query row and head (Dao et al. 2022,
// Algorithm 2; FlashAttention-2 Algorithm 1).
constexpr double kSoftmaxStatsBytes = 4.0;
// The router's scores in FP32: Megatron-Core's moe_router_dtype fp32 (DeepSeek-V3 §3.3.1 keeps
// the MoE gating modules in their original precision); the score function's backward (sigmoid
// in DeepSeek-V3 §2.1.2, softmax elsewhere) reads its output, one score per routed expert.
constexpr double kRouterScoreBytes = 4.0;
// Per routed copy: its gate probability (FP32, the router's dtype), which the weighted
// activation's backward reads (Megatron-Core experts.py activation_func_with_probs), and its
// int32 row index, with which the unpermutation's backward gathers the gradients back
// (Megatron-Core moe_utils.py permute / Transformer Engine moe_permute row_id_map).
constexpr double kRoutingProbBytes = 4.0;
constexpr double kRowIndexBytes = 4.0;

double linear_input_bytes(const ActivationOptions& o) {
  return o.fp8_linears ? kFp8ActivationBytes : kActivationBytes;
}

// The attention output of `width` elements per token: the output projection's input, which
// the attention backward reads too. 16-bit (plus the projection's FP8 copy under FP8), or one
// E5M6 copy serving both with the FP8 cache.
double attention_output_bytes(double width, const ActivationOptions& o) {
  if (o.fp8_cache) return kE5M6Bytes * width;
  return kActivationBytes * width + (o.fp8_linears ? kFp8ActivationBytes * width : 0.0);
}

// Fused attention: FP32 softmax statistics per head (sharded); unfused: the softmax output,
// dropout mask and dropout output per score (Korthikanti et al.'s 5as), or the softmax output
// alone without dropout.
void add_attention_core(ActivationTerms& t, const ModelSpec& m, int seq_len,
                        const ActivationOptions& o) {
  const double a = m.num_heads;
  if (fused(o.attention)) {
    t.sharded += kSoftmaxStatsBytes * a;
    return;
  }
  const double per_score = o.dropout ? 2 * kActivationBytes + kMaskBytes : kActivationBytes;
  t.scores = per_score * a * seq_len;
}

// Multi-head or grouped-query attention: the norm's input, the QKV projection's input (the
// norm's output), Q, K and V (read by the attention backward), the attention output and the
// dropout mask after the output projection.
ActivationTerms gqa_terms(const ModelSpec& m, int seq_len, const ActivationOptions& o) {
  const double h = m.hidden;
  const double q = static_cast<double>(m.num_heads) * m.head_dim();
  const double kv = static_cast<double>(m.num_kv_heads) * m.head_dim();
  ActivationTerms t;
  t.replicated = kActivationBytes * h                                     // norm input
                 + (o.recompute_norms ? 0.0 : linear_input_bytes(o) * h)  // QKV input
                 + (o.dropout ? kMaskBytes * h : 0.0);                    // dropout mask
  t.sharded = kActivationBytes * (q + 2 * kv)                             // Q, K, V
              + attention_output_bytes(q, o);
  add_attention_core(t, m, seq_len, o);
  return t;
}

// MLA (DeepSeek-V2 §2.1.2-2.1.3, eqs. 9-19; DeepSeek-V3 §2.1.1 and §4.2: RMSNorm on each
// latent). Forward: x -> norm -> down-projections to the query latent c_Q (q_lora_rank) and to
// the key/value latent c_KV (kv_lora_rank) with the shared RoPE key k_R (qk_rope_head_dim) ->
// latent norms -> up-projections to the per-head queries (qk_nope + qk_rope wide), keys
// (qk_nope, with k_R appended to every head) and values (v_head_dim) -> attention -> output
// projection. Stored:
//   replicated: the norm input; the down-projections' input (the norm's output); c_Q and c_KV
//     (the latent norms' inputs); the up-projections' inputs (the normalised latents); the
//     dropout mask;
//   sharded: Q, K, V as the attention backward reads them, the attention output.
// Recomputing the up-projections (mla_up_proj) keeps only c_Q, c_KV and k_R before RoPE
// (2 x qk_rope_head_dim, to rebuild K); recomputing the norms (layernorm) drops their outputs.
ActivationTerms mla_terms(const ModelSpec& m, int seq_len, const ActivationOptions& o) {
  const MlaSpec& l = *m.mla;
  const double h = m.hidden;
  const double a = m.num_heads;
  const double cq = l.q_lora_rank;
  const double ckv = l.kv_lora_rank;
  const double dqk = l.qk_head_dim();
  const bool up = o.recompute_mla_up_proj;
  const double lin = linear_input_bytes(o);
  ActivationTerms t;
  // With the up-projections recomputed, the RoPE key before RoPE (to rebuild K) instead of
  // the up-projections' inputs.
  const double up_inputs = up ? kActivationBytes * l.qk_rope_head_dim : lin * (cq + ckv);
  t.replicated = kActivationBytes * h                   // norm input
                 + (o.recompute_norms ? 0.0 : lin * h)  // down-projections' input
                 + kActivationBytes * (cq + ckv)        // latents (latent norms' inputs)
                 + up_inputs + (o.dropout ? kMaskBytes * h : 0.0);  // dropout mask
  // Without a query latent (q_lora_rank 0) the queries come from the hidden state and are not
  // part of the up-projection recompute.
  const bool q_recomputed = up && cq > 0;
  t.sharded = (q_recomputed ? 0.0 : kActivationBytes * a * dqk)           // Q
              + (up ? 0.0 : kActivationBytes * a * (dqk + l.v_head_dim))  // K, V
              + attention_output_bytes(a * l.v_head_dim, o);
  add_attention_core(t, m, seq_len, o);
  return t;
}

// Gate and up outputs (SwiGLU) or the one pre-activation (GeLU, squared ReLU): the
// activation's inputs, which its backward reads.
double activation_inputs(FfnKind ffn) {
  return ffn == FfnKind::swiglu ? 2.0 : 1.0;
}

// A dense FFN: the norm's input, the first linear's input (the norm's output), the
// activation's inputs, its output (the second linear's input) and the dropout mask. With the
// "mlp" module recomputed, only the checkpoint's input, the norm's input, and the mask after
// it are kept.
ActivationTerms dense_ffn_terms(const ModelSpec& m, const ActivationOptions& o) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double lin = linear_input_bytes(o);
  ActivationTerms t;
  if (o.recompute_mlp) {
    t.replicated = kActivationBytes * h + (o.dropout ? kMaskBytes * h : 0.0);
    return t;
  }
  t.replicated = kActivationBytes * h + (o.recompute_norms ? 0.0 : lin * h) +
                 (o.dropout ? kMaskBytes * h : 0.0);
  t.sharded = kActivationBytes * activation_inputs(m.ffn) * f + lin * f;
  return t;
}

// An MoE FFN (Megatron-Core MoELayer; DeepSeek-V3 §2.1.2): the norm's input; its output, read
// by the router's weight gradient (the router runs in BF16 under FP8, 2 bytes) and, as an FP8
// copy, by the shared experts' first linear; the router's scores; the dropout mask. Each routed
// copy (dispatched to its expert) stores the expert's first-linear input (FP8 under FP8: DeepSeek
// dispatches in FP8, §3.3.3), its probability and row index, the activation's inputs (FP8 with
// the FP8 cache, §3.3.3 (2)) and its output (not with moe_act). The shared experts store what a
// dense FFN of their width does (their input is the norm output counted above).
ActivationTerms moe_ffn_terms(const ModelSpec& m, const ActivationOptions& o) {
  const MoeSpec& e = *m.moe;
  const double h = m.hidden;
  const double fs = e.shared_ffn_width();
  const double lin = linear_input_bytes(o);
  const double norm_output =
      kActivationBytes * h + (fs > 0 && o.fp8_linears ? kFp8ActivationBytes * h : 0.0);
  ActivationTerms t;
  t.replicated = kActivationBytes * h + (o.recompute_norms ? 0.0 : norm_output) +
                 kRouterScoreBytes * e.num_experts + (o.dropout ? kMaskBytes * h : 0.0);
  // The shared experts' internals; none kept when they are recomputed from their input (the
  // norm output above).
  t.sharded = fs > 0 && !o.recompute_shared_experts
                  ? kActivationBytes * activation_inputs(m.ffn) * fs + lin * fs
                  : 0.0;
  t.routed_copy = lin * h + kRoutingProbBytes + kRowIndexBytes;
  const double act_input_bytes = o.fp8_cache ? kFp8ActivationBytes : kActivationBytes;
  t.routed_copy_ffn = act_input_bytes * activation_inputs(m.ffn) * e.expert_ffn_hidden +
                      (o.recompute_moe_act ? 0.0 : lin * e.expert_ffn_hidden);
  return t;
}

ActivationTerms sum(ActivationTerms a, const ActivationTerms& b) {
  a.replicated += b.replicated;
  a.sharded += b.sharded;
  a.scores += b.scores;
  a.routed_copy += b.routed_copy;
  a.routed_copy_ffn += b.routed_copy_ffn;
  return a;
}

// Bytes on one GPU: sequence parallelism splits the replicated part, tensor parallelism the
// sharded part and the scores. Routed copies: each GPU dispatches the copies of its own tokens
// (T / tp of them with sequence parallelism); an EP rank receives as many as it sends when
// routing is balanced (copies_per_token carries the imbalance); with expert TP the TP group
// all-gathers them (x etp, as workload/pass_builder_moe.cpp's expert_tokens) and splits each
// expert's width by etp.
double bytes_on_gpu(const ActivationTerms& t, double tokens, const ActivationLayout& l) {
  const double sp = l.sequence_parallel ? l.tp : 1.0;
  const double copies =
      l.copies_per_token * (l.sequence_parallel ? static_cast<double>(l.etp) / l.tp : 1.0);
  return tokens * (t.replicated / sp + (t.sharded + t.scores) / l.tp +
                   copies * (t.routed_copy + t.routed_copy_ffn / l.etp));
}

}  // namespace

ActivationOptions activation_options(const Training& tr) {
  ActivationOptions o;
  o.attention = tr.attention;
  o.dropout = tr.dropout;
  o.fp8_linears = tr.precision == Dtype::fp8;
  o.fp8_cache = tr.fp8_activation_cache;
  o.recompute_norms = tr.recompute_norms;
  o.recompute_mla_up_proj = tr.recompute_mla_up_proj;
  o.recompute_moe_act = tr.recompute_moe_act;
  o.recompute_mlp = tr.recompute_mlp;
  o.recompute_shared_experts = tr.recompute_shared_experts;
  return o;
}

ActivationTerms attention_activation_terms(const ModelSpec& m, int seq_len,
                                           const ActivationOptions& o) {
  return m.mla ? mla_terms(m, seq_len, o) : gqa_terms(m, seq_len, o);
}

ActivationTerms ffn_activation_terms(const ModelSpec& m, bool moe, const ActivationOptions& o) {
  return moe && m.moe ? moe_ffn_terms(m, o) : dense_ffn_terms(m, o);
}

ActivationTerms layer_activation_terms(const ModelSpec& m, int seq_len, bool moe,
                                       const ActivationOptions& o) {
  return sum(attention_activation_terms(m, seq_len, o), ffn_activation_terms(m, moe, o));
}

LayerActivations layer_activations(const ModelSpec& m, int seq_len, double tokens, bool moe,
                                   const ActivationLayout& layout, Recompute recompute,
                                   const ActivationOptions& options) {
  ActivationOptions kept = options;  // the same tensors with no module recomputed
  kept.recompute_norms = kept.recompute_mla_up_proj = kept.recompute_moe_act = false;
  kept.recompute_mlp = kept.recompute_shared_experts = false;
  const ActivationTerms terms = layer_activation_terms(m, seq_len, moe, options);
  const double stored = bytes_on_gpu(terms, tokens, layout);
  const double modules =
      bytes_on_gpu(layer_activation_terms(m, seq_len, moe, kept), tokens, layout) - stored;
  const double scores = tokens * terms.scores / layout.tp;
  LayerActivations out;
  switch (recompute) {
    case Recompute::none:
      out.stored = stored;
      out.transient = modules;
      break;
    case Recompute::selective:
      out.stored = stored - scores;
      out.transient = scores + modules;
      break;
    case Recompute::full:
      // Only the layer input is kept (Korthikanti et al. §4.3), split by sequence parallelism.
      out.stored = tokens * kActivationBytes * m.hidden /
                   (layout.sequence_parallel ? static_cast<double>(layout.tp) : 1.0);
      out.transient = stored + modules;
      break;
    case Recompute::selective_op:
      out.stored = op_checkpoint_stored_bytes(m, tokens, layout.tp, layout.sequence_parallel);
      out.transient = stored + modules;  // the block re-created during its backward
      break;
  }
  return out;
}

bool uses_activation_terms(const Scenario& s) {
  const Training& tr = s.training;
  return s.model.mla || s.model.moe || activation_options(tr).any_module() ||
         tr.fp8_activation_cache;
}

double module_recompute_flops_per_token(const ModelSpec& m, const ActivationOptions& o) {
  if (!m.mla || !o.recompute_mla_up_proj) return 0;
  constexpr double kFlopsPerMac = 2;
  const MlaSpec& l = *m.mla;
  const double a = m.num_heads;
  const double queries = static_cast<double>(l.q_lora_rank) * a * l.qk_head_dim();
  const double keys_values =
      static_cast<double>(l.kv_lora_rank) * a * (l.qk_nope_head_dim + l.v_head_dim);
  return kFlopsPerMac * (queries + keys_values);
}

}  // namespace clustersim::models
