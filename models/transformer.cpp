#include "models/transformer.hpp"

#include <algorithm>

#include "models/layer_activations.hpp"
#include "models/op_checkpoint.hpp"
#include "models/pipeline.hpp"

namespace clustersim::models {

namespace {

// A multiply-add is two floating-point operations (Narayanan et al. SC'21 §5.1 and Chowdhery et
// al. 2022 App. B both count 2mnk for an m x k by k x n GEMM).
constexpr double kFlopsPerMac = 2.0;
// The backward pass of a GEMM computes the gradient w.r.t. its input and w.r.t. its weight, each
// as costly as the forward GEMM (Narayanan et al. SC'21 §5.1: "the backward pass requires double
// the number of FLOPs since we need to calculate the gradients with respect to both input and
// weight tensors").
constexpr double kBackwardOverForward = 2.0;

// Width of the K (or V) projection: KV heads times head dimension (h for multi-head attention).
double kv_width(const ModelSpec& m) {
  return static_cast<double>(m.num_kv_heads) * m.head_dim();
}

// Width of the Q projection (and the output projection's input): heads times head dimension,
// h unless the model gives its own head width (ModelSpec::attention_head_dim).
double q_width(const ModelSpec& m) {
  return static_cast<double>(m.num_heads) * m.head_dim();
}

// Weight matrices of the FFN: up and down for GeLU, gate, up and down for SwiGLU
// (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6).
double ffn_matrices(const ModelSpec& m) {
  return m.ffn == FfnKind::swiglu ? 3.0 : 2.0;
}

// Parameters of one normalisation layer: LayerNorm has a gain and a bias, RMSNorm only a gain
// (Zhang & Sennrich 2019).
double norm_params(const ModelSpec& m, double width) {
  return (m.norm == "rmsnorm" ? 1.0 : 2.0) * width;
}
double norm_params(const ModelSpec& m) {
  return norm_params(m, m.hidden);
}

// The weight matrices of MLA attention (DeepSeek-V2 §2.1, eqs. 9-19): the query down-projection
// h x q_lora and its up-projection q_lora x heads (qk_nope + qk_rope), or one h x heads x
// (qk_nope + qk_rope) without a query latent; the joint KV down-projection with the shared RoPE
// key, h x (kv_lora + qk_rope); the KV up-projection kv_lora x heads (qk_nope + v); the output
// projection heads v x h.
double mla_matrices(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  const double h = m.hidden;
  const double heads = m.num_heads;
  const double q = a.q_lora_rank > 0
                       ? h * a.q_lora_rank + double(a.q_lora_rank) * heads * a.qk_head_dim()
                       : h * heads * a.qk_head_dim();
  const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                    double(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + heads * a.v_head_dim * h;
}

// MLA's norms on the compressed latents (DeepSeek-V3 §4.2: "additional RMSNorm layers after the
// compressed latent vectors"): one on the KV latent and one on the query latent when there is.
double mla_norms(const ModelSpec& m) {
  const MlaSpec& a = *m.mla;
  return norm_params(m, a.kv_lora_rank) + norm_params(m, a.q_lora_rank);
}

// One FFN of `width` with the model's activation (biases as the dense FFN has them).
double ffn_params(const ModelSpec& m, double width) {
  const double h = m.hidden;
  double p = ffn_matrices(m) * h * width;
  if (m.linear_biases) p += (ffn_matrices(m) - 1) * width + h;
  return p;
}

// The MoE part of the counts: routed and shared experts and the router of one MoE layer.
void count_experts(const ModelSpec& m, ParameterCounts& p) {
  if (!m.moe) return;
  const MoeSpec& e = *m.moe;
  p.moe_layers = m.moe_layer_count();
  p.experts = e.num_experts;
  p.experts_per_token = e.experts_per_token;
  p.expert = ffn_params(m, e.expert_ffn_hidden);
  p.shared_experts = e.shared_experts * ffn_params(m, e.shared_expert_ffn_hidden);
  // The router is one linear layer h -> experts without a bias (Fedus et al. 2022; Megatron-
  // Core TopKRouter; DeepSeek-V3's gate, whose per-expert bias for load balancing is set by a
  // rule, not trained, and is left out here).
  p.router = static_cast<double>(m.hidden) * e.num_experts;
}

// Multi-token prediction modules (DeepSeek-V3 §2.2): each a Transformer layer like the main
// model's last, the projection M of the concatenated [norm(h); norm(embedding)] (2h -> h) and
// its two RMSNorms; the embedding and output head are the main model's.
void count_mtp(const ModelSpec& m, ParameterCounts& p) {
  if (m.mtp_layers == 0) return;
  const double h = m.hidden;
  const double own = 2 * h * h + 2 * norm_params(m);
  const bool moe_layer = m.is_moe_layer(m.num_layers - 1);
  const double layer = moe_layer ? p.per_moe_layer(false) : p.per_layer();
  const double layer_active = moe_layer ? p.per_moe_layer(true) : p.per_layer();
  p.mtp_modules = m.mtp_layers;
  p.mtp = m.mtp_layers * (layer + own);
  p.mtp_active = m.mtp_layers * (layer_active + own);
}

}  // namespace

double ParameterCounts::palm_n() const {
  // PaLM's N is every parameter that takes part in a matrix multiply per token: the layers,
  // the final norm and the output projection; with tied embeddings the shared matrix is that
  // projection. Lookup tables (input tokens, learned positions) cost no FLOPs.
  const double head = lm_head > 0 ? lm_head : embedding;
  // Each MTP module multiplies its activations by its layer, its projection and the shared head.
  return active_layers() + final_norm + head + mtp_active + mtp_modules * head;
}

ParameterCounts count_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double q = q_width(m);
  const double kv = kv_width(m);
  ParameterCounts p;
  p.num_layers = m.num_layers;
  p.embedding = static_cast<double>(m.vocab) * h;
  p.position_embedding = m.learned_position_embeddings ? static_cast<double>(m.max_seq_len) * h : 0;
  // Q and O are h x (heads x head_dim), h x h for most models; K and V are h x (kv_heads x
  // head_dim) (Ainslie et al. 2023, GQA).
  p.attention_per_layer = 2 * h * q + 2 * h * kv;
  p.mlp_per_layer = ffn_matrices(m) * h * f;
  if (m.linear_biases) {
    p.attention_per_layer += q + 2 * kv + h;  // Q, K, V and O biases
    // One bias per FFN-in projection (f each) and one on the output (h).
    p.mlp_per_layer += (ffn_matrices(m) - 1) * f + h;
  }
  if (m.mla) p.attention_per_layer = mla_matrices(m) + mla_norms(m);
  p.norms_per_layer = 2 * norm_params(m);
  p.final_norm = norm_params(m);
  p.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * h;
  count_experts(m, p);
  count_mtp(m, p);
  return p;
}

namespace {

// Widths of one tensor-parallel rank's attention projections: Q (and O) h / tp; K and V one
// head's width per local KV head, at least one (GQA with tp > kv_heads replicates KV heads).
struct TpWidths {
  double q = 0;
  double kv = 0;
};
TpWidths tp_widths(const ModelSpec& m, int tp) {
  const double kv_heads_per_rank =
      std::max(1.0, static_cast<double>(m.num_kv_heads) / static_cast<double>(tp));
  return {q_width(m) / tp, kv_heads_per_rank * m.head_dim()};
}

}  // namespace

namespace {

// MLA attention on one tensor-parallel rank (see layer_parameters_per_tp_rank).
double mla_per_tp_rank(const ModelSpec& m, int tp) {
  const MlaSpec& a = *m.mla;
  const double h = m.hidden;
  const double heads = m.num_heads;
  const double down = h * a.q_lora_rank + h * (a.kv_lora_rank + a.qk_rope_head_dim);
  const double q_up = a.q_lora_rank > 0 ? double(a.q_lora_rank) * heads * a.qk_head_dim()
                                        : h * heads * a.qk_head_dim();
  const double kv_up = double(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return down + mla_norms(m) + (q_up + kv_up + heads * a.v_head_dim * h) / tp;
}

// A layer whose attention is MLA, with an FFN of `ffn_width` split by tp.
double mla_layer_per_tp_rank(const ModelSpec& m, int tp, double ffn_width) {
  return mla_per_tp_rank(m, tp) + ffn_params(m, ffn_width / tp) + 2 * norm_params(m);
}

}  // namespace

LayerParameters moe_layer_parameters_on_gpu(const ModelSpec& m, const Parallelism& par) {
  const MoeSpec& e = *m.moe;
  const int tp = par.tp;
  const double shared_width = e.shared_ffn_width();
  LayerParameters out;
  // The attention and norms of a dense layer, the shared experts in place of its FFN.
  ModelSpec with_shared = m;
  with_shared.ffn_hidden = static_cast<int>(shared_width);
  out.dense = m.mla ? mla_layer_per_tp_rank(m, tp, shared_width)
                    : layer_parameters_per_tp_rank(with_shared, tp);
  if (shared_width == 0 && m.linear_biases) out.dense -= m.hidden;  // no FFN, no output bias
  out.dense += static_cast<double>(m.hidden) * e.num_experts;       // the router
  out.experts =
      double(e.num_experts) / par.ep * ffn_params(m, double(e.expert_ffn_hidden) / par.expert_tp());
  return out;
}

double mtp_module_own_parameters(const ModelSpec& m, int tp) {
  const double h = m.hidden;
  return 2 * h * h / tp + 2 * count_parameters(m).final_norm;
}

double layer_parameters_per_tp_rank(const ModelSpec& m, int tp) {
  if (m.mla) return mla_layer_per_tp_rank(m, tp, m.ffn_hidden);
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  // Megatron-LM (Shoeybi et al. 2019 §3): Q/K/V and the FFN input are column-parallel (split
  // by output), O and the FFN output row-parallel (split by input, bias added after the
  // all-reduce so it is replicated).
  const TpWidths w = tp_widths(m, tp);
  double params = 0;
  for (double matrix : layer_weight_matrices_per_tp_rank(m, tp)) params += matrix;
  if (m.linear_biases) {
    params += w.q + 2 * w.kv + h;                  // column-parallel biases split, O bias whole
    params += (ffn_matrices(m) - 1) * f / tp + h;  // FFN-in biases split, FFN-out whole
  }
  params += 2 * norm_params(m);  // replicated on every tensor-parallel rank
  return params;
}

std::vector<double> layer_weight_matrices_per_tp_rank(const ModelSpec& m, int tp) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const TpWidths w = tp_widths(m, tp);
  return {h * (w.q + 2 * w.kv), w.q * h, (ffn_matrices(m) - 1) * h * f / tp, h * f / tp};
}

int layer_param_tensors(const ModelSpec& m) {
  const int matrices = static_cast<int>(layer_weight_matrices_per_tp_rank(m, 1).size());
  const int norm_tensors = m.norm == "rmsnorm" ? 1 : 2;
  return matrices * (m.linear_biases ? 2 : 1) + 2 * norm_tensors;
}

const char* to_string(FlopConvention c) {
  return c == FlopConvention::megatron ? "megatron" : "palm";
}

namespace {

// The MoE FFN of one layer per token: the router GEMM (h x experts) and the GEMMs of the top-k
// routed experts and of the shared experts, each an FFN of its width.
double moe_mlp_flops(const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  const double h = m.hidden;
  const double width = double(e.experts_per_token) * e.expert_ffn_hidden + e.shared_ffn_width();
  return kFlopsPerMac * h * e.num_experts + ffn_matrices(m) * kFlopsPerMac * h * width;
}

// Each MTP module per token: its Transformer layer, the 2h -> h projection and its logits
// through the shared head (DeepSeek-V3 §2.2).
double mtp_flops(const ModelSpec& m, const ForwardFlopsBreakdown& b) {
  const bool moe_layer = m.is_moe_layer(m.num_layers - 1);
  const double layer = moe_layer ? b.per_moe_layer() : b.per_layer();
  const double h = m.hidden;
  return m.mtp_layers * (layer + kFlopsPerMac * 2 * h * h + b.logits);
}

}  // namespace

ForwardFlopsBreakdown forward_flops_per_token(const ModelSpec& m, int seq_len) {
  const double h = m.hidden;
  const double s = seq_len;
  ForwardFlopsBreakdown b;
  b.num_layers = m.num_layers;
  // Narayanan et al. SC'21 §5.1: QKV transformation 6Bsh^2 and attention output 2Bsh^2 for MHA;
  // with GQA the K and V projections shrink to h x kv_width (and Q and O are h x heads x
  // head_dim where the model gives its head width). MLA: its projection matrices.
  b.attention_projections_per_layer =
      m.mla ? kFlopsPerMac * mla_matrices(m)
            : kFlopsPerMac * (2 * h * q_width(m) + 2 * h * kv_width(m));
  // Q K^T: 2Bs^2h and attention over values: 2Bs^2h (SC'21 §5.1), i.e. 4 s h per token. Every
  // query head attends over s keys, so GQA does not change this (heads x head_dim = h; the
  // model's own head width where it gives one). MLA's scores use (qk_nope + qk_rope)-wide
  // query and key heads and its values v_head_dim-wide ones.
  b.attention_core_per_layer =
      m.mla ? kFlopsPerMac * s * m.num_heads * (m.mla->qk_head_dim() + m.mla->v_head_dim)
            : 2 * kFlopsPerMac * s * q_width(m);
  // FFN: 16Bsh^2 for a 4h GeLU MLP (SC'21 §5.1) = 2 GEMMs of 2 h f; SwiGLU has 3 such GEMMs.
  b.mlp_per_layer = ffn_matrices(m) * kFlopsPerMac * h * m.ffn_hidden;
  if (m.moe) {
    b.moe_layers = m.moe_layer_count();
    b.moe_mlp_per_layer = moe_mlp_flops(m);
  }
  // Logit layer: 2BshV (SC'21 §5.1).
  b.logits = kFlopsPerMac * h * m.vocab;
  b.mtp = mtp_flops(m, b);
  return b;
}

FlopsPerToken flops_per_token(const ModelSpec& m, int seq_len, Recompute recompute,
                              FlopConvention convention) {
  const ForwardFlopsBreakdown fwd = forward_flops_per_token(m, seq_len);
  const double l = m.num_layers;
  FlopsPerToken out;
  double layer_forward =
      0;  // forward FLOPs of all Transformer layers (what full recompute repeats)
  if (convention == FlopConvention::megatron) {
    out.forward = fwd.total();
    layer_forward = fwd.layers();
  } else {
    // PaLM App. B: 6N + 12 L H Q T per token; 2N + 4 L H Q T of it is the forward pass.
    // H Q (heads x head dimension) is the hidden size for most models; the attention core
    // term is the Megatron breakdown's, which takes the model's own head widths. N counts the
    // parameters a token passes through (ParameterCounts::palm_n).
    const ParameterCounts p = count_parameters(m);
    const double attention = fwd.attention_core_per_layer * l;  // 4 l h s
    out.forward = kFlopsPerMac * p.palm_n() + attention;
    layer_forward = kFlopsPerMac * p.active_layers() + attention;
  }
  out.backward = kBackwardOverForward * out.forward;
  switch (recompute) {
    case Recompute::none: out.recompute = 0; break;
    // Korthikanti et al. 2022 §4.1/§5: full recomputation re-runs each layer's forward pass
    // (SC'21 eq. 3 counts it: 4x instead of 3x the forward GEMMs; the logit layer is not
    // recomputed, hence V/(16lh) instead of V/(12lh)).
    case Recompute::full: out.recompute = layer_forward; break;
    // Selective recomputation re-runs only the attention core (Q K^T, softmax, dropout,
    // attention over V; Korthikanti et al. §4.2): 4 s h per token and layer. Korthikanti et al.
    // write HFU with 72 B L s h^2 (1 + s/(3h) + ...), which counts 12 B s^2 h L more than model
    // FLOPs (three times this forward work); we count the forward work that actually runs.
    case Recompute::selective: out.recompute = fwd.attention_core_per_layer * l; break;
    // Op-level checkpointing re-runs the matmuls it dropped; attention's output is kept.
    case Recompute::selective_op:
      out.recompute = op_checkpoint_recompute_flops_per_token(m) * l;
      break;
  }
  return out;
}

StepFlops flops_per_step(const Scenario& s, FlopConvention convention) {
  StepFlops out;
  out.per_token = flops_per_token(s.model, s.training.seq_len, s.training.recompute, convention);
  // Full recomputation of only some layers (training.recompute_layers): the recomputed forward
  // work is proportional to the layers recomputed.
  if (s.training.recompute == Recompute::full && s.model.num_layers > 0) {
    out.per_token.recompute *=
        static_cast<double>(recomputed_layers(s)) / static_cast<double>(s.model.num_layers);
  }
  // Recompute modules (training.recompute_modules): the MLA up-projection GEMMs run again in
  // every layer's backward, the multi-token prediction modules' included (DeepSeek-V3 §3.2.3:
  // "all RMSNorm operations and MLA up-projections"); norms and activations add no GEMM FLOPs.
  out.per_token.recompute +=
      module_recompute_flops_per_token(s.model, activation_options(s.training)) *
      (s.model.num_layers + s.model.mtp_layers);
  // The "mlp" module: each dense layer's MLP GEMMs run again; "shared_experts": each MoE
  // layer's shared-expert GEMMs. An MTP module's layer is of the kind of the model's last.
  const ModelSpec& m = s.model;
  const bool last_moe = m.is_moe_layer(m.num_layers - 1);
  const double moe_layers = m.moe_layer_count() + (last_moe ? m.mtp_layers : 0);
  const double dense_layers = m.num_layers + m.mtp_layers - moe_layers;
  if (s.training.recompute != Recompute::full) {
    if (s.training.recompute_mlp)
      out.per_token.recompute +=
          ffn_matrices(m) * kFlopsPerMac * m.hidden * m.ffn_hidden * dense_layers;
    if (s.training.recompute_shared_experts && m.moe)
      out.per_token.recompute +=
          ffn_matrices(m) * kFlopsPerMac * m.hidden * m.moe->shared_ffn_width() * moe_layers;
  }
  out.tokens = s.tokens_per_step();
  return out;
}

}  // namespace clustersim::models
