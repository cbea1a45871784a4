#include "workload/workload.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "models/memory.hpp"
#include "models/pipeline.hpp"
#include "models/transformer.hpp"

namespace clustersim::workload {

namespace {

using models::GemmShape;
using models::OpCost;

// Activations between kernels are 16-bit (BF16/FP16); FP8 recipes cast to FP8 only inside the
// linear layers (Transformer Engine, fp8_autocast), so elementwise kernels move 2-byte values.
constexpr double kActivationBytes = 2.0;
// FP32 for the vocab-parallel cross entropy (Megatron-LM tensor_parallel/cross_entropy.py
// upcasts logits with .float()).
constexpr double kLogitBytes = 4.0;
// A causal mask lets FlashAttention skip half of the score matrix (Dao 2023, FlashAttention-2,
// section 4.1: causal FLOPs are counted as half of the non-causal ones).
constexpr double kCausalFraction = 0.5;
// FlashAttention backward runs 5 matrix multiplies against the forward's 2 (Dao 2023,
// FlashAttention-2, section 4.1: "the backward pass ... 2.5x the forward FLOPs"); it includes the
// recomputation of the score matrix, so Megatron's selective recomputation of the attention core
// adds no extra kernel time on top of it.
constexpr double kAttentionBackwardOverForward = 2.5;
// Unfused attention (Megatron-LM 2021-22, AttentionKernel::unfused): Q K^T and P V are batched
// GEMMs over the full score matrix (a causal mask does not skip work), around the fused
// scale-mask-softmax kernel (megatron/fused_kernels scaled_upper_triang_masked_softmax) and
// attention dropout, each reading and writing the 16-bit score tensor. Bytes per score element:
constexpr double kSoftmaxForwardBytes = 2 + 2;                // read scores, write probabilities
constexpr double kSoftmaxBackwardBytes = 2 + 2 + 2;           // read probabilities and dP, write dS
constexpr double kAttentionDropoutForwardBytes = 2 + 2 + 1;   // read, write, write 1-byte mask
constexpr double kAttentionDropoutBackwardBytes = 2 + 1 + 2;  // read grad and mask, write grad
// FP8 linear layers (Transformer Engine, fp8_autocast): each GEMM operand that arrives in BF16 is
// quantized by a fused cast-transpose kernel that reads it once and writes the FP8 row-wise copy
// and its transpose (the Hopper FP8 GEMM needs both layouts: forward input for the wgrad GEMM,
// output gradient for dgrad and wgrad): TransformerEngine pytorch/cpp_extensions/transpose.py
// fp8_cast_transpose_fused (forward input) and fp8_cast_transpose_bgrad_fused (grad_output).
// Bytes per element. Simplification: a LayerNormLinear writes its FP8 input from the norm
// kernel instead, which moves about the same bytes, so every linear input is counted alike.
constexpr double kFp8CastTransposeBytes = 2 + 1 + 1;
// Fused elementwise kernels read each input and write each output once. Passes over the
// activation tensor, by kernel (inputs + outputs):
constexpr double kNormForwardPasses = 2;     // read x, write y
constexpr double kNormBackwardPasses = 3;    // read x and dy, write dx
constexpr double kResidualPasses = 3;        // read two operands, write the sum
constexpr double kRopePasses = 2;            // read q/k, write them rotated (same for backward)
constexpr double kSwigluForwardPasses = 3;   // read gate and up, write their product
constexpr double kSwigluBackwardPasses = 5;  // read gate, up, dy; write dgate, dup
constexpr double kGeluForwardPasses = 2;     // read x, write y
constexpr double kGeluBackwardPasses = 3;    // read x and dy, write dx
// Squared ReLU as NeMo writes it, torch.pow(torch.nn.functional.relu(x), 2) (nemo/collections/
// nlp/modules/common/megatron/utils.py and llm/fn/activation.py, NeMo 24.07): no fused kernel.
// Forward: relu (read x, write r) and the square (read r, write y). Backward by PyTorch's
// autograd formulas (tools/autograd/derivatives.yaml): pow_backward is
// grad * (2 * r.pow(1)), three kernels (copy r, scale it, multiply by dy: 2 + 2 + 3 passes);
// relu's is threshold_backward (read dr and r, write dx: 3 passes).
constexpr double kSquaredReluForwardPasses = 2 + 2;
constexpr double kSquaredReluBackwardPasses = 2 + 2 + 3 + 3;
constexpr double kEmbeddingForwardPasses = 2;   // read table rows, write activations
constexpr double kEmbeddingBackwardPasses = 3;  // read dy, read-modify-write gradient rows
// Cross entropy: forward reads the logits and writes the softmax (FP32); backward reads it and
// writes the 16-bit logit gradient.
constexpr double kCrossEntropyForwardBytesPerLogit = 2 * kLogitBytes;
constexpr double kCrossEntropyBackwardBytesPerLogit = kLogitBytes + kActivationBytes;
// Vocab-parallel cross entropy all-reduces three per-token FP32 values across TP: the logit
// maximum, the target logit and the sum of exponentials (Megatron-LM cross_entropy.py).
constexpr int kCrossEntropyAllReduces = 3;
// Mixed-precision Adam update per parameter (Rajbhandari et al. 2020 section 3.1 state sizes):
// read the master weight, momentum and variance (3 x 4 B in FP32) and the FP32 main gradient,
// write the three states back and the 16-bit model weight: 30 B with FP32 states.
constexpr double kAdamGradientReadBytes = 4;
constexpr double kAdamWeightWriteBytes = 2;
// Global gradient-norm clipping reads each FP32 main gradient once more (Megatron-LM
// clip_grads.py, multi-tensor L2 norm).
constexpr double kGradNormBytesPerParam = 4;
// 1-bit Adam error feedback (Tang et al. 2021, Algorithm 1): per element the worker reads the
// momentum and its error buffer (FP32), writes the new error and reads the compensated value
// again for the scale (4 x 4 B); the server repeats this on its 1/n chunk.
constexpr double kOnebitErrorFeedbackBytesPerElement = 16;
// DeepSpeed 2021 ZeRO-3 (v0.3.13 .. v0.5.4, deepspeed/runtime/zero/partition_parameters.py
// _allgather_param): torch.distributed.all_gather into a list of one view per rank, which
// PyTorch's ProcessGroupNCCL serves by gathering into a flat buffer and then copying each
// rank's piece into its view (`outputTensors[i][j].copy_(outputFlattened[i][j], true)`): one
// copy kernel per rank reading and writing its bytes (2 B of traffic per gathered byte).
// DeepSpeed PR #1188 (v0.5.5) replaced it ("all_gather will do implicit memcpy at the end of
// each ncclAllgather").
constexpr double kGatherCopyBytesPerByte = 2;
// The same function first allocates the flat buffer with torch.zeros (v0.3.13 .. v0.5.5): a
// fill kernel writing each gathered byte.
constexpr double kGatherZeroFillBytesPerByte = 1;
// Host time of one torch.distributed.all_gather call from _allgather_param, measured on 8 A100s
// with NVLink, PyTorch 1.8 and DeepSpeed 0.3.16 (DeepSpeed issue #1069, comment of 2021-06-21:
// "the launch takes 250us about", for a parameter of 320 elements per rank). It runs after
// DeepSpeed's torch.cuda.synchronize(), so the GPU waits for it. Its one copy launch per rank
// is modelled on its own (the GPU preset's kernel launch per rank), so the measured ranks'
// share is taken out of it.
constexpr double kDeepSpeed2021AllGatherCallS = 250e-6;
constexpr int kDeepSpeed2021AllGatherCallRanks = 8;
// DeepSpeed's stage3_max_live_parameters default, 1e9 elements (deepspeed/runtime/zero/
// constants.py, v0.3.13 .. v0.4.0): gathered parameters are released beyond it, so a layer
// larger than this is gathered again for its backward after the recompute forward.
constexpr double kDeepSpeedMaxLiveParameters = 1e9;
// DeepSpeed 2021 stage 3 reduces a bucket on its reduction stream as allreduce_and_copy does
// (stage3.py v0.3.13): flatten the bucket's gradients into one tensor (read and write),
// divide it by the data-parallel size in place (read and write), all-reduce, copy each
// gradient's slice back (read and write): 6 B of HBM traffic per gradient byte.
constexpr double kDeepSpeed2021BucketBytesPerByte = 6;

double adam_bytes_per_param(Dtype state_dtype) {
  return 2 * models::adam_state_bytes_per_param(state_dtype) + kAdamGradientReadBytes +
         kAdamWeightWriteBytes;
}

double layer_count(const std::vector<int>& v, int from, int to) {
  double n = 0;
  for (int i = from; i < to; ++i) n += v[static_cast<std::size_t>(i)];
  return n;
}

// The dimensions the kernels of one micro-batch on one GPU see.
struct Dims {
  double b = 1, S = 1, T = 1, Ts = 1;
  double h = 1, hl = 1, gl = 1, d = 1, f = 1, V = 1;
  double t = 1;
  int tp = 1, cp = 1;
  bool sp = false, rope = true, learned_pos = false;
  FfnKind ffn = FfnKind::gelu;
  Dtype precision = Dtype::bf16;
};

// Passes over the MLP's intermediate tensor (f wide) that its activation makes.
double activation_passes(FfnKind ffn, PassKind pass) {
  const bool fwd = pass == PassKind::forward;
  switch (ffn) {
    case FfnKind::gelu: return fwd ? kGeluForwardPasses : kGeluBackwardPasses;
    case FfnKind::swiglu: return fwd ? kSwigluForwardPasses : kSwigluBackwardPasses;
    case FfnKind::squared_relu: return fwd ? kSquaredReluForwardPasses : kSquaredReluBackwardPasses;
  }
  return 0;
}

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
  return d;
}

// Forward and backward GEMMs: dgrad (m x k = dY[m x n] W^T) and wgrad (k x n = X^T dY).
GemmShape dgrad(const GemmShape& g) {
  return {g.m, g.k, g.n};
}
GemmShape wgrad(const GemmShape& g) {
  return {g.k, g.n, g.m};
}

// A piece of a pass: a run of kernels, or a blocking TP/CP collective.
struct Segment {
  bool is_collective = false;
  OpCost cost;
  int collective = -1;
  double overlap_s = 0;  // collective: the GEMM it is pipelined with (tp_comm_overlap)
};
using Segments = std::vector<Segment>;

class Builder {
 public:
  Builder(const Scenario& s, const models::ComputeCostModel& c) : s_(s), c_(c), d_(dims_of(s)) {}

