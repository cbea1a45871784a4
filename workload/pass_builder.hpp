// The kernels and blocking TP/CP collectives of each pass that repeats in a training step: a
// Transformer layer's forward and backward, the embedding's and the LM head's, as runs of
// kernels ("segments") between collectives. Costed once per workload; the stage programs
// replay them for every micro-batch (workload/stage_program.hpp).
//
// Sources: Shoeybi et al. 2019 (Megatron-LM, section 3) for the layer's kernels and TP
// collectives; Korthikanti et al. 2022 (section 4.2.2 and Fig. 5) for sequence parallelism's
// all-gather / reduce-scatter pairs; the kernels' constants in kernel_traffic.hpp cite their own.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "workload/workload.hpp"

namespace clustersim::workload {

// The dimensions the kernels of one micro-batch on one GPU see.
struct Dims {
  double b = 1, S = 1, T = 1, Ts = 1;  // micro-batch, sequence, local tokens, SP-split tokens
  double h = 1, hl = 1, gl = 1, d = 1, f = 1, V = 1;  // hidden, local heads / KV heads, ...
  double t = 1;
  int tp = 1, cp = 1;
  bool sp = false, rope = true, learned_pos = false;
  FfnKind ffn = FfnKind::gelu;
  Dtype precision = Dtype::bf16;
  // Mixture of experts (MoE layers only): routed experts E, top-k, one expert's FFN width fe,
  // the experts on one GPU El = E / ep, the expert tensor-parallel size et, the width of all
  // shared experts together fs, and the routing imbalance rho (busiest expert / mean, capped by
  // the capacity factor when tokens are dropped).
  bool moe = false;
  double E = 0, k = 0, fe = 0, El = 0, fs = 0, rho = 1;
  int ep = 1, et = 1;
  // Multi-head latent attention (DeepSeek-V2/V3): latent widths and per-head dimensions.
  // DeepEP two-hop dispatch in use: the EP group spans `ep_nodes` nodes, and each token
  // crosses InfiniBand to `token_nodes` of them on average.
  bool two_hop = false;
  double ep_nodes = 1, token_nodes = 1;
  // HybridEP in use: each token reaches token_ranks GPUs of its EP group on average, and the
  // exchanges run at the measured rates (core/hybrid_ep.hpp).
  bool hybrid_ep = false;
  double token_ranks = 1, hybrid_dispatch_Bps = 0, hybrid_combine_Bps = 0;
  bool mla = false;
  double q_lora = 0, kv_lora = 0, d_nope = 0, d_rope = 0, d_v = 0;
};
Dims dims_of(const Scenario& s);

// Bytes of one pipeline message each TP rank sends: the b (S / cp) h activation of a
// micro-batch (or its gradient) in 16-bit, split over the TP ranks with sequence parallelism.
// With `scatter_gather` (parallelism.pipeline_scatter_gather) and no sequence parallelism, each TP
// rank sends 1/tp of the message.
double pipeline_message_bytes(const Dims& d, bool scatter_gather);

// A piece of a pass: a run of kernels, or a blocking TP/CP collective.
struct Segment {
  bool is_collective = false;
  models::OpCost cost;
  int collective = -1;   // index into Workload::collectives
  double overlap_s = 0;  // collective: the GEMM it is pipelined with (tp_comm_overlap)
  // collective: overlap_s is a GEMM run beside it as a whole (tp_async_backward), not
  // pipelined chunk by chunk
  bool beside = false;
  // Before this segment the host waits until the GPU has run every kernel issued so far (a
  // device-to-host read it needs): its lead over the GPU does not carry past this point
  // (workload/host_dispatch.hpp).
  bool host_sync = false;
};
using Segments = std::vector<Segment>;

// The kernels of all segments of a pass (collectives left out).
models::OpCost total(const Segments& segments);

// Which part of a backward pass to build: all of it, or the input gradient only (the zero-bubble
// schedules' B pass; the weight gradients are then a pass of their own, W).
enum class BackwardPart : unsigned char { whole, input_grad };

// The repeated passes of one step, each costed once. When the schedule splits backwards
// (splits_backward(schedule)), the *_input_grad passes are the input-gradient parts (B) and the
// *_weight_grad passes the weight-gradient GEMMs (W); otherwise they are empty.
struct StepPasses {
  Segments layer_forward, layer_backward, layer_input_grad, layer_weight_grad;
  Segments embedding_forward, embedding_backward;
  Segments head_forward, head_backward, head_input_grad, head_weight_grad;
  // Empty for a dense model.
  Segments moe_layer_forward, moe_layer_backward, moe_layer_input_grad, moe_layer_weight_grad;
};

// Builds the segments of the repeated passes and the table of distinct TP/CP collectives they
// use. Collective indices are given in the order the passes first use them.
class PassBuilder {
 public:
  PassBuilder(const Scenario& s, const models::ComputeCostModel& c);

