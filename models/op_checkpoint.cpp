#include "models/op_checkpoint.hpp"

namespace clustersim::models {

namespace {

constexpr double kFlopsPerMac = 2;
constexpr double kActivationBytes = 2;  // BF16 matmul and attention outputs
constexpr double kLogSumExpBytes = 4;   // FP32, one per query head and token (FlashAttention)

}  // namespace

std::vector<LayerMatmul> layer_matmuls(const ModelSpec& model) {
  std::vector<LayerMatmul> out = {LayerMatmul::query, LayerMatmul::key, LayerMatmul::value,
                                  LayerMatmul::out_proj};
  if (model.ffn == FfnKind::swiglu) out.push_back(LayerMatmul::ffn_gate);
  out.push_back(LayerMatmul::ffn_up);
  out.push_back(LayerMatmul::ffn_down);
  return out;
}

double matmul_in_width(const ModelSpec& model, LayerMatmul mm) {
  switch (mm) {
    case LayerMatmul::out_proj: return static_cast<double>(model.num_heads) * model.head_dim();
    case LayerMatmul::ffn_down: return model.ffn_hidden;
    default: return model.hidden;
  }
}

double matmul_out_width(const ModelSpec& model, LayerMatmul mm) {
  switch (mm) {
    case LayerMatmul::query: return static_cast<double>(model.num_heads) * model.head_dim();
    case LayerMatmul::key:
    case LayerMatmul::value: return static_cast<double>(model.num_kv_heads) * model.head_dim();
    case LayerMatmul::ffn_gate:
    case LayerMatmul::ffn_up: return model.ffn_hidden;
    case LayerMatmul::out_proj:
    case LayerMatmul::ffn_down: return model.hidden;
  }
  return 0;
}

bool column_parallel(LayerMatmul mm) {
  return mm != LayerMatmul::out_proj && mm != LayerMatmul::ffn_down;
}

std::vector<LayerMatmul> op_checkpoint_recomputed(const ModelSpec& model) {
  const std::vector<LayerMatmul> all = layer_matmuls(model);
  std::vector<LayerMatmul> out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    // The policy's count is 1-based: the 2nd, 4th, ... aten.mm are recomputed.
    if ((i + 1) % 2 == 0) out.push_back(all[i]);
  }
  return out;
}

double op_checkpoint_recompute_flops_per_token(const ModelSpec& model) {
  double flops = 0;
  for (LayerMatmul mm : op_checkpoint_recomputed(model)) {
    flops += kFlopsPerMac * matmul_in_width(model, mm) * matmul_out_width(model, mm);
  }
  return flops;
}

OpCheckpointBytes op_checkpoint_bytes_per_token(const ModelSpec& model) {
  OpCheckpointBytes out;
  out.replicated = kActivationBytes * model.hidden;  // the block's input
  const std::vector<LayerMatmul> recomputed = op_checkpoint_recomputed(model);
  for (LayerMatmul mm : layer_matmuls(model)) {
    bool dropped = false;
    for (LayerMatmul r : recomputed) dropped = dropped || r == mm;
    if (dropped) continue;
    const double bytes = kActivationBytes * matmul_out_width(model, mm);
    (column_parallel(mm) ? out.sharded : out.replicated) += bytes;
  }
  const double heads = model.num_heads;
  out.sharded += kActivationBytes * heads * model.head_dim() + kLogSumExpBytes * heads;
  return out;
}

double op_checkpoint_stored_bytes(const ModelSpec& model, double tokens, int tp,
                                  bool sequence_parallel) {
  const OpCheckpointBytes b = op_checkpoint_bytes_per_token(model);
  const double t = tp;
  return tokens * ((sequence_parallel ? b.replicated / t : b.replicated) + b.sharded / t);
}

}  // namespace clustersim::models