  const Dims& dims() const { return d_; }
  std::vector<Collective>& collectives() { return collectives_; }

  int collective(CollKind kind, Group group, double bytes, Dtype dtype, const std::string& label) {
    const auto key = std::make_tuple(kind, group, bytes, dtype);
    const auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    const int id = static_cast<int>(collectives_.size());
    collectives_.push_back({kind, group, bytes, dtype, label});
    index_.emplace(key, id);
    return id;
  }

  // With sequence parallelism, the all-gather of the sequence-split activations that starts a
  // tensor-parallel block (Korthikanti et al. 2022 §4.2.2); the compute before it is flushed.
  // With tp_comm_overlap it is pipelined with the GEMM that consumes it, `next_gemm`.
  void sequence_all_gather(Segments& out, OpCost& c, const OpCost& next_gemm = {}) {
    if (!d_.sp) return;
    flush(out, c);
    out.push_back(coll(CollKind::all_gather, Group::tp, d_.T * d_.h, "layer sequence all-gather"));
    if (s_.training.tp_comm_overlap) out.back().overlap_s = next_gemm.time_s;
  }

  // Layer forward: norm, [SP all-gather], QKV, rope, [CP KV gather], attention, out-proj,
  // all-reduce (or SP reduce-scatter), residual, norm, [AG], FFN, all-reduce/RS, residual.
  Segments layer_forward() {
    const Dims& d = d_;
    Segments out;
    OpCost c;
    c += mem(kNormForwardPasses * d.Ts * d.h);
    sequence_all_gather(out, c, forward_gemm(qkv()));
    c += linear_forward(qkv());
    if (d.rope) c += mem(kRopePasses * d.T * (d.hl + d.gl) * d.d);
    if (d.cp > 1) {
      flush(out, c);
      out.push_back(
          coll(CollKind::all_gather, Group::cp, kv_bytes_elements(), "context KV all-gather"));
    }
    c += attention_forward();
    c += linear_forward(out_proj());
    const OpCost proj_margin = sm_margin(out_proj(), s_.training.tp_overlap_proj_fprop_sms);
    c += proj_margin;
    tp_reduce(out, c, "layer", sum(forward_gemm(out_proj()), proj_margin));
    c += mem(kResidualPasses * d.Ts * d.h);
    c += mem(kNormForwardPasses * d.Ts * d.h);
    sequence_all_gather(out, c, forward_gemm(ffn_in()));
    c += linear_forward(ffn_in());
    c += mem(activation_passes(d.ffn, PassKind::forward) * d.T * d.f / d.t);
    c += linear_forward(ffn_out());
    const OpCost fc2_margin = sm_margin(ffn_out(), s_.training.tp_overlap_fc2_fprop_sms);
    c += fc2_margin;
    tp_reduce(out, c, "layer", sum(forward_gemm(ffn_out()), fc2_margin));
    c += mem(kResidualPasses * d.Ts * d.h);
    flush(out, c);
    return out;
  }

