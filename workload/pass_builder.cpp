#include "workload/pass_builder.hpp"

#include <algorithm>
#include <cmath>

#include "core/hybrid_ep.hpp"
#include "models/op_checkpoint.hpp"
#include "workload/host_dispatch.hpp"
#include "workload/kernel_traffic.hpp"

namespace clustersim::workload {

using namespace kernel_traffic;
using models::GemmShape;
using models::OpCost;

namespace {

void append(Segments& to, const Segments& more) {
  to.insert(to.end(), more.begin(), more.end());
}

OpCost sum(OpCost a, const OpCost& b) {
  a += b;
  return a;
}

}  // namespace

Dims dims_of(const Scenario& s) {
  const ModelSpec& m = s.model;
  Dims d;
  d.tp = s.parallelism.tp;
  d.cp = s.parallelism.cp;
  d.t = d.tp;
  d.b = static_cast<double>(s.training.micro_batch);
  d.S = s.training.seq_len;
  d.T = d.b * d.S / d.cp;
  d.sp = s.parallelism.sequence_parallel && d.tp > 1;
  d.Ts = d.sp ? d.T / d.t : d.T;
  d.h = m.hidden;
  d.hl = static_cast<double>(m.num_heads) / d.tp;
  // GQA with tp > kv_heads replicates the KV heads so that each rank keeps one.
  d.gl = std::max(1.0, static_cast<double>(m.num_kv_heads) / d.tp);
  d.d = m.head_dim();
  d.f = m.ffn_hidden;
  d.V = m.vocab;
  d.ffn = m.ffn;
  d.rope = !m.learned_position_embeddings;
  d.learned_pos = m.learned_position_embeddings;
  d.precision = s.training.precision;
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    d.moe = true;
    d.E = e.num_experts;
    d.k = e.experts_per_token;
    d.fe = e.expert_ffn_hidden;
    d.ep = s.parallelism.ep;
    d.et = s.parallelism.expert_tp();
    d.El = d.E / d.ep;
    d.fs = e.shared_ffn_width();
    d.rho = e.capacity_factor > 0 ? std::min(e.routing_imbalance, e.capacity_factor)
                                  : e.routing_imbalance;
    const int gpn = s.cluster.gpus_per_node;
    d.two_hop = s.training.moe_dispatcher == MoeDispatcher::deepep && d.et == 1 && d.ep > gpn &&
                d.ep % gpn == 0;
    if (d.two_hop) {
      // Each token picks k experts; with the experts spread evenly over N nodes and routing
      // uniform, the expected number of distinct nodes it reaches is M (1 - (1 - 1/M)^k) with
      // M = N. Group-limited routing (DeepSeek-V3 §2.1.2: at most 4 nodes per token) keeps a
      // token on groups_per_token of the expert groups, each spanning N / groups nodes.
      d.ep_nodes = d.ep / gpn;
      double m = d.ep_nodes;
      if (e.expert_groups > 0) {
        m = std::min(m, e.groups_per_token * std::max(1.0, d.ep_nodes / e.expert_groups));
      }
      d.token_nodes = m * (1 - std::pow(1 - 1 / m, d.k));
    }
    const auto rate = s.training.moe_dispatcher == MoeDispatcher::hybridep && d.ep > 1
                          ? hybrid_ep_rate(s.cluster.gpu, s.training.moe_comm_sms)
                          : std::nullopt;
    d.hybrid_ep = rate.has_value();
    if (d.hybrid_ep) {
      // Group-limited routing: a token's experts lie in groups_per_token of the expert groups,
      // on groups_per_token x ep / expert_groups GPUs (fewer GPUs than groups: ep at most).
      double reachable = d.ep;
      double candidates = d.E;
      if (e.expert_groups > 0 && e.groups_per_token < e.expert_groups) {
        candidates = d.E * e.groups_per_token / e.expert_groups;
        reachable =
            std::min(reachable, e.groups_per_token * std::max(1.0, reachable / e.expert_groups));
      }
      d.token_ranks = ranks_per_token(reachable, candidates / reachable, d.k);
      d.hybrid_dispatch_Bps = rate->dispatch_Bps;
      d.hybrid_combine_Bps = rate->combine_Bps;
    }
  }
  if (m.mla) {
    d.mla = true;
    d.q_lora = m.mla->q_lora_rank;
    d.kv_lora = m.mla->kv_lora_rank;
    d.d_nope = m.mla->qk_nope_head_dim;
    d.d_rope = m.mla->qk_rope_head_dim;
    d.d_v = m.mla->v_head_dim;
  }
  return d;
}