  const Dims& dims() const { return d_; }
  const std::vector<Collective>& collectives() const { return collectives_; }
  // The index of a collective of this kind, group, size (bytes) and dtype, added if new.
  // measured_Bps > 0 times it at that measured rate (Collective::measured_Bps).
  int collective(CollKind kind, Group group, double bytes, Dtype dtype, const std::string& label,
                 double measured_Bps = 0);
  // The TP all-gather that rebuilds a received pipeline message sent in 1/tp pieces
  // (parallelism.pipeline_scatter_gather without sequence parallelism); -1 when there is none.
  int message_gather();

  // Every repeated pass, in the order layer forward, layer backward, embedding, head.
  StepPasses step_passes();

  // Layer forward: norm, [SP all-gather], QKV, rope, [CP KV gather], attention, out-proj,
  // all-reduce (or SP reduce-scatter), residual, norm, [AG], FFN, all-reduce/RS, residual.
  Segments layer_forward() { return layer_forward(false); }
  // Layer backward: the conjugate operators (Korthikanti et al. 2022 Fig. 5): all-reduce of the
  // input gradient after each column-parallel block; with SP, all-gather before each block and
  // reduce-scatter after it. BackwardPart::input_grad leaves out the weight-gradient GEMMs.
  Segments layer_backward(BackwardPart part = BackwardPart::whole) {
    return layer_backward(false, part);
  }
  // The weight-gradient GEMMs of a layer (X^T dY of each linear layer), one kernel run: the W
  // pass of the zero-bubble schedules (Qi et al. 2024 section 2: B and W each do the forward's
  // GEMM FLOPs, the attention core's backward stays in B). Every TP collective of the backward
  // stays in B (see step/README.md).
  Segments layer_weight_grad() { return layer_weight_grad(false); }
  // An MoE layer (Megatron-Core MoELayer with the all-to-all token dispatcher, Fedus et al.
  // 2022; DeepSeek-V3 §2.1.2): the same attention block, then router, token permutation,
  // dispatch all-to-all over the EP group, the local experts' FFNs as grouped GEMMs, combine
  // all-to-all, unpermutation, and the shared experts as a dense FFN. Split like the dense
  // layer: the weight gradients of the router, the experts' grouped GEMMs and the shared
  // experts go to W, the all-to-alls stay in B.
  Segments moe_layer_forward() { return layer_forward(true); }
  Segments moe_layer_backward(BackwardPart part = BackwardPart::whole) {
    return layer_backward(true, part);
  }
  Segments moe_layer_weight_grad() { return layer_weight_grad(true); }
  // Vocab-parallel embedding lookup (Megatron-LM VocabParallelEmbedding): each TP rank looks up
  // its vocabulary shard, then the partial rows are all-reduced (reduce-scattered with SP).
  Segments embedding_forward();
  Segments embedding_backward();
  // Final norm, logits (column-parallel over the vocabulary) and vocab-parallel cross entropy.
  Segments head_forward();
  // A multi-token prediction module (model.mtp_layers), appended to the head's passes.
  Segments mtp_forward();
  Segments mtp_backward();
  // An MTP module's layer is like the model's last (MoE in DeepSeek-V3).
  bool mtp_moe() const { return s_.model.is_moe_layer(s_.model.num_layers - 1); }
  Segments head_backward(BackwardPart part = BackwardPart::whole);
  // The logits' weight-gradient GEMM (the W pass of the LM head; the multi-token prediction
  // modules' backward stays whole in B).
  Segments head_weight_grad();

  models::OpCost attention_forward() const;
  models::OpCost attention_backward() const;
  // What selective recomputation adds to a layer's backward: nothing with FlashAttention (its
  // backward recomputes the scores anyway), the score GEMM, softmax and dropout when unfused
  // (Korthikanti et al. 2022 §5: the recomputed part is the attention core).
  models::OpCost selective_recompute() const;
  // What training.recompute_modules adds to a layer's backward (DeepSeek-V3 §3.2.3 and §3.3.3;
  // Megatron-Core's output-discarding checkpointing): the two pre-norms' forward kernels
  // (layernorm); MLA's latent norms, up-projection GEMMs and RoPE (mla_up_proj); the routed
  // experts' activation function in an MoE layer (moe_act).
  models::OpCost module_recompute(bool moe) const;
  // What op-level selective checkpointing (training.recompute "selective_op") re-runs before a
  // layer's backward: the forward's norms, RoPE, K/V repeat, MLP activation and residual adds
  // and the matmuls the policy dropped (models/op_checkpoint.hpp); attention is kept.
  models::OpCost op_checkpoint_recompute() const;