  // Layer backward: the conjugate operators (Korthikanti et al. 2022 Fig. 5): all-reduce of the
  // input gradient after each column-parallel block; with SP, all-gather before each block and
  // reduce-scatter after it.
  Segments layer_backward() {
    const Dims& d = d_;
    Segments out;
    OpCost c;
    c += mem(kResidualPasses * d.Ts * d.h);
    sequence_all_gather(out, c, dgrad_gemm(ffn_out()));
    c += gemm_backward(ffn_out());
    c += mem(activation_passes(d.ffn, PassKind::backward) * d.T * d.f / d.t);
    c += gemm_backward(ffn_in());
    tp_reduce(out, c, "layer", dgrad_gemm(ffn_in()));
    c += mem(kNormBackwardPasses * d.Ts * d.h);
    c += mem(kResidualPasses * d.Ts * d.h);
    sequence_all_gather(out, c, dgrad_gemm(out_proj()));
    c += gemm_backward(out_proj());
    c += selective_recompute();
    c += attention_backward();
    if (d.cp > 1) {
      flush(out, c);
      out.push_back(coll(CollKind::reduce_scatter, Group::cp, kv_bytes_elements(),
                         "context dKV reduce-scatter"));
    }
    if (d.rope) c += mem(kRopePasses * d.T * (d.hl + d.gl) * d.d);
    c += gemm_backward(qkv());
    tp_reduce(out, c, "layer", dgrad_gemm(qkv()));
    c += mem(kNormBackwardPasses * d.Ts * d.h);
    flush(out, c);
    return out;
  }

  // Vocab-parallel embedding lookup (Megatron-LM VocabParallelEmbedding): each TP rank looks up
  // its vocabulary shard, then the partial rows are all-reduced (reduce-scattered with SP).
  Segments embedding_forward() {
    const Dims& d = d_;
    Segments out;
    OpCost c = mem(kEmbeddingForwardPasses * d.T * d.h * (d.learned_pos ? 2 : 1));
    tp_reduce(out, c, "embedding");
    flush(out, c);
    return out;
  }
  Segments embedding_backward() {
    const Dims& d = d_;
    Segments out;
    if (d.sp)
      out.push_back(coll(CollKind::all_gather, Group::tp, d.T * d.h, "embedding all-gather"));
    OpCost c = mem(kEmbeddingBackwardPasses * d.T * d.h * (d.learned_pos ? 2 : 1));
    flush(out, c);
    return out;
  }

  // Final norm, logits (column-parallel over the vocabulary) and vocab-parallel cross entropy.
  Segments head_forward() {
    const Dims& d = d_;
    Segments out;
    OpCost c = mem(kNormForwardPasses * d.Ts * d.h);
    if (d.sp) {
      flush(out, c);
      out.push_back(coll(CollKind::all_gather, Group::tp, d.T * d.h, "head sequence all-gather"));
    }
    c += c_.gemm(logits(), head_dtype());
    c += c_.memory_op(kCrossEntropyForwardBytesPerLogit * d.T * d.V / d.t);
    flush(out, c);
    if (d.tp > 1) {
      const int id = collective(CollKind::all_reduce, Group::tp, d.T * kLogitBytes, Dtype::fp32,
                                "cross-entropy all-reduce");
      for (int i = 0; i < kCrossEntropyAllReduces; ++i) out.push_back(Segment{true, {}, id});
    }
    return out;
  }
  Segments head_backward() {
    const Dims& d = d_;
    Segments out;
    OpCost c = c_.memory_op(kCrossEntropyBackwardBytesPerLogit * d.T * d.V / d.t);
    c += c_.gemm(dgrad(logits()), head_dtype());
    c += c_.gemm(wgrad(logits()), head_dtype());
    if (d.tp > 1) {
      flush(out, c);
      out.push_back(coll(d.sp ? CollKind::reduce_scatter : CollKind::all_reduce, Group::tp,
                         d.T * d.h, "head input-gradient reduction"));
    }
    c += mem(kNormBackwardPasses * d.Ts * d.h);
    flush(out, c);
    return out;
  }

  OpCost attention_forward() const {
    if (s_.training.attention == AttentionKernel::unfused) return unfused_attention_forward();
    const Dims& d = d_;
    // Q K^T and P V: 2 x 2 b (S/cp) S d FLOPs per query head (Narayanan et al. 2021 section 5.1).
    const double flops = 4.0 * d.b * (d.S / d.cp) * d.S * d.hl * d.d * kCausalFraction;
    const double bytes = (2 * d.T * d.hl * d.d + 2 * d.b * d.S * d.gl * d.d) * kActivationBytes;
    return c_.attention(flops, bytes, d.precision, attention_kernel_seq_len());
  }
  OpCost attention_backward() const {
    if (s_.training.attention == AttentionKernel::unfused) return unfused_attention_backward();
    const OpCost f = attention_forward();
    return c_.attention_backward(f.flops * kAttentionBackwardOverForward, 2 * f.bytes, d_.precision,
                                 attention_kernel_seq_len());
  }
  // The sequence length one attention call sees, the axis of the kernel's calibration: the
  // local queries, S / cp (Transformer Engine's context parallelism runs the attention in
  // steps over S / cp-token pieces of the key/value sequence).
  double attention_kernel_seq_len() const { return d_.S / d_.cp; }
  // What selective recomputation adds to a layer's backward: nothing with FlashAttention (its
  // backward recomputes the scores anyway), the score GEMM, softmax and dropout when unfused
  // (Korthikanti et al. 2022 §5: the recomputed part is the attention core).
  OpCost selective_recompute() const {
    if (s_.training.recompute != Recompute::selective ||
        s_.training.attention == AttentionKernel::flash) {
      return {};
    }
    return scores_forward();
  }