double pipeline_message_bytes(const Dims& d, bool scatter_gather) {
  return d.T * d.h * kActivationBytes / (d.sp || scatter_gather ? d.t : 1.0);
}

int PassBuilder::message_gather() {
  if (d_.tp == 1 || d_.sp || !s_.parallelism.pipeline_scatter_gather) return -1;
  return coll(CollKind::all_gather, Group::tp, d_.T * d_.h, "pipeline message all-gather")
      .collective;
}

OpCost total(const Segments& segments) {
  OpCost c;
  for (const auto& s : segments) {
    if (!s.is_collective) c += s.cost;
  }
  return c;
}

PassBuilder::PassBuilder(const Scenario& s, const models::ComputeCostModel& c)
    : s_(s), c_(c), d_(dims_of(s)) {}

int PassBuilder::collective(CollKind kind, Group group, double bytes, Dtype dtype,
                            const std::string& label, double measured_Bps) {
  const auto key = std::make_tuple(kind, group, bytes, dtype, measured_Bps);
  const auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const int id = static_cast<int>(collectives_.size());
  collectives_.push_back({kind, group, bytes, dtype, label, measured_Bps});
  index_.emplace(key, id);
  return id;
}

StepPasses PassBuilder::step_passes() {
  const bool split = splits_backward(s_.parallelism.schedule);
  StepPasses p;
  p.layer_forward = layer_forward();
  p.layer_backward = layer_backward();
  p.embedding_forward = embedding_forward();
  p.embedding_backward = embedding_backward();
  p.head_forward = head_forward();
  p.head_backward = head_backward();
  if (split) {
    p.layer_input_grad = layer_backward(BackwardPart::input_grad);
    p.layer_weight_grad = layer_weight_grad();
    p.head_input_grad = head_backward(BackwardPart::input_grad);
    p.head_weight_grad = head_weight_grad();
  }
  for (int i = 0; i < s_.model.mtp_layers; ++i) {
    // Multi-token prediction (DeepSeek-V3 §2.2): after the main head, each module runs on the
    // last stage; its backward comes before the main head's.
    append(p.head_forward, mtp_forward());
    for (Segments* head : {&p.head_backward, &p.head_input_grad}) {
      if (head->empty()) continue;
      Segments b = mtp_backward();
      append(b, *head);
      *head = std::move(b);
    }
  }
  if (d_.moe) {
    p.moe_layer_forward = moe_layer_forward();
    p.moe_layer_backward = moe_layer_backward();
    if (split) {
      p.moe_layer_input_grad = moe_layer_backward(BackwardPart::input_grad);
      p.moe_layer_weight_grad = moe_layer_weight_grad();
    }
  }
  wait_for_host(p, c_.host_per_kernel_s());
  return p;
}

// With sequence parallelism, the all-gather of the sequence-split activations that starts a
// tensor-parallel block (Korthikanti et al. 2022 §4.2.2); the compute before it is flushed.
// With tp_comm_overlap it is pipelined with the GEMM that consumes it, `next_gemm`.
// `dtype`: of the gathered elements (a column-parallel linear's input: gathered_input_dtype();
// an output gradient in the backward: gathered_gradient_dtype()).
void PassBuilder::sequence_all_gather(Segments& out, OpCost& c, const OpCost& next_gemm,
                                      Dtype dtype) {
  if (!d_.sp) return;
  flush(out, c);
  out.push_back(
      coll(CollKind::all_gather, Group::tp, d_.T * d_.h, "layer sequence all-gather", dtype));
  if (s_.training.tp_comm_overlap) out.back().overlap_s = next_gemm.time_s;
}

Segments PassBuilder::layer_forward(bool moe) {
  Segments out;
  OpCost c;
  attention_block_forward(out, c);
  if (moe) {
    moe_block_forward(out, c);
  } else {
    mlp_block_forward(out, c);
  }
  c += residual();
  flush(out, c);
  return out;
}

// Norm, [SP all-gather], QKV, rope, [CP KV gather], attention, out-proj, all-reduce (or SP
// reduce-scatter), residual.
void PassBuilder::attention_block_forward(Segments& out, OpCost& c) {
  const Dims& d = d_;
  c += norm(PassKind::forward, d.Ts * d.h);
  sequence_all_gather(out, c, forward_gemm(attention_in_first_gemm()), gathered_input_dtype());
  c += attention_in_forward();
  c += rope(PassKind::forward);
  c += repeat_kv();
  context_attention_forward(out, c);
  c += attention_output_copy();
  c += linear_forward(out_proj());
  const OpCost proj_margin = sm_margin(out_proj(), s_.training.tp_overlap_proj_fprop_sms);
  c += proj_margin;
  tp_reduce(out, c, "layer", sum(forward_gemm(out_proj()), proj_margin));
  c += residual();
}

