// Op-level selective checkpointing with torchtitan's policy (models/op_checkpoint.hpp): which
// matmuls are recomputed, their FLOPs and what a block keeps, against hand counts.
#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "models/op_checkpoint.hpp"
#include "models/transformer.hpp"

using namespace clustersim;
using namespace clustersim::models;

namespace {

// A Llama-shaped block: h = 1024, 8 query heads and 2 K/V heads of 128, SwiGLU of 3584.
ModelSpec llama_like() {
  ModelSpec m;
  m.name = "test-llama";
  m.num_layers = 4;
  m.hidden = 1024;
  m.num_heads = 8;
  m.num_kv_heads = 2;
  m.ffn_hidden = 3584;
  m.vocab = 32000;
  m.max_seq_len = 4096;
  m.ffn = FfnKind::swiglu;
  m.norm = "rmsnorm";
  return m;
}

}  // namespace

TEST_CASE("op-level checkpointing recomputes every second matmul of a block, in FP8 too") {
  const ModelSpec m = llama_like();
  // torchtitan's Llama: wq, wk, wv, wo, w1, w3, w2; the 2nd, 4th and 6th are recomputed.
  using M = LayerMatmul;
  CHECK(layer_matmuls(m) == std::vector<M>{M::query, M::key, M::value, M::out_proj, M::ffn_gate,
                                           M::ffn_up, M::ffn_down});
  CHECK(op_checkpoint_recomputed(m) == std::vector<M>{M::key, M::out_proj, M::ffn_up});
  ModelSpec gelu = m;
  gelu.ffn = FfnKind::gelu;  // q, k, v, o, fc1, fc2
  CHECK(op_checkpoint_recomputed(gelu) == std::vector<M>{M::key, M::out_proj, M::ffn_down});

  // FLOPs per token: 2 (1024 x 256 + 1024 x 1024 + 1024 x 3584) = 9961472.
  CHECK(op_checkpoint_recompute_flops_per_token(m) == 9961472.0);
  const FlopsPerToken f =
      flops_per_token(m, 4096, Recompute::selective_op, FlopConvention::megatron);
  CHECK(f.recompute == 4 * 9961472.0);
  CHECK(f.model() == flops_per_token(m, 4096, Recompute::none, FlopConvention::megatron).model());
}

TEST_CASE(
    "op-level checkpointing keeps the block input, the saved matmul outputs and attention's") {
  const ModelSpec m = llama_like();
  // BF16, bytes per token: the input (2 x 1024) and w2's output (2 x 1024) are full width;
  // wq's (2 x 1024), wv's (2 x 256), w1's (2 x 3584), attention's output (2 x 1024) and its
  // FP32 log-sum-exp (4 x 8 heads) are split by TP.
  const OpCheckpointBytes b = op_checkpoint_bytes_per_token(m);
  CHECK(b.replicated == 4096.0);
  CHECK(b.sharded == 2048.0 + 512 + 7168 + 2048 + 32);
  // 4096 tokens on one of 2 TP ranks with sequence parallelism: 4096 (4096 / 2 + 11808 / 2).
  CHECK(op_checkpoint_stored_bytes(m, 4096, 2, true) == 4096.0 * 7952);
  // The dense memory model uses the same count, and the whole block as its transient.
  const LayerActivations a = layer_activation_bytes(m, 4096, 1, 2, true, Recompute::selective_op,
                                                    AttentionKernel::flash, false, false);
  CHECK(a.stored == 4096.0 * 7952);
  CHECK(a.transient == layer_activation_bytes(m, 4096, 1, 2, true, Recompute::none,
                                              AttentionKernel::flash, false, false)
                           .stored);
}