  // One query head's Q K^T over the local queries and all keys: [Sq x d] x [d x S].
  GemmShape scores_gemm() const { return {d_.T / d_.b, d_.S, d_.d}; }
  double score_batch() const { return d_.b * d_.hl; }
  double score_elements() const { return score_batch() * (d_.T / d_.b) * d_.S; }
  // Unfused: Q K^T, then softmax and attention dropout over the score tensor.
  OpCost scores_forward() const {
    OpCost c = c_.batched_gemm(scores_gemm(), d_.precision, score_batch());
    const double dropout = s_.training.dropout ? kAttentionDropoutForwardBytes : 0.0;
    c += c_.memory_op((kSoftmaxForwardBytes + dropout) * score_elements());
    return c;
  }
  OpCost unfused_attention_forward() const {
    const GemmShape qk = scores_gemm();
    OpCost c = scores_forward();
    c += c_.batched_gemm({qk.m, qk.k, qk.n}, d_.precision, score_batch());  // P [Sq x S] V
    return c;
  }
  OpCost unfused_attention_backward() const {
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

  GemmShape qkv() const { return {d_.T, (d_.hl + 2 * d_.gl) * d_.d, d_.h}; }
  GemmShape out_proj() const { return {d_.T, d_.h, d_.hl * d_.d}; }
  GemmShape ffn_in() const {
    return {d_.T, (d_.ffn == FfnKind::swiglu ? 2.0 : 1.0) * d_.f / d_.t, d_.h};
  }
  GemmShape ffn_out() const { return {d_.T, d_.h, d_.f / d_.t}; }
  GemmShape logits() const { return {d_.T, d_.V / d_.t, d_.h}; }

 private:
  OpCost mem(double elements) const { return c_.memory_op(elements * kActivationBytes); }
  // A linear layer's forward GEMM [m x k] x [k x n], after the FP8 cast of its m x k input.
  OpCost linear_forward(const GemmShape& g) const {
    OpCost c = fp8_cast(g.m * g.k);
    c += c_.gemm(g, d_.precision);
    return c;
  }
  // dgrad and wgrad, after the FP8 cast of the m x n output gradient.
  OpCost gemm_backward(const GemmShape& g) const {
    OpCost c = fp8_cast(g.m * g.n);
    c += c_.gemm(dgrad(g), d_.precision);
    c += c_.gemm(wgrad(g), d_.precision);
    return c;
  }
  // The output layer is Megatron-Core's own ColumnParallelLinear, outside Transformer Engine's
  // FP8 modules (megatron/core/models/gpt/gpt_model.py output_layer): BF16 under FP8 recipes.
  Dtype head_dtype() const { return d_.precision == Dtype::fp8 ? Dtype::bf16 : d_.precision; }
  OpCost fp8_cast(double elements) const {
    if (d_.precision != Dtype::fp8) return {};
    return c_.memory_op(kFp8CastTransposeBytes * elements);
  }
  // K and V of the whole sequence, gathered across the CP group (elements -> bytes).
  double kv_bytes_elements() const { return 2 * d_.b * d_.S * d_.gl * d_.d; }
  Segment coll(CollKind kind, Group group, double elements, const std::string& label) {
    return Segment{
        true, {}, collective(kind, group, elements * kActivationBytes, Dtype::bf16, label)};
  }
  static void flush(Segments& out, OpCost& c) {
    if (c.time_s > 0) out.push_back(Segment{false, c, -1});
    c = OpCost{};
  }
  // The reduction after a row-parallel block: all-reduce, or reduce-scatter with SP.
  // With tp_comm_overlap the reduce-scatter is pipelined with the GEMM that produced its
  // input, `prev_gemm`.
  void tp_reduce(Segments& out, OpCost& c, const std::string& what, const OpCost& prev_gemm = {}) {
    if (d_.tp == 1) return;
    flush(out, c);
    out.push_back(coll(d_.sp ? CollKind::reduce_scatter : CollKind::all_reduce, Group::tp,
                       d_.T * d_.h, what + (d_.sp ? " reduce-scatter" : " all-reduce")));
    if (s_.training.tp_comm_overlap) out.back().overlap_s = prev_gemm.time_s;
  }
  static OpCost sum(OpCost a, const OpCost& b) {
    a += b;
    return a;
  }
  // With TP overlap, a forward row-parallel GEMM whose reduce-scatter takes `sms` SMs with
  // set_sm_margin runs on the others (Transformer Engine userbuffers): the time it loses,
  // compute time x sms / (sm_count - sms). The loader keeps sms below sm_count.
  OpCost sm_margin(const GemmShape& g, int sms) const {
    if (!s_.training.tp_comm_overlap || sms <= 0 || d_.tp == 1) return {};
    const OpCost gemm = forward_gemm(g);
    const double sm = s_.cluster.gpu.sm_count;
    OpCost extra;
    extra.compute_s = gemm.compute_s * sms / (sm - sms);
    extra.time_s = std::max(gemm.compute_s + extra.compute_s, gemm.memory_s) -
                   std::max(gemm.compute_s, gemm.memory_s);
    return extra;
  }
  // The GEMM part of a linear layer (the one a pipelined TP collective overlaps).
  OpCost forward_gemm(const GemmShape& g) const { return c_.gemm(g, d_.precision); }
  OpCost dgrad_gemm(const GemmShape& g) const { return c_.gemm(dgrad(g), d_.precision); }

  const Scenario& s_;
  const models::ComputeCostModel& c_;
  Dims d_;
  std::vector<Collective> collectives_;
  std::map<std::tuple<CollKind, Group, double, Dtype>, int> index_;
};

OpCost total(const Segments& segs) {
  OpCost c;
  for (const auto& s : segs) {
    if (!s.is_collective) c += s.cost;
  }
  return c;
}

// A unit of parameters whose gradients become ready together (a layer, the embedding, the
// head), in the order backward produces them.
struct GradUnit {
  double params = 0;
  Dtype dtype = Dtype::bf16;
  int layer = -1;             // global layer index, or -1
  std::string name;           // "layer 12", "embedding", "lm_head"
  std::vector<int> buckets;   // buckets completed when this unit is ready
  std::vector<int> covering;  // buckets holding any of this unit's parameters
};

bool in_fp32_groups(const Scenario& s, const std::string& group) {
  const auto& g = s.comm.fp32_layer_groups;
  return std::find(g.begin(), g.end(), group) != g.end();
}

}  // namespace

const char* to_string(CollKind k) {
  switch (k) {
    case CollKind::all_reduce: return "all_reduce";
    case CollKind::reduce_scatter: return "reduce_scatter";
    case CollKind::all_gather: return "all_gather";
    case CollKind::all_to_all: return "all_to_all";
  }
  return "?";
}

const char* to_string(Group g) {
  switch (g) {
    case Group::tp: return "tp";
    case Group::cp: return "cp";
    case Group::dp: return "dp";
    case Group::embedding: return "embedding";
  }
  return "?";
}

const char* to_string(ComputeKind k) {
  switch (k) {
    case ComputeKind::forward: return "forward";
    case ComputeKind::backward: return "backward";
    case ComputeKind::recompute: return "recompute";
    case ComputeKind::embedding: return "embedding";
    case ComputeKind::lm_head: return "lm_head";
    case ComputeKind::optimizer: return "optimizer";
    case ComputeKind::compression: return "compression";
    case ComputeKind::gather_copy: return "gather_copy";
  }
  return "?";
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::compute: return "compute";
    case OpKind::collective: return "collective";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::grad_ready: return "grad_ready";
    case OpKind::grad_wait: return "grad_wait";
    case OpKind::gather_issue: return "gather_issue";
    case OpKind::gather_wait: return "gather_wait";
  }
  return "?";
}