// Norm, [AG], FFN, all-reduce/RS (the residual after it is the layer's).
void PassBuilder::mlp_block_forward(Segments& out, OpCost& c) {
  const Dims& d = d_;
  c += norm(PassKind::forward, d.Ts * d.h);
  sequence_all_gather(out, c, forward_gemm(ffn_in()), gathered_input_dtype());
  c += linear_forward(ffn_in(), true, true);
  c += ffn_activation(PassKind::forward);
  c += linear_forward(ffn_out());
  const OpCost fc2_margin = sm_margin(ffn_out(), s_.training.tp_overlap_fc2_fprop_sms);
  c += fc2_margin;
  tp_reduce(out, c, "layer", sum(forward_gemm(ffn_out()), fc2_margin));
}

Segments PassBuilder::layer_backward(bool moe, BackwardPart part) {
  Segments out;
  OpCost c;
  c += residual();
  c += module_recompute(moe);
  c += op_checkpoint_recompute();
  // recompute_modules "mlp": a dense layer's MLP forward again, its collectives included
  // (Megatron-Core checkpoints the whole self.mlp).
  if (!moe && s_.training.recompute_mlp) mlp_block_forward(out, c);
  // "shared_experts": an MoE layer's shared experts forward again, with their collectives.
  if (moe && s_.training.recompute_shared_experts) shared_experts_forward(out, c);
  if (moe) {
    moe_block_backward(out, c, part);
  } else {
    mlp_block_backward(out, c, part);
  }
  attention_block_backward(out, c, part);
  flush(out, c);
  return out;
}

// The conjugate operators (Korthikanti et al. 2022 Fig. 5): all-reduce of the input gradient
// after each column-parallel block; with SP, all-gather before each block and reduce-scatter
// after it.
void PassBuilder::mlp_block_backward(Segments& out, OpCost& c, BackwardPart part) {
  const Dims& d = d_;
  sequence_all_gather(out, c, dgrad_gemm(ffn_out()), gathered_gradient_dtype());
  c += gemm_backward(ffn_out(), part, fp8_gradient_gathered());
  c += ffn_activation(PassKind::backward);
  const bool async = async_backward(part);
  if (async) input_regather(out, c, dgrad_gemm(ffn_in()).time_s);
  c += gemm_backward(ffn_in(), part);
  tp_reduce(out, c, "layer",
            input_gradient_gemm(dgrad_gemm(ffn_in()), s_.model.ffn == FfnKind::swiglu));
  if (async) beside(out.back(), wgrad_gemm(ffn_in()).time_s);
  c += norm(PassKind::backward, d.Ts * d.h);
}

void PassBuilder::attention_block_backward(Segments& out, OpCost& c, BackwardPart part) {
  const Dims& d = d_;
  c += residual();
  sequence_all_gather(out, c, dgrad_gemm(out_proj()), gathered_gradient_dtype());
  c += gemm_backward(out_proj(), part, fp8_gradient_gathered());
  c += selective_recompute();
  context_attention_backward(out, c);
  c += repeat_kv();
  c += rope(PassKind::backward);
  const bool async = async_backward(part) && !d.mla;
  if (async) input_regather(out, c, dgrad_gemm(qkv()).time_s);
  c += attention_in_backward(part);
  tp_reduce(out, c, "layer", input_gradient_gemm(dgrad_gemm(attention_in_first_gemm()), true));
  if (async) beside(out.back(), wgrad_gemm(qkv()).time_s);
  c += norm(PassKind::backward, d.Ts * d.h);
}

// The GEMM a block's input-gradient reduce-scatter is pipelined with under tp_comm_overlap:
// the input-gradient GEMM `dgrad`, or none where PyTorch's micro-pipelined TP runs it alone. Its
// pass fuses a reduce-scatter only with the one matmul whose output it reduces
// (torch/_inductor/fx_passes/micro_pipeline_tp.py: the reduce-scatter's input must be an mm or
// _scaled_mm, possibly reshaped); where the block input fed `several_projections` (Q, K and V as
// separate linears, a gated MLP's gate and up, as in torchtitan's Llama) the input gradient is
// their sum.
OpCost PassBuilder::input_gradient_gemm(const OpCost& dgrad, bool several_projections) const {
  if (several_projections &&
      s_.training.tp_comm_overlap_implementation == TpOverlapImplementation::torch) {
    return {};
  }
  return dgrad;
}

