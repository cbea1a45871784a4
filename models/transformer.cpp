#include "models/transformer.hpp"

#include <algorithm>

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

// Weight matrices of the FFN: up and down for GeLU, gate, up and down for SwiGLU
// (Shazeer 2020, "GLU Variants Improve Transformer", eq. 6).
double ffn_matrices(const ModelSpec& m) {
  return m.ffn == FfnKind::swiglu ? 3.0 : 2.0;
}

// Parameters of one normalisation layer: LayerNorm has a gain and a bias, RMSNorm only a gain
// (Zhang & Sennrich 2019).
double norm_params(const ModelSpec& m) {
  return (m.norm == "rmsnorm" ? 1.0 : 2.0) * m.hidden;
}

}  // namespace

double ParameterCounts::palm_n() const {
  // PaLM's N is every parameter that takes part in a matrix multiply per token: the layers,
  // the final norm and the output projection; with tied embeddings the shared matrix is that
  // projection. Lookup tables (input tokens, learned positions) cost no FLOPs.
  const double head = lm_head > 0 ? lm_head : embedding;
  return layers() + final_norm + head;
}

ParameterCounts count_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double kv = kv_width(m);
  ParameterCounts p;
  p.num_layers = m.num_layers;
  p.embedding = static_cast<double>(m.vocab) * h;
  p.position_embedding = m.learned_position_embeddings ? static_cast<double>(m.max_seq_len) * h : 0;
  // Q and O are h x h; K and V are h x (kv_heads * head_dim) (Ainslie et al. 2023, GQA).
  p.attention_per_layer = 2 * h * h + 2 * h * kv;
  p.mlp_per_layer = ffn_matrices(m) * h * f;
  if (m.linear_biases) {
    p.attention_per_layer += h + 2 * kv + h;  // Q, K, V and O biases
    // One bias per FFN-in projection (f each) and one on the output (h).
    p.mlp_per_layer += (ffn_matrices(m) - 1) * f + h;
  }
  p.norms_per_layer = 2 * norm_params(m);
  p.final_norm = norm_params(m);
  p.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * h;
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
  return {static_cast<double>(m.hidden) / tp, kv_heads_per_rank * m.head_dim()};
}

}  // namespace

double layer_parameters_per_tp_rank(const ModelSpec& m, int tp) {
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

const char* to_string(FlopConvention c) {
  return c == FlopConvention::megatron ? "megatron" : "palm";
}

ForwardFlopsBreakdown forward_flops_per_token(const ModelSpec& m, int seq_len) {
  const double h = m.hidden;
  const double s = seq_len;
  ForwardFlopsBreakdown b;
  b.num_layers = m.num_layers;
  // Narayanan et al. SC'21 §5.1: QKV transformation 6Bsh^2 and attention output 2Bsh^2 for MHA;
  // with GQA the K and V projections shrink to h x kv_width.
  b.attention_projections_per_layer = kFlopsPerMac * (2 * h * h + 2 * h * kv_width(m));
  // Q K^T: 2Bs^2h and attention over values: 2Bs^2h (SC'21 §5.1), i.e. 4 s h per token. Every
  // query head attends over s keys, so GQA does not change this (heads x head_dim = h).
  b.attention_core_per_layer = 2 * kFlopsPerMac * s * h;
  // FFN: 16Bsh^2 for a 4h GeLU MLP (SC'21 §5.1) = 2 GEMMs of 2 h f; SwiGLU has 3 such GEMMs.
  b.mlp_per_layer = ffn_matrices(m) * kFlopsPerMac * h * m.ffn_hidden;
  // Logit layer: 2BshV (SC'21 §5.1).
  b.logits = kFlopsPerMac * h * m.vocab;
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
    layer_forward = fwd.per_layer() * l;
  } else {
    // PaLM App. B: 6N + 12 L H Q T per token; 2N + 4 L H Q T of it is the forward pass.
    // H Q (heads x head dimension) is the hidden size for every model here.
    const ParameterCounts p = count_parameters(m);
    const double attention = fwd.attention_core_per_layer * l;  // 4 l h s
    out.forward = kFlopsPerMac * p.palm_n() + attention;
    layer_forward = kFlopsPerMac * p.layers() + attention;
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
  out.tokens = s.tokens_per_step();
  return out;
}

}  // namespace clustersim::models
