// PassBuilder's mixture-of-experts block: router, token permutation, dispatch and combine over
// the EP group, the local experts as grouped GEMMs, and the shared experts
// (workload/pass_builder.hpp, moe_layer_forward).
#include "workload/kernel_traffic.hpp"
#include "workload/pass_builder.hpp"

namespace clustersim::workload {

using namespace kernel_traffic;
using models::GemmShape;
using models::OpCost;

// Tokens one local expert computes on the busiest GPU. Every GPU of an EP group sends its Ts
// tokens x top-k copies over the group; balanced, each GPU receives Ts k copies for its El
// experts. With expert TP (= tp) the TP group all-gathers them first (x et). The busiest
// expert takes rho times the mean (moe.routing_imbalance, capped by the capacity factor).
double PassBuilder::expert_tokens() const {
  const Dims& d = d_;
  return d.Ts * d.k * d.et * d.rho / d.El;
}

GemmShape PassBuilder::expert_in() const {
  return {expert_tokens(), ffn_in_matrices() * d_.fe / d_.et, d_.h};
}
GemmShape PassBuilder::expert_out() const {
  return {expert_tokens(), d_.h, d_.fe / d_.et};
}

// One matrix of the local experts: El products of the per-expert shape, each at the efficiency
// a GEMM of that shape reaches (so few tokens per expert give the small-m efficiency the
// calibration measured), in one grouped launch or one launch per expert
// (training.moe_expert_gemm; core/scenario.hpp names the sources).
OpCost PassBuilder::expert_gemm(const GemmShape& g) const {
  OpCost c = mxfp8_swizzle(g, d_.El);
  c += block_scaled(c_.batched_gemm(g, d_.precision, d_.El));
  if (s_.training.moe_expert_gemm == MoeExpertGemm::per_expert) c += c_.launches(d_.El - 1);
  return c;
}

// The FP8 quantization of the local experts' inputs (of `elements` in all): one quantization,
// or one per expert when each expert's GEMM is launched on its own (each with its kernels).
OpCost PassBuilder::expert_fp8_cast(double elements) const {
  OpCost c = fp8_cast(elements);
  if (c.kernels > 0 && s_.training.moe_expert_gemm == MoeExpertGemm::per_expert) {
    c += c_.launches(c.kernels * (d_.El - 1));
  }
  return c;
}

OpCost PassBuilder::expert_fp8_padding(bool inputs) const {
  if (d_.precision != Dtype::fp8 || s_.training.moe_expert_gemm != MoeExpertGemm::per_expert) {
    return {};
  }
  OpCost c = mem(kExpertPaddingBytes / kActivationBytes * expert_tokens() * d_.El * d_.h);
  if (inputs) c += c_.launches(kExpertPaddingProbKernels);
  return c;
}

// Router, permutation, dispatch, experts, combine, unpermutation, then the shared experts.
// Before the dispatch the host reads how many tokens go to each expert and waits for them
// (host_sync): Megatron-Core 0.15's all-to-all dispatcher synchronizes with its device-to-host
// copy of the split sizes before the expert-parallel all-to-all (MoEAlltoAllTokenDispatcher,
// cuda_sync_point "before_ep_alltoall", or earlier with token dropping; d2h_event.synchronize()
// in megatron/core/transformer/moe/token_dispatcher.py), and DeepEP's dispatch spins on the host
// until the received-token counts arrive (csrc/deep_ep.cpp, "Synchronize total received tokens
// and tokens per expert"; Megatron-Core 0.15's fused_a2a.py passes no num_worst_tokens that
// would skip it). The backward reuses the forward's counts.
void PassBuilder::moe_block_forward(Segments& out, OpCost& c) {
  const Dims& d = d_;
  c += mem(kNormForwardPasses * d.Ts * d.h);
  c += c_.gemm(router(), head_dtype());
  c += c_.memory_op(kRouterPasses * kRouterScoreBytes * d.Ts * d.E);
  c += mem(kPermutePasses * dispatch_elements());
  flush(out, c);
  const std::size_t counts_read = out.size();
  token_exchange(out, true, "MoE dispatch");
  expert_tp_exchange(out, true);
  const double te = expert_tokens() * d.El;
  c += expert_fp8_padding(true);
  c += expert_fp8_cast(te * d.h);
  c += expert_gemm(expert_in());
  c += mem(activation_passes(d.ffn, PassKind::forward) * te * d.fe / d.et);
  c += expert_fp8_cast(te * d.fe / d.et);
  c += expert_gemm(expert_out());
  c += expert_fp8_padding(false);
  flush(out, c);
  if (counts_read < out.size()) out[counts_read].host_sync = true;
  expert_tp_exchange(out, false);
  token_exchange(out, false, "MoE combine");
  c += mem(kPermutePasses * dispatch_elements());
  shared_experts_forward(out, c);
}

void PassBuilder::moe_block_backward(Segments& out, OpCost& c, BackwardPart part) {
  const Dims& d = d_;
  const bool whole = part == BackwardPart::whole;
  shared_experts_backward(out, c, part);
  c += mem(kPermutePasses * dispatch_elements());
  flush(out, c);
  token_exchange(out, true, "MoE combine backward");
  expert_tp_exchange(out, true);
  const double te = expert_tokens() * d.El;
  c += expert_fp8_padding(false);
  c += expert_fp8_cast(te * d.h);
  c += expert_gemm(dgrad(expert_out()));
  if (whole) c += expert_gemm(wgrad(expert_out()));
  c += mem(activation_passes(d.ffn, PassKind::backward) * te * d.fe / d.et);
  c += expert_fp8_cast(te * d.fe / d.et);
  c += expert_gemm(dgrad(expert_in()));
  if (whole) c += expert_gemm(wgrad(expert_in()));
  c += expert_fp8_padding(true);
  flush(out, c);
  expert_tp_exchange(out, false);
  token_exchange(out, false, "MoE dispatch backward");
  c += mem(kPermutePasses * dispatch_elements());
  c += c_.memory_op(kRouterPasses * kRouterScoreBytes * d.Ts * d.E);
  c += c_.gemm(dgrad(router()), head_dtype());
  if (whole) c += c_.gemm(wgrad(router()), head_dtype());
  c += mem(kNormBackwardPasses * d.Ts * d.h);
}

// The weight gradients an MoE block's backward leaves to W: the shared experts', the local
// experts' grouped GEMMs and the router's.
OpCost PassBuilder::moe_weight_grad() const {
  const Dims& d = d_;
  OpCost c;
  if (d.fs > 0) {
    for (const GemmShape& g : {shared_out(), shared_in()}) c += wgrad_gemm(g);
  }
  c += expert_gemm(wgrad(expert_out()));
  c += expert_gemm(wgrad(expert_in()));
  c += c_.gemm(wgrad(router()), head_dtype());
  return c;
}

// With expert TP (= tp), the TP group all-gathers the dispatched tokens before the experts
// (`gather`) and reduce-scatters their outputs after.
void PassBuilder::expert_tp_exchange(Segments& out, bool gather) {
  if (d_.et <= 1) return;
  out.push_back(coll(gather ? CollKind::all_gather : CollKind::reduce_scatter, Group::tp,
                     dispatch_elements() * d_.et,
                     gather ? "MoE expert-TP all-gather" : "MoE expert-TP reduce-scatter"));
}

// Tokens (or their gradients) on their way to the experts (`to_experts`: dispatch, and the
// backward of combine) or back (combine, and the backward of dispatch), over the EP group:
// one all-to-all of Ts k h, or DeepEP's InfiniBand hop of Ts x token_nodes x h among the GPUs
// of the same in-node index, in FP8 towards the experts under an FP8 recipe (DeepSeek-V3
// §3.3.2: dispatch and the gradients before the down-projection in FP8, combine in BF16), or
// HybridEP's exchange of Ts x token_ranks BF16 rows at its measured rate (dispatch-like towards
// the experts, combine-like back; Megatron-Core's HybridEP has no FP8 dispatch: fused_a2a.py
// asserts "HybridEP dispatcher does not support fp8 dispatch now").
void PassBuilder::token_exchange(Segments& out, bool to_experts, const std::string& what) {
  const Dims& d = d_;
  if (d.ep <= 1) return;
  if (d.hybrid_ep) {
    const double bytes = d.Ts * d.token_ranks * d.h * kActivationBytes;
    out.push_back(Segment{
        true,
        {},
        collective(CollKind::all_to_all, Group::ep, bytes, Dtype::bf16, what + " (HybridEP)",
                   to_experts ? d.hybrid_dispatch_Bps : d.hybrid_combine_Bps)});
    return;
  }
  if (!d.two_hop) {
    out.push_back(coll(CollKind::all_to_all, Group::ep, dispatch_elements(), what + " all-to-all"));
    return;
  }
  const bool fp8 = to_experts && d.precision == Dtype::fp8;
  const double bytes = d.Ts * d.token_nodes * d.h * (fp8 ? kFp8DispatchBytes : kActivationBytes);
  out.push_back(Segment{true,
                        {},
                        collective(CollKind::all_to_all, Group::ep_rail, bytes,
                                   fp8 ? Dtype::fp8 : Dtype::bf16, what + " (InfiniBand hop)")});
}

// Recomputed in the backward, before the layer's gradients (the forward kernels of
// attention_in_forward and moe_block_forward they repeat).
OpCost PassBuilder::module_recompute(bool moe) const {
  const Dims& d = d_;
  const Training& tr = s_.training;
  OpCost c;
  if (tr.recompute_norms) c += mem(2 * kNormForwardPasses * d.Ts * d.h);
  if (tr.recompute_mla_up_proj && d.mla) {
    if (d.q_lora > 0) {
      c += mem(kNormForwardPasses * d.T * d.q_lora);
      c += linear_forward({d.T, d.hl * (d.d_nope + d.d_rope), d.q_lora});
    }
    c += mem(kNormForwardPasses * d.T * d.kv_lora);
    c += linear_forward({d.T, d.hl * (d.d_nope + d.d_v), d.kv_lora});
    if (d.rope) c += mem(kRopePasses * d.T * rope_heads() * rope_dim());
  }
  if (tr.recompute_moe_act && moe && d.moe) {
    const double te = expert_tokens() * d.El;
    c += mem(activation_passes(d.ffn, PassKind::forward) * te * d.fe / d.et);
  }
  return c;
}

// The shared experts: a dense FFN of their summed width, split over TP like the dense MLP.
GemmShape PassBuilder::shared_in() const {
  return {d_.T, ffn_in_matrices() * d_.fs / d_.t, d_.h};
}
GemmShape PassBuilder::shared_out() const {
  return {d_.T, d_.h, d_.fs / d_.t};
}

void PassBuilder::shared_experts_forward(Segments& out, OpCost& c) {
  const Dims& d = d_;
  if (d.fs <= 0) return;
  const GemmShape in = shared_in();
  const GemmShape outp = shared_out();
  sequence_all_gather(out, c, forward_gemm(in), gathered_input_dtype());
  c += linear_forward(in, false, true);
  c += mem(activation_passes(d.ffn, PassKind::forward) * d.T * d.fs / d.t);
  c += linear_forward(outp);
  tp_reduce(out, c, "shared-expert", forward_gemm(outp));
}

void PassBuilder::shared_experts_backward(Segments& out, OpCost& c, BackwardPart part) {
  const Dims& d = d_;
  if (d.fs <= 0) return;
  const GemmShape in = shared_in();
  const GemmShape outp = shared_out();
  sequence_all_gather(out, c, dgrad_gemm(outp), gathered_gradient_dtype());
  c += gemm_backward(outp, part, fp8_gradient_gathered());
  c += mem(activation_passes(d.ffn, PassKind::backward) * d.T * d.fs / d.t);
  c += gemm_backward(in, part);
  // The MoE block's input also feeds the router and the routed experts.
  tp_reduce(out, c, "shared-expert", input_gradient_gemm(dgrad_gemm(in), true));
}

}  // namespace clustersim::workload