// tp_async_backward, where the weight gradients are in this pass and userbuffers are off: a
// column-parallel linear's backward launches its TP collectives beside its GEMMs (Megatron-LM
// megatron/mpu/layers.py LinearWithGradAccumulationAndAsyncCommunication from cf7efd4f, 2021-08;
// Transformer Engine module/linear.py and layernorm_linear.py, v1.7 to 2.9). MLA's projections
// are left as they were.
bool PassBuilder::async_backward(BackwardPart part) const {
  return s_.training.tp_async_backward && !s_.training.tp_comm_overlap && d_.tp > 1 &&
         part == BackwardPart::whole;
}

// With sequence parallelism the forward keeps a column-parallel linear's input split: its
// backward all-gathers it again for the weight gradient, beside the input-gradient GEMM
// (`dgrad_s`), before that GEMM's output is reduced (Korthikanti et al. 2022 §4.2.2).
void PassBuilder::input_regather(Segments& out, OpCost& c, double dgrad_s) {
  if (!d_.sp) return;
  flush(out, c);
  out.push_back(coll(CollKind::all_gather, Group::tp, d_.T * d_.h, "layer input re-gather",
                     gathered_input_dtype()));
  beside(out.back(), dgrad_s);
}

void PassBuilder::beside(Segment& collective, double gemm_s) {
  collective.overlap_s = gemm_s;
  collective.beside = true;
}

Segments PassBuilder::layer_weight_grad(bool moe) {
  OpCost c;
  if (moe) {
    c += moe_weight_grad();
  } else {
    for (const GemmShape& g : {ffn_out(), ffn_in()}) c += wgrad_gemm(g);
  }
  c += wgrad_gemm(out_proj());
  for (const GemmShape& g : attention_in_gemms()) c += wgrad_gemm(g);
  Segments out;
  flush(out, c);
  return out;
}

Segments PassBuilder::embedding_forward() {
  const Dims& d = d_;
  Segments out;
  OpCost c = mem(kEmbeddingForwardPasses * d.T * d.h * (d.learned_pos ? 2 : 1));
  tp_reduce(out, c, "embedding");
  flush(out, c);
  return out;
}

Segments PassBuilder::embedding_backward() {
  const Dims& d = d_;
  Segments out;
  if (d.sp) out.push_back(coll(CollKind::all_gather, Group::tp, d.T * d.h, "embedding all-gather"));
  OpCost c = mem(kEmbeddingBackwardPasses * d.T * d.h * (d.learned_pos ? 2 : 1));
  flush(out, c);
  return out;
}

Segments PassBuilder::head_forward() {
  const Dims& d = d_;
  Segments out;
  OpCost c = norm(PassKind::forward, d.Ts * d.h, false);
  if (d.sp) {
    flush(out, c);
    out.push_back(coll(CollKind::all_gather, Group::tp, d.T * d.h, "head sequence all-gather"));
  }
  c += c_.gemm(logits(), head_dtype());
  c += cross_entropy(PassKind::forward);
  flush(out, c);
  if (d.tp > 1) {
    const int id = collective(CollKind::all_reduce, Group::tp, d.T * kLogitBytes, Dtype::fp32,
                              "cross-entropy all-reduce");
    for (int i = 0; i < kCrossEntropyAllReduces; ++i) out.push_back(Segment{true, {}, id});
  }
  return out;
}

Segments PassBuilder::head_backward(BackwardPart part) {
  const Dims& d = d_;
  Segments out;
  OpCost c = cross_entropy(PassKind::backward);
  c += c_.gemm(dgrad(logits()), head_dtype());
  if (part == BackwardPart::whole) c += c_.gemm(wgrad(logits()), head_dtype());
  if (d.tp > 1) {
    flush(out, c);
    out.push_back(coll(d.sp ? CollKind::reduce_scatter : CollKind::all_reduce, Group::tp, d.T * d.h,
                       "head input-gradient reduction"));
  }
  c += norm(PassKind::backward, d.Ts * d.h, false);
  flush(out, c);
  return out;
}

