// PyTorch's op-level selective activation checkpointing as torchtitan applies it to each
// Transformer block (Recompute::selective_op). pytorch/torchtitan 9dec370,
// torchtitan/parallelisms/parallelize_llama.py, _save_list and _custom_policy: the output of an
// op is saved for the backward when the op is in the save list (aten.mm, the
// scaled_dot_product_attention kernels, the reduce-scatter of async TP, and aten.abs/aten.max of
// FP8 scaling), except every second aten.mm of the block's forward; every other op of the block
// is recomputed from the block's input in its backward. The aten.mm count starts afresh in each
// block (the policy's counter is made per checkpointed call).
//
// FP8 linear layers (torchao's Float8Linear, precision fp8; torchao v0.7.0
// torchao/float8/float8_linear.py) call torch.mm on Float8Tensor arguments: the policy's dispatch
// mode sees aten.mm before the tensor subclass turns it into torch._scaled_mm (modes take
// precedence over subclasses), so FP8 blocks save and recompute the same matmuls as BF16 ones.
#pragma once

#include <vector>

#include "core/scenario.hpp"

namespace clustersim::models {

// The matmuls of a dense Transformer block. torchtitan's Llama runs them in this order: wq, wk,
// wv, wo, then w1 (gate), w3 (up), w2 (down) of the SwiGLU MLP; a GeLU or squared-ReLU MLP has
// up and down only.
enum class LayerMatmul : unsigned char { query, key, value, out_proj, ffn_gate, ffn_up, ffn_down };

// The block's matmuls in forward order.
std::vector<LayerMatmul> layer_matmuls(const ModelSpec& model);
// Input and output widths of one matmul, elements per token, before tensor parallelism.
double matmul_in_width(const ModelSpec& model, LayerMatmul mm);
double matmul_out_width(const ModelSpec& model, LayerMatmul mm);
// Column-parallel under tensor parallelism (outputs split by heads or FFN columns); the output
// projection and the down projection are row-parallel (inputs split, outputs full width).
bool column_parallel(LayerMatmul mm);

// The matmuls whose outputs the policy drops and recomputes in the backward, in forward order.
std::vector<LayerMatmul> op_checkpoint_recomputed(const ModelSpec& model);

// Forward FLOPs per token of one block's recomputed matmuls (2 FLOPs per multiply-add).
double op_checkpoint_recompute_flops_per_token(const ModelSpec& model);

// Bytes per token one block keeps from its forward to its backward, before the layout: the
// block's input (the checkpoint's input, kept by the checkpoint wrapper) and the saved matmul
// outputs (16-bit), attention's output (16-bit) and its FP32 log-sum-exp per query head.
struct OpCheckpointBytes {
  double replicated = 0;  // block input, row-parallel matmul outputs: split by SP only
  double sharded = 0;     // column-parallel outputs, attention output: split by TP
};
OpCheckpointBytes op_checkpoint_bytes_per_token(const ModelSpec& model);
// The same for `tokens` local tokens on one GPU of a tensor-parallel group of `tp`, the
// replicated part split by sequence parallelism.
double op_checkpoint_stored_bytes(const ModelSpec& model, double tokens, int tp,
                                  bool sequence_parallel);

}  // namespace clustersim::models