double GradBucket::bytes() const {
  double b = 0;
  for (const auto& c : calls) b += c.bytes;
  return b;
}

double grad_bytes_per_element(Dtype dtype) {
  return bytes_per_element(dtype);
}

double exposed_tp_comm_s(double comm_s, double gemm_s, int tp) {
  if (gemm_s <= 0 || tp < 2) return comm_s;
  const double chunks = tp;
  return comm_s / chunks + std::max(comm_s - gemm_s, 0.0) * (chunks - 1) / chunks;
}

double onebit_payload_bytes(double elements, int n) {
  constexpr double kBitsPerByte = 8;
  constexpr double kScaleBytes = 4;  // one FP32 scale per chunk (Tang et al. 2021 section 4.1)
  return elements / kBitsPerByte + kScaleBytes * n;
}

LayerCosts layer_costs(const Scenario& scenario, const models::ComputeCostModel& compute) {
  Builder b(scenario, compute);
  LayerCosts out;
  out.forward = total(b.layer_forward());
  out.backward = total(b.layer_backward());
  if (scenario.training.recompute == Recompute::full) out.recompute = out.forward;
  if (scenario.training.recompute == Recompute::selective) {
    // layer_backward() runs the recomputed attention core inline; report it separately.
    out.recompute = b.selective_recompute();
    out.backward -= out.recompute;
  }
  out.forward_gemm_flops =
      b.qkv().flops() + b.out_proj().flops() + b.ffn_in().flops() + b.ffn_out().flops();
  out.forward_attention_flops = b.attention_forward().flops;
  return out;
}