// One multi-token prediction module (DeepSeek-V3 §2.2, Fig. 3): RMSNorm of the main model's
// last hidden state and of the next tokens' embeddings (the shared table), their concatenation
// projected 2h -> h, one Transformer layer (an MoE layer in an MoE model, as the published
// checkpoint's layer 61), and the shared output head with its cross entropy.
Segments PassBuilder::mtp_forward() {
  const Dims& d = d_;
  Segments out;
  OpCost c = mem(kEmbeddingForwardPasses * d.T * d.h);
  c += mem(2 * kNormForwardPasses * d.Ts * d.h);
  c += linear_forward({d.Ts, d.h, 2 * d.h});
  flush(out, c);
  append(out, layer_forward(mtp_moe()));
  append(out, head_forward());
  return out;
}

Segments PassBuilder::mtp_backward() {
  const Dims& d = d_;
  Segments out = head_backward(BackwardPart::whole);
  append(out, layer_backward(mtp_moe(), BackwardPart::whole));
  OpCost c = gemm_backward({d.Ts, d.h, 2 * d.h}, BackwardPart::whole);
  c += mem(2 * kNormBackwardPasses * d.Ts * d.h);
  c += mem(kEmbeddingBackwardPasses * d.T * d.h);
  flush(out, c);
  return out;
}

Segments PassBuilder::head_weight_grad() {
  OpCost c = c_.gemm(wgrad(logits()), head_dtype());
  Segments out;
  flush(out, c);
  return out;
}

OpCost PassBuilder::attention_forward() const {
  if (s_.training.attention == AttentionKernel::unfused) return unfused_attention_forward();
  const Dims& d = d_;
  if (d.mla) {
    // MLA: Q K^T over the query/key head width (nope + rope parts), P V over the value width;
    // keys and values are expanded per head for training (DeepSeek-V2 §2.1.2).
    const double dqk = d.d_nope + d.d_rope;
    const double flops = 2.0 * d.b * (d.S / d.cp) * d.S * d.hl * (dqk + d.d_v) * kCausalFraction;
    const double bytes = (d.T + d.b * d.S) * d.hl * (dqk + d.d_v) * kActivationBytes;
    return c_.attention(flops, bytes, d.precision, attention_kernel_seq_len());
  }
  // Q K^T and P V: 2 x 2 b (S/cp) S d FLOPs per query head (Narayanan et al. 2021 section 5.1).
  const double flops = 4.0 * d.b * (d.S / d.cp) * d.S * d.hl * d.d * kCausalFraction;
  const double bytes =
      (2 * d.T * d.hl * d.d + 2 * d.b * d.S * attention_kv_heads() * d.d) * kActivationBytes;
  return c_.attention(flops, bytes, d.precision, attention_kernel_seq_len());
}

OpCost PassBuilder::attention_backward() const {
  if (s_.training.attention == AttentionKernel::unfused) return unfused_attention_backward();
  const OpCost f = attention_forward();
  return c_.attention_backward(f.flops * kAttentionBackwardOverForward, 2 * f.bytes, d_.precision,
                               attention_kernel_seq_len());
}

OpCost PassBuilder::op_checkpoint_recompute() const {
  if (s_.training.recompute != Recompute::selective_op) return {};
  const Dims& d = d_;
  OpCost c = norm(PassKind::forward, d.Ts * d.h);
  c += norm(PassKind::forward, d.Ts * d.h);
  c += rope(PassKind::forward);
  c += repeat_kv();
  c += attention_output_copy();
  c += ffn_activation(PassKind::forward);
  c += residual(2);
  for (const models::LayerMatmul mm : models::op_checkpoint_recomputed(s_.model)) {
    const double in = models::matmul_in_width(s_.model, mm);
    const double out = models::matmul_out_width(s_.model, mm);
    c += linear_forward(models::column_parallel(mm) ? GemmShape{d.T, out / d.t, in}
                                                    : GemmShape{d.T, out, in / d.t});
  }
  return c;
}

OpCost PassBuilder::selective_recompute() const {
  if (s_.training.recompute != Recompute::selective || fused(s_.training.attention)) {
    return {};
  }
  return scores_forward();
}

// One query head's Q K^T over the local queries and all keys: [Sq x d] x [d x S].
GemmShape PassBuilder::scores_gemm() const {
  return {d_.T / d_.b, d_.S, d_.d};
}

// Unfused: Q K^T, then softmax and attention dropout over the score tensor.
OpCost PassBuilder::scores_forward() const {
  OpCost c = c_.batched_gemm(scores_gemm(), d_.precision, score_batch());
  const double dropout = s_.training.dropout ? kAttentionDropoutForwardBytes : 0.0;
  c += c_.memory_op((kSoftmaxForwardBytes + dropout) * score_elements());
  return c;
}