  // The linear layers of one TP rank as [m x k] x [k x n] GEMMs.
  models::GemmShape qkv() const;
  models::GemmShape out_proj() const;
  models::GemmShape ffn_in() const;
  models::GemmShape ffn_out() const;
  models::GemmShape logits() const;

 private:
  Segments layer_forward(bool moe);
  Segments layer_backward(bool moe, BackwardPart part);
  Segments layer_weight_grad(bool moe);
  void attention_block_forward(Segments& out, models::OpCost& c);
  void attention_block_backward(Segments& out, models::OpCost& c, BackwardPart part);
  void mlp_block_forward(Segments& out, models::OpCost& c);
  void mlp_block_backward(Segments& out, models::OpCost& c, BackwardPart part);
  void moe_block_forward(Segments& out, models::OpCost& c);
  void moe_block_backward(Segments& out, models::OpCost& c, BackwardPart part);
  models::OpCost moe_weight_grad() const;
  void shared_experts_forward(Segments& out, models::OpCost& c);
  void shared_experts_backward(Segments& out, models::OpCost& c, BackwardPart part);
  models::GemmShape shared_in() const;
  models::GemmShape shared_out() const;
  models::GemmShape router() const { return {d_.Ts, d_.E, d_.h}; }
  // The attention input projections: fused QKV, or MLA's down/norm/up projections.
  models::OpCost attention_in_forward() const;
  models::OpCost attention_in_backward(BackwardPart part) const;
  std::vector<models::GemmShape> attention_in_gemms() const;
  models::GemmShape attention_in_first_gemm() const;
  // One local expert's GEMMs on the busiest GPU's tokens (te rows).
  models::GemmShape expert_in() const;
  models::GemmShape expert_out() const;
  models::OpCost expert_gemm(const models::GemmShape& g) const;
  models::OpCost expert_fp8_cast(double elements) const;
  // The FP8 padding of the experts' tokens to multiples of 16 (`inputs`: before fc1, with the
  // routing probabilities; otherwise the unpadding after fc2), with Transformer Engine's
  // per-expert GEMMs under FP8; mirrored in the backward.
  models::OpCost expert_fp8_padding(bool inputs) const;
  // Matrices fused in an FFN's input GEMM: gate and up with SwiGLU, one otherwise.
  double ffn_in_matrices() const { return d_.ffn == FfnKind::swiglu ? 2.0 : 1.0; }
  double expert_tokens() const;
  double dispatch_elements() const { return d_.Ts * d_.k * d_.h; }
  // The dispatch (forward) or combine all-to-all, and their conjugates in the backward pass.
  void token_exchange(Segments& out, bool to_experts, const std::string& what);
  void expert_tp_exchange(Segments& out, bool gather);
  // Heads and per-head width RoPE rotates: queries and keys (MLA: queries and the one shared
  // key part of qk_rope_head_dim).
  double rope_heads() const { return d_.mla ? d_.hl + 1 : d_.hl + d_.gl; }
  double rope_dim() const { return d_.mla ? d_.d_rope : d_.d; }
  // The sequence length one attention call sees (the kernel calibration's axis).
  double attention_kernel_seq_len() const { return d_.S / d_.cp; }
  models::GemmShape scores_gemm() const;
  double score_batch() const { return d_.b * d_.hl; }
  double score_elements() const { return score_batch() * (d_.T / d_.b) * d_.S; }
  models::OpCost scores_forward() const;
  models::OpCost unfused_attention_forward() const;
  models::OpCost unfused_attention_backward() const;

