// ZeRO parameter all-gathers: which exist on a stage (ZeRO-3: one per unit, or one per weight
// matrix under DeepSpeed 2021, gathered before every forward and backward use as FSDP and
// DeepSpeed stage 3 do; ZeRO-1/2: one per gradient bucket, gathering the updated parameters
// after the optimizer, Rajbhandari et al. 2020) and the ops DeepSpeed 2021 issues around each.
#pragma once

#include <vector>

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "workload/grad_buckets.hpp"
#include "workload/op_builder.hpp"
#include "workload/workload.hpp"

namespace clustersim::workload {

// The 16-bit dtype of the model's weights and their gradients (BF16 under FP8 recipes).
Dtype weight_dtype(const Scenario& s);
// The dtype parameters are gathered in: the 16-bit weights, or FP8 with training.fp8_param_gather
// (16-bit again under MXFP8, whose parameters Megatron-Core gathers through the 16-bit gradient
// buffer and quantizes after: mxfp8_params_requantized).
Dtype gathered_param_dtype(const Scenario& s);
// MXFP8 parameters (fp8_param_gather under the mxfp8 recipe): after each step's all-gather the
// gathered 16-bit weights are quantized into the MXFP8 parameters.
bool mxfp8_params_requantized(const Scenario& s);

// ZeRO-3: appends to `gathers` one gather per unit of every chunk (chunk order, each chunk's
// units in backward order) and records the ids on the unit; DeepSpeed 2021 gathers each weight
// matrix of a layer on its own (biases and norms stay whole on every rank, below
// stage3_param_persistence_threshold).
void add_zero3_gathers(const Scenario& s, std::vector<std::vector<GradUnit>>& units_per_chunk,
                       std::vector<ParamGather>& gathers);

// ZeRO-1/2: one gather per data-parallel bucket (the routed experts' over the
// expert-data-parallel group), with the bucket's id (the embedding-sync bucket, which comes
// last, has none).
void add_bucket_gathers(const Scenario& s, const std::vector<GradBucket>& buckets,
                        std::vector<ParamGather>& gathers);

// DeepSpeed 2021's gather of one unit's parameters, tensor by tensor: the flat buffer
// zero-filled, a device-wide synchronize (every reduction started must finish), the host building
// one view per rank and calling all_gather with the GPU idle, the all-gather itself with the host
// submitting PyTorch's copy of each rank's piece beside it (one cudaMemcpyAsync per rank), then
// the GPU running those copies.
class DeepSpeed2021Gathers {
 public:
  DeepSpeed2021Gathers(const Scenario& s, const models::ComputeCostModel& compute,
                       const std::vector<ParamGather>& gathers,
                       const std::vector<std::vector<GradUnit>>& units);
  void emit(OpBuilder& ops, const GradUnit& unit, const OpSite& at) const;
  // After the optimizer: _post_step's gather of the persistent parameters (norms and biases
  // under stage3_param_persistence_threshold), all at once, each copied out rank by rank.
  void emit_persistent(OpBuilder& ops, const OpSite& site) const;
  // Whether a recomputed layer's gathered matrices are released before its backward and
  // gathered once more (the layer holds more than stage3_max_live_parameters).
  static bool regathers_for_backward(const GradUnit& unit);

 private:
  // The host submitting PyTorch's copy of each rank's piece (while the all-gather runs), and
  // the GPU copying the pieces out of a flat all-gather buffer of `gathered_bytes` after it.
  models::OpCost copy_submissions() const;
  models::OpCost copies(double gathered_bytes) const;

  const models::ComputeCostModel& compute_;
  const std::vector<ParamGather>& gathers_;
  int dp_ranks_ = 1;
  Dtype param_dtype_;
  models::OpCost call_;  // the host building the per-rank views and calling all_gather
  // The persistent tensors of this stage's layers: their elements, and the Python copies
  // _post_step makes of them (one per tensor and rank holding part of it).
  double persistent_elements_ = 0;
  double persistent_copies_ = 0;
};

}  // namespace clustersim::workload