OpCost PassBuilder::unfused_attention_forward() const {
  const GemmShape qk = scores_gemm();
  OpCost c = scores_forward();
  c += c_.batched_gemm({qk.m, qk.k, qk.n}, d_.precision, score_batch());  // P [Sq x S] V
  return c;
}

OpCost PassBuilder::unfused_attention_backward() const {
  const GemmShape qk = scores_gemm();
  const double batch = score_batch();
  OpCost c = c_.batched_gemm(qk, d_.precision, batch);            // dP = dO V^T
  c += c_.batched_gemm({qk.n, qk.k, qk.m}, d_.precision, batch);  // dV = P^T dO
  const double dropout = s_.training.dropout ? kAttentionDropoutBackwardBytes : 0.0;
  c += c_.memory_op((dropout + kSoftmaxBackwardBytes) * score_elements());
  c += c_.batched_gemm({qk.m, qk.k, qk.n}, d_.precision, batch);  // dQ = dS K
  c += c_.batched_gemm({qk.n, qk.k, qk.m}, d_.precision, batch);  // dK = dS^T Q
  return c;
}

GemmShape PassBuilder::qkv() const {
  return {d_.T, (d_.hl + 2 * d_.gl) * d_.d, d_.h};
}
GemmShape PassBuilder::out_proj() const {
  return {d_.T, d_.h, d_.hl * (d_.mla ? d_.d_v : d_.d)};
}
GemmShape PassBuilder::ffn_in() const {
  return {d_.T, ffn_in_matrices() * d_.f / d_.t, d_.h};
}
GemmShape PassBuilder::ffn_out() const {
  return {d_.T, d_.h, d_.f / d_.t};
}
GemmShape PassBuilder::logits() const {
  return {d_.T, d_.V / d_.t, d_.h};
}

OpCost PassBuilder::mem(double elements) const {
  return c_.memory_op(elements * kActivationBytes);
}

// mem() for an element-wise op inside a Transformer block: PyTorch's own kernel when the block
// runs eagerly (KernelSource::pytorch), a framework's or torch.compile's otherwise.
OpCost PassBuilder::block_mem(double elements) const {
  const double bytes = elements * kActivationBytes;
  return eager(true) ? c_.pytorch_op(bytes) : c_.memory_op(bytes);
}

// A linear layer's forward GEMM [m x k] x [k x n], after the FP8 cast of its m x k input
// (`after_norm`: the input is a Transformer Engine norm's output).
OpCost PassBuilder::linear_forward(const GemmShape& g, bool after_norm, bool gathered) const {
  OpCost c = fp8_cast(g.m * g.k, after_norm, gathered);
  c += forward_gemm(g);
  return c;
}

// dgrad and (unless only the input gradient is built) wgrad, after the FP8 cast of the m x n
// output gradient, which both use.
OpCost PassBuilder::gemm_backward(const GemmShape& g, BackwardPart part, bool gathered) const {
  OpCost c = fp8_cast(g.m * g.n, false, gathered);
  c += dgrad_gemm(g);
  if (part == BackwardPart::whole) c += wgrad_gemm(g);
  return c;
}

// The output layer is Megatron-Core's own ColumnParallelLinear, outside Transformer Engine's
// FP8 modules (megatron/core/models/gpt/gpt_model.py output_layer): BF16 under FP8 recipes.
Dtype PassBuilder::head_dtype() const {
  return d_.precision == Dtype::fp8 ? Dtype::bf16 : d_.precision;
}

// The copy repeat_kv makes (and its backward's sum): K and V, grouped heads in, repeated out.
bool PassBuilder::eager(bool in_block) const {
  const KernelFusion f = s_.training.kernel_fusion;
  return f == KernelFusion::eager || (f == KernelFusion::compiled_blocks && !in_block);
}

OpCost PassBuilder::norm(PassKind pass, double elements, bool in_block) const {
  const bool fwd = pass == PassKind::forward;
  if (!eager(in_block)) return mem((fwd ? kNormForwardPasses : kNormBackwardPasses) * elements);
  OpCost c = fwd ? eager_kernels(c_, kEagerRmsNormForward, elements)
                 : eager_kernels(c_, kEagerRmsNormBackward, elements);
  c += c_.launches(kEagerRmsNormRowKernels);
  return c;
}