  models::OpCost mem(double elements) const;
  models::OpCost block_mem(double elements) const;
  models::OpCost residual(double count = 1) const;
  models::OpCost linear_forward(const models::GemmShape& g, bool after_norm = false,
                                bool gathered = false) const;
  models::OpCost gemm_backward(const models::GemmShape& g, BackwardPart part,
                               bool gathered = false) const;
  Dtype head_dtype() const;
  // The FP8 quantization of `elements` 16-bit values before a GEMM; `after_norm`: the output
  // of a Transformer Engine norm (LayerNormLinear), which computes its amax itself.
  // `gathered`: the operand is one sequence parallelism all-gathers in FP8 (elements counted
  // gathered); with sequence parallelism on (tp > 1) it is quantized on this rank's shard and, on
  // Hopper, transposed after.
  models::OpCost fp8_cast(double elements, bool after_norm = false, bool gathered = false) const;
  // The FP8 GEMMs run in every layout, so no quantizer writes a transpose (Blackwell).
  bool fp8_any_layout() const;
  // A row-parallel linear's output gradient is all-gathered in FP8 under sequence parallelism
  // (training.fp8_gradient_gather): fp8_cast's `gathered` for it.
  bool fp8_gradient_gathered() const;
  // FP8 training with the MXFP8 recipe (Fp8Recipe::mxfp8).
  bool mxfp8() const;
  // Under MXFP8, the swizzle of the block scales of a GEMM's two operands (`count` products of
  // shape g in one grouped GEMM); nothing otherwise.
  models::OpCost mxfp8_swizzle(const models::GemmShape& g, double count = 1) const;
  // A GEMM's cost under MXFP8: its compute time at the block-scaled kernels' rate
  // (kernel_traffic::kMxfp8GemmTimeRatio); unchanged otherwise.
  models::OpCost block_scaled(models::OpCost gemm) const;
  // A linear layer's GEMM of shape g in the training precision, after mxfp8_swizzle.
  models::OpCost linear_gemm(const models::GemmShape& g) const;
  double kv_bytes_elements() const;
  // K/V heads an attention call reads on this rank: the query heads' with repeat_kv.
  double attention_kv_heads() const;
  bool torch_cp() const;
  bool p2p_cp() const;
  bool gather_cp() const;
  models::OpCost repeat_kv() const;
  // Element-wise work by training.kernel_fusion (kernel_traffic.hpp): fused kernels, or PyTorch's
  // eager ones of torchtitan's Llama. `in_block`: inside a Transformer block (compiled under
  // compiled_blocks), rather than the final norm.
  bool eager(bool in_block) const;
  models::OpCost norm(PassKind pass, double elements, bool in_block = true) const;
  models::OpCost rope(PassKind pass) const;
  models::OpCost ffn_activation(PassKind pass) const;  // the dense MLP's
  models::OpCost attention_output_copy() const;
  models::OpCost cross_entropy(PassKind pass) const;
  // Context parallelism (pass_builder_cp.cpp).
  void context_attention_forward(Segments& out, models::OpCost& c);
  void context_attention_backward(Segments& out, models::OpCost& c);
  double ring_overlap_s(const models::OpCost& attention) const;
  double cp_output_elements() const;
  double cp_query_elements() const;
  double cp_kv_chunk_elements() const;
  models::OpCost torch_cp_merge() const;
  models::OpCost torch_cp_accumulate() const;
  models::OpCost p2p_cp_merge() const;
  models::OpCost p2p_cp_accumulate() const;
  models::OpCost gather_cp_forward() const;
  models::OpCost gather_cp_backward() const;
  // A collective of `elements` 16-bit activations (or of `dtype`).
  Segment coll(CollKind kind, Group group, double elements, const std::string& label,
               Dtype dtype = Dtype::bf16);
  Segment context_dkv_exchange();
  void sequence_all_gather(Segments& out, models::OpCost& c, const models::OpCost& next_gemm = {},
                           Dtype dtype = Dtype::bf16);
  Dtype gathered_input_dtype() const;
  Dtype gathered_gradient_dtype() const;
  void tp_reduce(Segments& out, models::OpCost& c, const std::string& what,
                 const models::OpCost& prev_gemm = {});
  models::OpCost input_gradient_gemm(const models::OpCost& dgrad, bool several_projections) const;
  bool async_backward(BackwardPart part) const;
  void input_regather(Segments& out, models::OpCost& c, double dgrad_s);
  static void beside(Segment& collective, double gemm_s);
  models::OpCost sm_margin(const models::GemmShape& g, int sms) const;
  models::OpCost forward_gemm(const models::GemmShape& g) const;
  models::OpCost dgrad_gemm(const models::GemmShape& g) const;
  models::OpCost wgrad_gemm(const models::GemmShape& g) const;

  const Scenario& s_;
  const models::ComputeCostModel& c_;
  Dims d_;
  std::vector<Collective> collectives_;
  std::map<std::tuple<CollKind, Group, double, Dtype, double>, int> index_;
};

}  // namespace clustersim::workload
