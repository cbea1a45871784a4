// The memory traffic of a step's elementwise kernels (bytes and passes over a tensor, with
// their sources) and the GEMM conjugates of a backward pass, shared by the files that build
// PassBuilder's passes (pass_builder.cpp, pass_builder_moe.cpp). Internal to workload/.
#pragma once

#include <array>
#include <cstddef>

#include "models/compute_cost.hpp"
#include "workload/pass_builder.hpp"

namespace clustersim::workload::kernel_traffic {

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
// Where the GPU runs FP8 GEMMs in every layout (Blackwell: Transformer Engine 2.9's
// is_non_tn_fp8_gemm_supported(), compute capability 10.x), the quantizers write the row-wise
// copy only (pytorch/csrc/quantizer.cpp: with_transpose = columnwise_usage &&
// !nvte_is_non_tn_fp8_gemm_supported()): read 2 B, write 1 B.
constexpr double kFp8CastBytes = 2 + 1;
// An operand that sequence parallelism all-gathers in FP8 (a column-parallel linear's input, a
// row-parallel linear's output gradient) is quantized row-wise on this rank's shard before the
// gather, and on Hopper transposed after it where the GEMM needs the other layout
// (transformer_engine/pytorch/distributed.py _all_gather_fp8, TE 2.9: "we cannot directly
// gather the transposed fp8 tensor"; then needs_transpose when columnwise_usage and
// !is_non_tn_fp8_gemm_supported()): the transpose reads and writes 1 B per gathered element.
constexpr double kFp8TransposeBytes = 1 + 1;
// FP8 current scaling (Fp8Recipe::current; Transformer Engine 2.9, 70f5366:
// pytorch/csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl and
// common/recipe/current_scaling.cu): each quantization runs zero_amax_kernel, an amax kernel
// reading the BF16 input, compute_scale_from_amax_kernel and then the cast. After a TE norm
// (LayerNormLinear; pytorch/csrc/extensions/normalization.cpp) the norm computes the amax as it
// writes its output and quantize_with_amax adds only compute_scale_from_amax before the cast;
// PyTorch's own norm (kernel_fusion eager or compiled_blocks: torchtitan's RMSNorm) does not, so
// there the cast takes the amax pass as any other.
// No fused multi-tensor kernel serves current scaling (pytorch/csrc/extensions/cast.cpp,
// multi_tensor_quantize_impl: "only have fused kernel for FP8 delayed scaling").
constexpr double kCurrentScalingAmaxBytes = 2;         // the amax kernel reads the input once
constexpr double kCurrentScalingSmallKernels = 2;      // zero_amax and compute_scale_from_amax
constexpr double kCurrentScalingAfterNormKernels = 1;  // compute_scale_from_amax
// MXFP8 (Fp8Recipe::mxfp8; Transformer Engine 2.9, 70f5366: MXFP8Quantizer::quantize ->
// nvte_quantize_v2 -> cast_mxfp8_2D_kernel, common/util/cast_kernels.cuh): one kernel reads the
// BF16 operand once and writes its row-wise and its column-wise FP8 copies, each with one E8M0
// scale byte per block of 32 elements (MXFP8_BLOCK_SIZE, common/swizzle/swizzle.cu). A block's
// scale comes from its own 32 values: no amax pass and no scale kernel.
constexpr double kMxfp8BlockElements = 32;
constexpr double kMxfp8CopyBytes = 1 + 1 / kMxfp8BlockElements;  // one FP8 copy and its scales
constexpr double kMxfp8QuantizeBytes = 2 + 2 * kMxfp8CopyBytes;
// Before every MXFP8 GEMM Transformer Engine rearranges each operand's scales into the layout the
// tensor cores read (pytorch/csrc/extensions/gemm.cpp: swizzle_scaling_factors for A and for B;
// a grouped GEMM's multi_tensor_swizzle_scaling_factors, one kernel per operand list): one
// kernel per operand, reading its scale bytes and writing them to a fresh buffer. Bytes per
// operand element:
constexpr double kMxfp8SwizzleBytes = 2 / kMxfp8BlockElements;
// The block-scaled GEMM kernels themselves run slower than per-tensor FP8 ones on Blackwell:
// Transformer Engine's GEMM profiling guide (docs/examples/gemm_profiling/gemm_profiling.rst,
// NVIDIA/TransformerEngine 1609c890e, 2026-06), benchmarks/gemm/benchmark_gemm.py with
// --pre-quantize (inputs already quantized: kernel time only) on a B300 SXM6, the twelve GEMMs of
// a layer at hidden 4096, FFN 16384 and 15,872 tokens: 7.161 ms per layer with MXFP8 against
// 6.812 ms with FP8 current scaling (forward 2.365 / 2.158, input gradients 2.397 / 2.329,
// weight gradients 2.400 / 2.325). MXFP8 GEMMs' compute time is the FP8 curve's times:
constexpr double kMxfp8GemmTimeRatio = 7.161 / 6.812;
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
// repeat_kv (torchtitan's Llama): expand + reshape copies K and V to every query head (read the
// grouped heads, write the repeated ones); its backward sums the repeated gradients back (read
// repeated, write grouped). Per element of one grouped plus one repeated head-row.
constexpr double kRepeatKvPasses = 1;
// PyTorch context parallelism (torch/distributed/tensor/experimental/_attention.py,
// _SDPAMerger with convert_to_f32 true, the default): every ring step after the first merges
// its 16-bit output into an FP32 one, out - sigmoid(block_lse - lse) * (out - block_out), in
// eager element-wise kernels. Bytes per output element and step: the cast (read 2, write 4),
// out - block_out (read 4 + 4, write 4), the product (read 4, write 4) and the difference
// (read 4 + 4, write 4); the logsumexp tensors are a head dimension smaller and left out.
constexpr double kTorchCpMergeBytes = 6 + 12 + 8 + 12;
// Once per attention call: the first output cast to FP32 and the result cast back.
constexpr double kTorchCpOutputCastBytes = (2 + 4) + (4 + 2);
// Backward: every ring step adds its 16-bit dQ, dK and dV into FP32 accumulators (read 4 + 2,
// write 4 per element).
constexpr double kTorchCpAccumulateBytes = 4 + 2 + 4;
// _templated_ring_attention and its backward copy the K/V chunk they hold into one flat send
// buffer before every step but the last (torch.cat([key.flatten(), value.flatten()]): read and
// write each 16-bit element), and the backward copies its FP32 dK/dV accumulator the same way
// before every step's send (read 4, write 4). The backward's accumulators start as zeros_like
// in FP32 (write 4 per element of dQ, dK, dV) and end cast back to the activation dtype (read 4,
// write 2). Bytes per element of this rank's K/V chunk (or of dQ).
constexpr double kTorchCpKvCatBytes = 2 + 2;
constexpr double kTorchCpGradKvCatBytes = 4 + 4;
constexpr double kTorchCpGradInitBytes = 4;
constexpr double kTorchCpGradCastBytes = 4 + 2;
// Transformer Engine's ring context parallelism (CpImplementation::p2p; TransformerEngine v2.9
// pytorch/attention/dot_product_attention/context_parallel.py AttnFuncWithCPAndKVP2P, the same
// steps in v1.8's pytorch/attention.py), 16-bit outside FP8 attention. Forward, bytes per output
// element: flash_attn_fwd_out_correction_init rescales the first step's output into the running
// one (read, write); flash_attn_fwd_out_correction merges each later step's: the step's attention
// call writes its own output, which the fused correction reads beside the running output it
// reads and writes. The ring's last rank merges whole outputs at every step (the others half of
// them at some steps); it is the one counted.
constexpr double kTeCpFirstStepBytes = 2 + 2;
constexpr double kTeCpStepMergeBytes = 2 + 2 + 2 + 2;
// Backward, per element of dQ and of the K/V chunk's dK and dV: the first step's gradients are
// copied into the accumulators (dq.copy_: read, write), every later step's are written by its
// attention call and added (dq.add_, dk.add_, dv.add_: read both, write).
constexpr double kTeCpGradFirstStepBytes = 2 + 2;
constexpr double kTeCpGradStepAddBytes = 2 + 2 + 2 + 2;
// Transformer Engine's all-gather context parallelism (CpImplementation::all_gather;
// TransformerEngine v2.9 context_parallel.py AttnFuncWithCPAndKVAllGather), 16-bit, per element.
// The gathered K and V of the whole sequence are put back in sequence order (torch.index_select
// over the 2 cp chunks: read, write), in the forward and again in the backward, and so are the
// whole sequence's dK and dV before their reduce-scatter. Each of the two attention calls (one per
// local query chunk) writes its own output (dQ), copied into this rank's (copy_: read, write).
// The backward's dK and dV accumulators over the whole sequence start as torch.zeros (write).
constexpr double kTeCpKvReorderBytes = 2 + 2;
constexpr double kTeCpChunkCopyBytes = 2 + 2;
constexpr double kTeCpGradZeroBytes = 2;
// Megatron-LM's unfused vocab-parallel cross entropy (CrossEntropy::unfused; Megatron-LM
// f2e5db402c megatron/core/tensor_parallel/cross_entropy.py, the same ops as 2021's
// megatron/mpu/cross_entropy.py after the model's output.float()), bytes per logit, one entry per
// kernel: the cast to FP32 (2 + 4), the max over the vocabulary (read 4), the in-place subtract
// (4 + 4), exp (4 + 4), the sum (read 4) and the in-place divide into the softmax (4 + 4). Per
// token it runs the target's mask, gather and loss in 12 small kernels. Backward: the
// in-place multiply by the loss gradient (4 + 4) and autograd's cast of the FP32 gradient to the
// logits' dtype (4 + 2), after 5 small kernels on the targets' entries.
inline constexpr std::array<double, 6> kUnfusedCrossEntropyForward = {2 + 4, 4, 4 + 4,
                                                                      4 + 4, 4, 4 + 4};
inline constexpr std::array<double, 2> kUnfusedCrossEntropyBackward = {4 + 4, 4 + 2};
constexpr double kUnfusedCrossEntropyTokenKernelsForward = 12;
constexpr double kUnfusedCrossEntropyTokenKernelsBackward = 5;

// PyTorch's eager kernels of torchtitan's Llama (KernelFusion::eager, and for the final norm and
// the loss KernelFusion::compiled_blocks; pytorch/torchtitan 9dec370). Bytes per element, one
// entry per kernel; FP32 intermediates take 4 bytes.
// RMSNorm (torchtitan/models/norms.py RMSNorm): _norm(x.float()).type_as(x) * weight, with
// _norm(x) = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps). The cast (read 2, write 4), the
// square (4 + 4), the mean (read 4), the product with the row's rsqrt (4 + 4), the cast back
// (4 + 2), the weight (2 + 2).
inline constexpr std::array<double, 6> kEagerRmsNormForward = {2 + 4, 4 + 4, 4,
                                                               4 + 4, 4 + 2, 2 + 2};
// Autograd's kernels for them: the weight's product (dy * w: 2 + 2), the weight gradient
// (dy * y: 2 + 2 + 2, summed over tokens: read 2), the cast back's (2 + 4), the row product's
// (dy * r: 4 + 4; dy * x: 4 + 4 + 4, summed per row: read 4), the mean's expanded gradient
// (write 4), the square's (2 x: 4 + 4; times the gradient: 4 + 4 + 4), the two gradients of x
// added (4 + 4 + 4) and the first cast's (4 + 2).
inline constexpr std::array<double, 12> kEagerRmsNormBackward = {
    2 + 2, 2 + 2 + 2, 2, 2 + 4, 4 + 4, 4 + 4 + 4, 4, 4, 4 + 4, 4 + 4 + 4, 4 + 4 + 4, 4 + 2};
// Kernels on one value per row (the eps add and the rsqrt; backward, their gradients).
constexpr double kEagerRmsNormRowKernels = 2;
// RoPE (apply_rotary_emb in torchtitan/models/llama/model.py), for Q and for K: the cast to FP32
// (2 + 4), the complex product with the frequencies (4 + 4 per real element), the cast back
// (4 + 2); the backward runs the three gradients (2 + 4, 4 + 4, 4 + 2).
inline constexpr std::array<double, 3> kEagerRopeForward = {2 + 4, 4 + 4, 4 + 2};
inline constexpr std::array<double, 3> kEagerRopeBackward = {2 + 4, 4 + 4, 4 + 2};
// SwiGLU (FeedForward.forward: w2(silu(w1(x)) * w3(x))), per element of the FFN width: silu
// (2 + 2), the product (2 + 2 + 2); backward, the product's two gradients (2 + 2 + 2 each) and
// silu's (read dy and x, write dx).
inline constexpr std::array<double, 2> kEagerSwigluForward = {2 + 2, 2 + 2 + 2};
inline constexpr std::array<double, 3> kEagerSwigluBackward = {2 + 2 + 2, 2 + 2 + 2, 2 + 2 + 2};
// Attention's output made contiguous after its transpose (output.transpose(1, 2).contiguous()).
constexpr double kEagerAttentionOutputCopyBytes = 2 + 2;
// The loss (train.py loss_fn: cross_entropy(pred.flatten(0, 1).float(), labels)), per logit:
// the cast to FP32 (2 + 4) and log_softmax (4 + 4), the target's gather being per token;
// backward, NLL's zero-filled gradient (write 4), log_softmax's (4 + 4 + 4), the cast back (4 + 2).
inline constexpr std::array<double, 2> kEagerCrossEntropyForward = {2 + 4, 4 + 4};
inline constexpr std::array<double, 3> kEagerCrossEntropyBackward = {4, 4 + 4 + 4, 4 + 2};

// PyTorch's eager kernels moving bytes[i] per element over `elements` elements each.
template <std::size_t N>
models::OpCost eager_kernels(const models::ComputeCostModel& c, const std::array<double, N>& bytes,
                             double elements) {
  models::OpCost out;
  for (const double b : bytes) out += c.pytorch_op(b * elements);
  return out;
}

constexpr double kEmbeddingForwardPasses = 2;   // read table rows, write activations
constexpr double kEmbeddingBackwardPasses = 3;  // read dy, read-modify-write gradient rows
// Cross entropy: forward reads the logits and writes the softmax (FP32); backward reads it and
// writes the 16-bit logit gradient.
constexpr double kCrossEntropyForwardBytesPerLogit = 2 * kLogitBytes;
constexpr double kCrossEntropyBackwardBytesPerLogit = kLogitBytes + kActivationBytes;
// Vocab-parallel cross entropy all-reduces three per-token FP32 values across TP: the logit
// maximum, the target logit and the sum of exponentials (Megatron-LM cross_entropy.py).
constexpr int kCrossEntropyAllReduces = 3;

// Mixture of experts (Megatron-Core moe/router.py and moe_utils.py): the router's scores are
// FP32 (read the logits, write the probabilities before top-k); token permutation and
// unpermutation each read and write every routed copy of a token's hidden state once.
constexpr double kRouterScoreBytes = 4.0;
constexpr double kRouterPasses = 2;
constexpr double kPermutePasses = 2;
// FP8 dispatch (DeepSeek-V3 §3.3.2): one byte per element plus one FP32 scale per 1 x 128 tile
// of the activation (its fine-grained quantization, §3.3.1).
constexpr double kFp8DispatchBytes = 1.0 + 4.0 / 128.0;
// FP8 padding of the local experts' tokens (Megatron-Core 92c8482e transformer/moe/experts.py
// TEGroupedMLP: Fp8Padding before fc1, Fp8Unpadding after fc2, whenever config.fp8 is set;
// Transformer Engine 70f5366 module/fp8_padding.py returns early only when every expert's token
// count is already a multiple of 16, which routed counts almost never all are). Each is one
// multi_padding / multi_unpadding kernel (common/util/padding.cu) reading and writing the
// tokens' 16-bit hidden states; the routing probabilities are padded by a kernel of their own
// (one value per token, its bytes left out). The backward runs the mirror kernels.
constexpr double kExpertPaddingBytes = 2 + 2;
constexpr double kExpertPaddingProbKernels = 1;

// Passes over the MLP's intermediate tensor (f wide) that its activation makes.
inline double activation_passes(FfnKind ffn, PassKind pass) {
  const bool fwd = pass == PassKind::forward;
  switch (ffn) {
    case FfnKind::gelu: return fwd ? kGeluForwardPasses : kGeluBackwardPasses;
    case FfnKind::swiglu: return fwd ? kSwigluForwardPasses : kSwigluBackwardPasses;
    case FfnKind::squared_relu: return fwd ? kSquaredReluForwardPasses : kSquaredReluBackwardPasses;
  }
  return 0;
}

// Forward and backward GEMMs: dgrad (m x k = dY[m x n] W^T) and wgrad (k x n = X^T dY).
inline models::GemmShape dgrad(const models::GemmShape& g) {
  return {g.m, g.k, g.n};
}
inline models::GemmShape wgrad(const models::GemmShape& g) {
  return {g.k, g.n, g.m};
}

// Ends the kernel run `c` (if any) as a segment of `out`.
inline void flush(Segments& out, models::OpCost& c) {
  if (c.time_s > 0) out.push_back(Segment{false, c, -1});
  c = models::OpCost{};
}

}  // namespace clustersim::workload::kernel_traffic