OpCost PassBuilder::rope(PassKind pass) const {
  const Dims& d = d_;
  if (!d.rope) return {};
  if (!eager(true)) return mem(kRopePasses * d.T * rope_heads() * rope_dim());
  const auto& bytes = pass == PassKind::forward ? kEagerRopeForward : kEagerRopeBackward;
  OpCost c = eager_kernels(c_, bytes, d.T * d.hl * d.d);  // Q
  c += eager_kernels(c_, bytes, d.T * d.gl * d.d);        // K
  return c;
}

OpCost PassBuilder::ffn_activation(PassKind pass) const {
  const Dims& d = d_;
  const double elements = d.T * d.f / d.t;
  // NeMo's squared ReLU is PyTorch's own relu and pow (kSquaredRelu*Passes): no fused kernel.
  if (d.ffn == FfnKind::squared_relu) {
    return c_.pytorch_op(activation_passes(d.ffn, pass) * elements * kActivationBytes);
  }
  if (!eager(true)) return mem(activation_passes(d.ffn, pass) * elements);
  return pass == PassKind::forward ? eager_kernels(c_, kEagerSwigluForward, elements)
                                   : eager_kernels(c_, kEagerSwigluBackward, elements);
}

OpCost PassBuilder::attention_output_copy() const {
  if (!eager(true)) return {};
  return c_.pytorch_op(kEagerAttentionOutputCopyBytes * d_.T * d_.hl * d_.d);
}

OpCost PassBuilder::cross_entropy(PassKind pass) const {
  const double logits = d_.T * d_.V / d_.t;
  const bool fwd = pass == PassKind::forward;
  if (!eager(false) && s_.training.cross_entropy == CrossEntropy::unfused) {
    OpCost c = fwd ? eager_kernels(c_, kUnfusedCrossEntropyForward, logits)
                   : eager_kernels(c_, kUnfusedCrossEntropyBackward, logits);
    c += c_.launches(fwd ? kUnfusedCrossEntropyTokenKernelsForward
                         : kUnfusedCrossEntropyTokenKernelsBackward);
    return c;
  }
  if (!eager(false)) {
    return c_.memory_op(
        (fwd ? kCrossEntropyForwardBytesPerLogit : kCrossEntropyBackwardBytesPerLogit) * logits);
  }
  return fwd ? eager_kernels(c_, kEagerCrossEntropyForward, logits)
             : eager_kernels(c_, kEagerCrossEntropyBackward, logits);
}

OpCost PassBuilder::repeat_kv() const {
  if (!s_.training.repeat_kv || d_.mla || d_.hl <= d_.gl) return {};
  return block_mem(kRepeatKvPasses * 2 * d_.T * (d_.gl + d_.hl) * d_.d);
}

// The residual additions (`count` of them): PyTorch's add in eager code, a framework's fused
// bias-dropout-add or compiled kernel otherwise.
OpCost PassBuilder::residual(double count) const {
  return block_mem(count * kResidualPasses * d_.Ts * d_.h);
}

Segment PassBuilder::coll(CollKind kind, Group group, double elements, const std::string& label,
                          Dtype dtype) {
  return Segment{
      true, {}, collective(kind, group, elements * bytes_per_element(dtype), dtype, label)};
}

// The reduction after a row-parallel block: all-reduce, or reduce-scatter with SP.
// With tp_comm_overlap the reduce-scatter is pipelined with the GEMM that produced its
// input, `prev_gemm`.
void PassBuilder::tp_reduce(Segments& out, OpCost& c, const std::string& what,
                            const OpCost& prev_gemm) {
  if (d_.tp == 1) return;
  flush(out, c);
  out.push_back(coll(d_.sp ? CollKind::reduce_scatter : CollKind::all_reduce, Group::tp,
                     d_.T * d_.h, what + (d_.sp ? " reduce-scatter" : " all-reduce")));
  if (s_.training.tp_comm_overlap) out.back().overlap_s = prev_gemm.time_s;
}

// With TP overlap, a forward row-parallel GEMM whose reduce-scatter takes `sms` SMs with
// set_sm_margin runs on the others (Transformer Engine userbuffers): the time it loses,
// compute time x sms / (sm_count - sms). The loader keeps sms below sm_count.
OpCost PassBuilder::sm_margin(const GemmShape& g, int sms) const {
  if (!s_.training.tp_comm_overlap || sms <= 0 || d_.tp == 1) return {};
  const OpCost gemm = forward_gemm(g);
  const double sm = s_.cluster.gpu.sm_count;
  OpCost extra;
  extra.compute_s = gemm.compute_s * sms / (sm - sms);
  extra.time_s = std::max(gemm.compute_s + extra.compute_s, gemm.memory_s) -
                 std::max(gemm.compute_s, gemm.memory_s);
  return extra;
}