Workload build_workload(const Scenario& s, const models::ComputeCostModel& compute,
                        const WorkloadOptions& options) {
  const Parallelism& par = s.parallelism;
  const Training& tr = s.training;
  Builder builder(s, compute);
  const Dims& d = builder.dims();

  Workload w;
  w.pp = par.pp;
  w.vpp = par.vpp;
  w.tp = par.tp;
  w.dp = par.dp;
  w.cp = par.cp;
  w.micro_batches = static_cast<int>(s.micro_batches());
  w.tokens_per_step = s.tokens_per_step();
  const bool onebit = s.comm.compression.kind == Compression::onebit_adam;
  w.compressed_phase = onebit && options.compressed_phase;

  const int p = par.pp, v = par.vpp, m = w.micro_batches;
  const int num_vstages = p * v;
  const int zero = par.zero_stage;
  const int dp_ranks = par.dp * par.cp;  // gradients are reduced over dp x cp (Megatron-LM)
  const bool ds2021 = zero == 3 && par.zero3_implementation == Zero3Implementation::deepspeed_2021;

  // Layers per virtual stage and the global index of each one's first layer.
  const std::vector<int> vstage_layers = models::layers_per_virtual_stage(s);
  auto first_layer = [&](int vs) { return static_cast<int>(layer_count(vstage_layers, 0, vs)); };

  // Costs of the repeated pieces, computed once.
  const Segments fwd = builder.layer_forward();
  const Segments bwd = builder.layer_backward();
  const Segments emb_fwd = builder.embedding_forward();
  const Segments emb_bwd = builder.embedding_backward();
  const Segments head_fwd = builder.head_forward();
  const Segments head_bwd = builder.head_backward();

  // Parameters per GPU (models/transformer.hpp split) and gradient dtypes per unit.
  const models::ParameterCounts counts = models::count_parameters(s.model);
  const double layer_params = models::layer_parameters_per_tp_rank(s.model, par.tp);
  const double embedding_params = (counts.embedding) / par.tp + counts.position_embedding;
  const double head_params = (s.model.tied_embeddings ? counts.embedding : counts.lm_head) / par.tp;
  const Dtype grad_dtype = s.comm.grad_dtype;
  const Dtype emb_dtype = in_fp32_groups(s, "embedding") ? Dtype::fp32 : grad_dtype;
  const Dtype head_dtype = in_fp32_groups(s, "lm_head") ? Dtype::fp32 : grad_dtype;
  const Dtype param_dtype = tr.precision == Dtype::fp8 ? Dtype::bf16 : tr.precision;
  const double message_bytes = d.T * d.h * kActivationBytes / (d.sp ? d.t : 1.0);

  if (w.compressed_phase) {
    w.notes.push_back(
        "1-bit Adam compressed phase: momentum compressed to sign bits with error feedback and "
        "reduced after the backward pass (all-to-all then all-gather, Tang et al. 2021)");
  }
  if (tr.recompute == Recompute::selective && tr.attention == AttentionKernel::flash) {
    w.notes.push_back(
        "selective recomputation of the attention core costs no extra kernel time: the "
        "FlashAttention backward already recomputes the scores (Dao 2023)");
  }
  if (tr.tp_comm_overlap) {
    w.notes.push_back(
        "TP communication overlap: each sequence-parallel all-gather / reduce-scatter is "
        "pipelined in tp chunks with its GEMM (Transformer Engine userbuffers); exposed = "
        "comm / tp + max(comm - GEMM, 0) (tp - 1) / tp; the GEMM's slowdown from the SMs the "
        "transfers use is not modelled");
  }
  if (tr.attention == AttentionKernel::unfused) {
    w.notes.push_back(
        "unfused attention: batched Q K^T and P V GEMMs over the full score matrix with the "
        "fused softmax and attention dropout reading and writing it (Megatron-LM 2021-22)");
  }
  if (zero == 3 && !tr.reduce_per_micro_batch) {
    w.notes.push_back(
        "ZeRO-3 with per-step gradient reduction keeps unsharded gradients across micro-batches "
        "(FSDP no_sync); the memory model decides whether that fits");
  }

  for (int stage = 0; stage < p; ++stage) {
    StageProgram prog;
    prog.stage = stage;
    std::vector<Op>& ops = prog.ops;

    // Gradient units per chunk in backward order, packed into buckets.
    std::vector<std::vector<GradUnit>> units(static_cast<std::size_t>(v));
    for (int c = 0; c < v; ++c) {
      const int vs = virtual_stage(p, stage, c);
      auto& u = units[static_cast<std::size_t>(c)];
      if (vs == num_vstages - 1) {
        // Final norm goes with the head; tied embeddings on a separate last stage keep a copy
        // (Megatron-LM), synchronised with the first stage below.
        u.push_back({head_params + counts.final_norm, head_dtype, -1, "lm_head", {}});
      }
      const int l0 = first_layer(vs);
      for (int l = l0 + vstage_layers[static_cast<std::size_t>(vs)] - 1; l >= l0; --l) {
        u.push_back({layer_params, grad_dtype, l, "layer " + std::to_string(l), {}});
      }
      if (vs == 0) u.push_back({embedding_params, emb_dtype, -1, "embedding", {}});
      for (const auto& unit : u) prog.params += unit.params;
      prog.layers += vstage_layers[static_cast<std::size_t>(vs)];
    }

    auto make_calls = [&](double params, Dtype dtype) {
      std::vector<CommCall> calls;
      if (w.compressed_phase) {
        const double payload = onebit_payload_bytes(params, dp_ranks);
        // Packed bits travel as bytes: no FP8 arithmetic in the reduction.
        calls.push_back({CollKind::all_to_all, payload, Dtype::bf16});
        calls.push_back({CollKind::all_gather, payload, Dtype::bf16});
      } else {
        // DeepSpeed 2021 stage 3 all-reduces each bucket and keeps its own slice
        // (stage3.py reduce_ipg_grads -> buffered_reduce_fallback -> allreduce_bucket with
        // contiguous_gradients off, its default).
        const bool reduce_scatter = zero >= 1 && !ds2021;
        calls.push_back({reduce_scatter ? CollKind::reduce_scatter : CollKind::all_reduce,
                         params * grad_bytes_per_element(dtype), dtype});
      }
      return calls;
    };

    // Buckets: consecutive units of one dtype up to grad_bucket_bytes; a unit larger than a
    // bucket fills several. With 1-bit Adam's compressed phase everything of a chunk goes into
    // one reduction after the backward pass.
    for (int c = 0; c < v; ++c) {
      auto& u = units[static_cast<std::size_t>(c)];
      double open_params = 0;
      Dtype open_dtype = grad_dtype;
      std::string open_first;
      auto close = [&](GradUnit& at, const std::string& last) {
        if (open_params <= 0) return;
        GradBucket bkt;
        bkt.id = static_cast<int>(prog.buckets.size());
        bkt.chunk = c;
        bkt.params = open_params;
        bkt.calls = make_calls(open_params, open_dtype);
        if (ds2021) {
          bkt.stream_work_s = compute
                                  .memory_op(kDeepSpeed2021BucketBytesPerByte * open_params *
                                             grad_bytes_per_element(open_dtype))
                                  .time_s;
        }
        bkt.label = open_first == last ? open_first : open_first + " .. " + last;
        at.buckets.push_back(bkt.id);
        prog.buckets.push_back(std::move(bkt));
        open_params = 0;
      };
      for (std::size_t i = 0; i < u.size(); ++i) {
        GradUnit& unit = u[i];
        const double bytes_per = grad_bytes_per_element(unit.dtype);
        if (open_params > 0 && unit.dtype != open_dtype) close(u[i - 1], u[i - 1].name);
        double left = unit.params;
        while (left > 0) {
          if (open_params == 0) {
            open_dtype = unit.dtype;
            open_first = unit.name;
          }
          const double room = w.compressed_phase
                                  ? left
                                  : std::max(0.0, tr.grad_bucket_bytes / bytes_per - open_params);
          const double take = std::min(left, room);
          const int open_id = static_cast<int>(prog.buckets.size());
          if (take > 0 && (unit.covering.empty() || unit.covering.back() != open_id)) {
            unit.covering.push_back(open_id);
          }
          open_params += take;
          left -= take;
          if (!w.compressed_phase &&
              open_params * bytes_per >= tr.grad_bucket_bytes * (1 - 1e-12)) {
            close(unit, unit.name);
          }
        }
      }
      if (!u.empty()) close(u.back(), u.back().name);
    }

    // Tied embeddings across stages: first and last stage all-reduce the shared matrix's
    // gradient (Megatron-LM _allreduce_word_embedding_grads), once per step.
    int embedding_sync_bucket = -1;
    if (s.model.tied_embeddings && p > 1 && (stage == 0 || stage == p - 1)) {
      GradBucket bkt;
      bkt.id = static_cast<int>(prog.buckets.size());
      bkt.chunk = stage == 0 ? 0 : v - 1;
      bkt.params = counts.embedding / par.tp;
      bkt.calls = {
          {CollKind::all_reduce, bkt.params * grad_bytes_per_element(emb_dtype), emb_dtype}};
      bkt.group = Group::embedding;
      bkt.label = "tied embedding gradients";
      embedding_sync_bucket = bkt.id;
      prog.buckets.push_back(std::move(bkt));
    }

    // Parameter gathers. ZeRO-3: one per unit, issued before every forward and backward use.
    // ZeRO-1/2: one per gradient bucket, after the optimizer (or at the start of the step when
    // overlapped with the first forward, Megatron-LM overlap_param_gather).
    // (chunk, unit name) -> gather ids, in the order the unit's forward uses them.
    std::map<std::pair<int, std::string>, std::vector<int>> zero3_gather;
    if (zero == 3) {
      const std::vector<double> matrices =
          models::layer_weight_matrices_per_tp_rank(s.model, par.tp);
      for (int c = 0; c < v; ++c) {
        for (const auto& unit : units[static_cast<std::size_t>(c)]) {
          // DeepSpeed 2021 gathers each weight matrix of a layer on its own; biases and norms
          // stay whole on every rank (below stage3_param_persistence_threshold).
          std::vector<std::pair<double, std::string>> pieces = {{unit.params, ""}};
          if (ds2021 && unit.layer >= 0) {
            pieces.clear();
            for (std::size_t k = 0; k < matrices.size(); ++k) {
              pieces.push_back({matrices[k], " matrix " + std::to_string(k + 1)});
            }
          }
          for (const auto& [params, suffix] : pieces) {
            ParamGather g;
            g.id = static_cast<int>(prog.gathers.size());
            g.params = params;
            g.call = {CollKind::all_gather, params * bytes_per_element(param_dtype), param_dtype};
            g.label = unit.name + suffix + " parameters";
            zero3_gather[{c, unit.name}].push_back(g.id);
            prog.gathers.push_back(std::move(g));
          }
        }
      }
    } else if (zero >= 1) {
      // Gather ids equal the ids of the dp buckets (the embedding-sync bucket comes last).
      for (const auto& bkt : prog.buckets) {
        if (bkt.group != Group::dp) continue;
        ParamGather g;
        g.id = static_cast<int>(prog.gathers.size());
        g.params = bkt.params;
        g.call = {CollKind::all_gather, bkt.params * bytes_per_element(param_dtype), param_dtype};
        g.label = bkt.label + " parameters";
        prog.gathers.push_back(std::move(g));
      }
    }
    const bool zero12_overlap = zero >= 1 && zero < 3 && tr.overlap_param_gather;

    // Emission helpers.
    auto emit_segments = [&](const Segments& segs, ComputeKind kind, PassKind pass, int mb, int c,
                             int vs, int layer) {
      for (const auto& seg : segs) {
        Op op;
        op.pass = pass;
        op.micro_batch = mb;
        op.chunk = c;
        op.virtual_stage = vs;
        op.layer = layer;
        if (seg.is_collective) {
          op.kind = OpKind::collective;
          op.index = seg.collective;
          op.overlap_s = seg.overlap_s;
        } else {
          op.kind = OpKind::compute;
          op.compute = kind;
          op.time_s = seg.cost.time_s;
          op.flops = seg.cost.flops;
          prog.compute_s += op.time_s;
          prog.executed_flops += op.flops;
        }
        ops.push_back(op);
      }
    };
    auto emit = [&](OpKind kind, PassKind pass, int index, int mb, int c, int vs, int layer) {
      Op op;
      op.kind = kind;
      op.pass = pass;
      op.index = index;
      op.micro_batch = mb;
      op.chunk = c;
      op.virtual_stage = vs;
      op.layer = layer;
      ops.push_back(op);
    };
    auto emit_compute = [&](ComputeKind kind, const OpCost& cost, int mb, int c,
                            PassKind pass = PassKind::backward, int vs = -1, int layer = -1) {
      Op op;
      op.kind = OpKind::compute;
      op.compute = kind;
      op.pass = pass;
      op.time_s = cost.time_s;
      op.flops = cost.flops;
      op.micro_batch = mb;
      op.chunk = c;
      op.virtual_stage = vs;
      op.layer = layer;
      prog.compute_s += op.time_s;
      prog.executed_flops += op.flops;
      ops.push_back(op);
    };

    // Which micro-batch's backward of a chunk launches the reduction: the last one this rank runs
    // (gradient accumulation), or every one.
    const std::vector<PassSlot> order = pipeline_order(par.schedule, p, stage, m, v);
    std::vector<int> last_backward_mb(static_cast<std::size_t>(v), -1);
    for (const auto& slot : order) {
      if (slot.kind == PassKind::backward)
        last_backward_mb[static_cast<std::size_t>(slot.chunk)] = slot.micro_batch;
    }
    const bool reduce_inline = tr.overlap_grad_reduce && !w.compressed_phase;
    std::vector<std::pair<int, int>> deferred;  // (bucket, micro_batch) launched after backward

    // ZeRO-1/2 gathers overlapped with the first forward: issued at the start of the step in
    // forward order (the reverse of bucket order); a unit's first forward waits for the gathers
    // of every bucket holding its parameters.
    if (zero12_overlap) {
      for (int g = static_cast<int>(prog.gathers.size()) - 1; g >= 0; --g) {
        emit(OpKind::gather_issue, PassKind::forward, g, -1, -1, -1, -1);
      }
    }
    std::vector<bool> zero12_waited(prog.gathers.size(), false);
    auto await_zero12 = [&](const GradUnit& unit, int c) {
      if (!zero12_overlap) return;
      for (int bid : unit.covering) {
        if (zero12_waited[static_cast<std::size_t>(bid)]) continue;
        zero12_waited[static_cast<std::size_t>(bid)] = true;
        emit(OpKind::gather_wait, PassKind::forward, bid, -1, c, -1, unit.layer);
      }
    };

    // ZeRO-3 gathers before each unit; prefetched one unit ahead when overlapped (FSDP
    // forward_prefetch / BackwardPrefetch.BACKWARD_PRE).
    auto zero3_ids = [&](int c, const GradUnit& unit) -> const std::vector<int>& {
      return zero3_gather.at({c, unit.name});
    };
    // DeepSpeed 2021: the flat buffer zero-filled, a device-wide synchronize (every reduction
    // started must finish), the host's all_gather call with the GPU idle, the all-gather itself,
    // then PyTorch's copy of each rank's piece out of the flat buffer into the list of views
    // DeepSpeed passes (one copy kernel per rank).
    OpCost ds2021_call;
    ds2021_call.launch_s =
        std::max(0.0, kDeepSpeed2021AllGatherCallS -
                          kDeepSpeed2021AllGatherCallRanks * s.cluster.gpu.kernel_launch_s);
    ds2021_call.time_s = ds2021_call.launch_s;
    auto ds2021_gathers = [&](const GradUnit& unit, int c, PassKind pk, int mb, int vs) {
      for (int id : zero3_ids(c, unit)) {
        const double bytes = prog.gathers[static_cast<std::size_t>(id)].call.bytes;
        emit_compute(ComputeKind::gather_copy,
                     compute.memory_op(kGatherZeroFillBytesPerByte * bytes), mb, c, pk, vs,
                     unit.layer);
        emit(OpKind::grad_wait, pk, -1, mb, c, vs, unit.layer);
        emit_compute(ComputeKind::gather_copy, ds2021_call, mb, c, pk, vs, unit.layer);
        emit(OpKind::gather_issue, pk, id, mb, c, vs, unit.layer);
        emit(OpKind::gather_wait, pk, id, mb, c, vs, unit.layer);
        OpCost copies = compute.memory_op(kGatherCopyBytesPerByte * bytes / dp_ranks);
        copies.time_s *= dp_ranks;
        emit_compute(ComputeKind::gather_copy, copies, mb, c, pk, vs, unit.layer);
      }
    };

    for (const auto& slot : order) {
      const int c = slot.chunk;
      const int mb = slot.micro_batch;
      const int vs = virtual_stage(p, stage, c);
      const auto& u = units[static_cast<std::size_t>(c)];
      const PassKind pk = slot.kind;
      // Units in the order this pass visits them (u is in backward order).
      std::vector<const GradUnit*> pass_units;
      for (const auto& unit : u) pass_units.push_back(&unit);
      if (pk == PassKind::forward) std::reverse(pass_units.begin(), pass_units.end());
      const std::size_t n_units = pass_units.size();

      auto zero3_before = [&](std::size_t i) {
        if (zero != 3) return;
        if (ds2021) {
          ds2021_gathers(*pass_units[i], c, pk, mb, vs);
          return;
        }
        auto issue = [&](std::size_t k) {
          for (int id : zero3_ids(c, *pass_units[k])) {
            emit(OpKind::gather_issue, pk, id, mb, c, vs, pass_units[k]->layer);
          }
        };
        if (tr.overlap_param_gather) {
          if (i == 0) issue(0);
          if (i + 1 < n_units) issue(i + 1);
        } else {
          issue(i);
        }
        for (int id : zero3_ids(c, *pass_units[i])) {
          emit(OpKind::gather_wait, pk, id, mb, c, vs, pass_units[i]->layer);
        }
      };

      if (pk == PassKind::forward) {
        if (vs > 0) {
          Op op;
          op.kind = OpKind::recv;
          op.pass = pk;
          op.micro_batch = mb;
          op.chunk = c;
          op.virtual_stage = vs;
          op.bytes = message_bytes;
          ops.push_back(op);
        }
        for (std::size_t i = 0; i < n_units; ++i) {
          const GradUnit& unit = *pass_units[i];
          zero3_before(i);
          if (mb == 0) await_zero12(unit, c);  // each chunk's first forward is micro-batch 0
          if (unit.layer >= 0) {
            emit_segments(fwd, ComputeKind::forward, pk, mb, c, vs, unit.layer);
          } else if (unit.name == "embedding") {
            emit_segments(emb_fwd, ComputeKind::embedding, pk, mb, c, vs, -1);
          } else {
            emit_segments(head_fwd, ComputeKind::lm_head, pk, mb, c, vs, -1);
          }
        }
        if (vs < num_vstages - 1) {
          Op op;
          op.kind = OpKind::send;
          op.pass = pk;
          op.micro_batch = mb;
          op.chunk = c;
          op.virtual_stage = vs + 1;
          op.bytes = message_bytes;
          ops.push_back(op);
        }
      } else {
        if (vs < num_vstages - 1) {
          Op op;
          op.kind = OpKind::recv;
          op.pass = pk;
          op.micro_batch = mb;
          op.chunk = c;
          op.virtual_stage = vs;
          op.bytes = message_bytes;
          ops.push_back(op);
        }
        const bool reducing =
            tr.reduce_per_micro_batch || mb == last_backward_mb[static_cast<std::size_t>(c)];
        for (std::size_t i = 0; i < n_units; ++i) {
          const GradUnit& unit = *pass_units[i];
          zero3_before(i);
          if (unit.layer >= 0) {
            if (models::layer_recomputed(s, unit.layer - first_layer(vs))) {
              emit_segments(fwd, ComputeKind::recompute, pk, mb, c, vs, unit.layer);
              // The recompute forward gathered the layer's matrices again (its module hooks
              // fire); DeepSpeed keeps them for the backward only while they fit under
              // stage3_max_live_parameters, else it releases and gathers them once more.
              if (ds2021 && unit.params > kDeepSpeedMaxLiveParameters) {
                ds2021_gathers(unit, c, pk, mb, vs);
              }
            }
            emit_segments(bwd, ComputeKind::backward, pk, mb, c, vs, unit.layer);
          } else if (unit.name == "embedding") {
            emit_segments(emb_bwd, ComputeKind::embedding, pk, mb, c, vs, -1);
          } else {
            emit_segments(head_bwd, ComputeKind::lm_head, pk, mb, c, vs, -1);
          }
          if (reducing) {
            for (int bid : unit.buckets) {
              if (reduce_inline) {
                emit(OpKind::grad_ready, pk, bid, mb, c, vs, unit.layer);
              } else {
                deferred.push_back({bid, mb});
              }
            }
          }
        }
        if (vs > 0) {
          Op op;
          op.kind = OpKind::send;
          op.pass = pk;
          op.micro_batch = mb;
          op.chunk = c;
          op.virtual_stage = vs - 1;
          op.bytes = message_bytes;
          ops.push_back(op);
        }
        // Without overlap, a per-micro-batch reduction blocks right after its backward pass.
        if (!reduce_inline && !w.compressed_phase && tr.reduce_per_micro_batch) {
          for (const auto& [bid, dmb] : deferred) emit(OpKind::grad_ready, pk, bid, dmb, c, vs, -1);
          deferred.clear();
          emit(OpKind::grad_wait, pk, -1, mb, c, vs, -1);
        }
      }
    }

    // After the last backward: 1-bit Adam compression, deferred reductions, tied-embedding sync.
    if (w.compressed_phase) {
      const double elements = prog.params;
      const OpCost comp = compute.memory_op(kOnebitErrorFeedbackBytesPerElement * elements *
                                            (1.0 + 1.0 / dp_ranks));
      emit_compute(ComputeKind::compression, comp, -1, -1);
    }
    for (const auto& [bid, dmb] : deferred) {
      emit(OpKind::grad_ready, PassKind::backward, bid, dmb,
           prog.buckets[static_cast<std::size_t>(bid)].chunk, -1, -1);
    }
    if (embedding_sync_bucket >= 0) {
      emit(OpKind::grad_ready, PassKind::backward, embedding_sync_bucket, -1, -1, -1, -1);
    }
    emit(OpKind::grad_wait, PassKind::backward, -1, -1, -1, -1, -1);

    // Optimizer: Adam over this GPU's shard of the parameters (sharded over dp x cp with ZeRO).
    const double shard = zero >= 1 ? prog.params / dp_ranks : prog.params;
    emit_compute(
        ComputeKind::optimizer,
        compute.memory_op(
            (adam_bytes_per_param(tr.optimizer_state_dtype) + kGradNormBytesPerParam) * shard),
        -1, -1);

    // ZeRO-1/2 without overlap: gather the updated parameters now and wait.
    if (zero >= 1 && zero < 3 && !tr.overlap_param_gather) {
      for (const auto& g : prog.gathers)
        emit(OpKind::gather_issue, PassKind::forward, g.id, -1, -1, -1, -1);
      for (const auto& g : prog.gathers)
        emit(OpKind::gather_wait, PassKind::forward, g.id, -1, -1, -1, -1);
    }

    w.stages.push_back(std::move(prog));
  }
  w.collectives = builder.collectives();
  return w;
}

}  // namespace clustersim::workload