// The GEMM part of a linear layer (the one a pipelined TP collective overlaps), with the
// rearrangement of its operands' MXFP8 scales.
OpCost PassBuilder::forward_gemm(const GemmShape& g) const {
  return linear_gemm(g);
}
OpCost PassBuilder::dgrad_gemm(const GemmShape& g) const {
  return linear_gemm(dgrad(g));
}

// The elements of a row-parallel linear's output gradient as the backward all-gathers them:
// FP8 under FP8 training with training.fp8_gradient_gather (Transformer Engine's
// grad_output_preprocess casts, then gathers), else BF16.
Dtype PassBuilder::gathered_gradient_dtype() const {
  return d_.precision == Dtype::fp8 && s_.training.fp8_gradient_gather ? Dtype::fp8 : Dtype::bf16;
}

// The elements of a column-parallel linear's sequence-parallel input as they are all-gathered:
// FP8 under FP8 training. Transformer Engine quantizes the norm's output (LayerNormLinear,
// LayerNormMLP) or the input (Linear) before gather_along_first_dim and keeps the FP8 copy for
// the backward's re-gather (v1.8; v2.9 gathers with the input quantizer, delayed or current
// scaling); torchtitan (9dec370) casts it with torchao's PrepareFloat8ModuleInput before the
// redistribute.
Dtype PassBuilder::gathered_input_dtype() const {
  return d_.precision == Dtype::fp8 ? Dtype::fp8 : Dtype::bf16;
}

OpCost PassBuilder::wgrad_gemm(const GemmShape& g) const {
  return linear_gemm(wgrad(g));
}

// The first GEMM of the attention input projections (what an SP all-gather overlaps).
GemmShape PassBuilder::attention_in_first_gemm() const {
  const Dims& d = d_;
  if (!d.mla) return qkv();
  if (d.q_lora > 0) return {d.T, d.q_lora, d.h};
  return {d.T, d.hl * (d.d_nope + d.d_rope), d.h};
}

// MLA (DeepSeek-V2 §2.1; Megatron-Core multi_latent_attention.py): the down projections to the
// query and key/value latents (the latter with the shared RoPE key part) are replicated over
// TP; RMSNorm on each latent; the up projections are column-parallel over the heads.
OpCost PassBuilder::attention_in_forward() const {
  const Dims& d = d_;
  if (!d.mla) return linear_forward(qkv(), true, true);
  OpCost c;
  const double dqk = d.d_nope + d.d_rope;
  if (d.q_lora > 0) {
    c += linear_forward({d.T, d.q_lora, d.h});
    c += mem(kNormForwardPasses * d.T * d.q_lora);
    c += linear_forward({d.T, d.hl * dqk, d.q_lora});
  } else {
    c += linear_forward({d.T, d.hl * dqk, d.h});
  }
  c += linear_forward({d.T, d.kv_lora + d.d_rope, d.h});
  c += mem(kNormForwardPasses * d.T * d.kv_lora);
  c += linear_forward({d.T, d.hl * (d.d_nope + d.d_v), d.kv_lora});
  return c;
}

OpCost PassBuilder::attention_in_backward(BackwardPart part) const {
  const Dims& d = d_;
  OpCost c;
  for (const GemmShape& g : attention_in_gemms()) c += gemm_backward(g, part);
  if (d.mla) c += mem(kNormBackwardPasses * d.T * d.kv_lora);
  if (d.q_lora > 0) c += mem(kNormBackwardPasses * d.T * d.q_lora);
  return c;
}

// In backward order: QKV; or MLA's KV up-projection, KV down-projection (with the decoupled
// RoPE key), then the query's up- and down-projections (or its one projection without q_lora).
std::vector<GemmShape> PassBuilder::attention_in_gemms() const {
  const Dims& d = d_;
  if (!d.mla) return {qkv()};
  const double dqk = d.d_nope + d.d_rope;
  std::vector<GemmShape> out = {{d.T, d.hl * (d.d_nope + d.d_v), d.kv_lora},
                                {d.T, d.kv_lora + d.d_rope, d.h}};
  if (d.q_lora > 0) {
    out.push_back({d.T, d.hl * dqk, d.q_lora});
    out.push_back({d.T, d.q_lora, d.h});
  } else {
    out.push_back({d.T, d.hl * dqk, d.h});
  }
  return out;
}

}  // namespace clustersim::workload
