// Gradient units and buckets: which parameters' gradients become ready together in the
// backward pass (a layer, the embedding, the LM head) and how they are packed into the buckets
// handed to the data-parallel reduction (PyTorch DDP / Megatron-LM DDP: consecutive gradients
// up to training.grad_bucket_bytes, in the order backward produces them).
#pragma once

#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "workload/workload.hpp"

namespace clustersim::workload {

enum class UnitKind : unsigned char { layer, embedding, head };

// Parameters whose gradients become ready together, on one GPU.
struct GradUnit {
  UnitKind kind = UnitKind::layer;
  double params = 0;
  // Of params, the routed experts' (an MoE layer's, or the MTP modules' with the head): with
  // ReductionPlan::expert_buckets they go to buckets of their own, reduced over the
  // expert-data-parallel group.
  double experts = 0;
  Dtype dtype = Dtype::bf16;  // of the gradient on the wire
  int layer = -1;             // global layer index, or -1
  std::string name;           // "layer 12", "embedding", "lm_head"
  std::vector<int> buckets;   // buckets completed when this unit is ready
  std::vector<int> covering;  // buckets holding any of this unit's parameters
  std::vector<int> gathers;   // ZeRO-3: the parameter gathers before each use, in use order
};

// Parameters of each kind of unit on one GPU (models/transformer.hpp split over TP) and the
// dtype its gradients travel in (comm.grad_dtype, FP32 for comm.fp32_layer_groups).
struct UnitSizes {
  double layer = 0;
  // An MoE layer's parameters on one GPU (attention and norms split over TP as a dense
  // layer's, the router and the shared experts as Megatron-Core keeps them, the routed experts
  // split over EP and expert TP); moe[l] says whether global layer l is one. Empty when dense.
  double moe_layer = 0;
  double moe_experts = 0;  // of moe_layer, the routed experts
  std::vector<bool> moe;
  bool is_moe(int l) const {
    return l >= 0 && static_cast<std::size_t>(l) < moe.size() && moe[static_cast<std::size_t>(l)];
  }
  double of_layer(int l) const { return is_moe(l) ? moe_layer : layer; }
  double experts_of_layer(int l) const { return is_moe(l) ? moe_experts : 0.0; }
  double embedding = 0;     // token embedding shard and the learned positions
  double head = 0;          // LM head shard (the embedding's copy when tied) and the final norm
  double head_experts = 0;  // of head, the routed experts of MoE multi-token prediction layers
  Dtype layer_dtype = Dtype::bf16;
  Dtype embedding_dtype = Dtype::bf16;
  Dtype head_dtype = Dtype::bf16;
};
UnitSizes unit_sizes(const Scenario& s);

// The units of virtual stage `vs` (of `num_vstages`, holding `layers` layers from global
// layer `first_layer` on) in backward order: the LM head on the last virtual stage, the layers
// from last to first, the embedding on the first virtual stage.
std::vector<GradUnit> grad_units(const UnitSizes& sizes, int vs, int num_vstages, int first_layer,
                                 int layers);

// How gradients reach the data-parallel reduction over dp x cp ranks.
struct ReductionPlan {
  double bucket_bytes = 0;        // training.grad_bucket_bytes
  bool compressed_phase = false;  // 1-bit Adam: one bucket per chunk, reduced after backward
  bool reduce_scatter = false;    // ZeRO >= 1 reduce-scatters (all-reduce otherwise)
  bool deepspeed_2021 = false;    // DeepSpeed 2021 ZeRO-3: all-reduce plus stream work
  int dp_ranks = 1;
  // The routed experts' gradients in buckets of their own, reduced over the expert-data-parallel
  // group (Megatron-Core's DDP keeps expert parameters in separate buffers and reduces them over
  // expert_data_parallel_group; its distributed optimizer shards them over that group). Set for
  // an MoE model without ZeRO-3 and outside 1-bit Adam's compressed phase.
  bool expert_buckets = false;
};
ReductionPlan reduction_plan(const Scenario& s, bool compressed_phase);

// The communication calls that reduce `params` gradients of `dtype`: one all-reduce or
// reduce-scatter; with 1-bit Adam's compressed phase an all-to-all then an all-gather of the
// sign bits and scales (Tang et al. 2021).
std::vector<CommCall> reduction_calls(const ReductionPlan& plan, double params, Dtype dtype);

// Packs the units of model chunk `chunk` (backward order) into buckets appended to `buckets`:
// consecutive units of one dtype up to bucket_bytes, a unit larger than a bucket filling
// several; everything in one bucket in the compressed phase. With plan.expert_buckets the
// units' routed experts are packed the same way after the rest, into buckets of group
// expert_dp. Records on each unit the buckets its gradients complete and the buckets that hold
// any of its parameters.
void pack_buckets(std::vector<GradUnit>& units, int chunk, const ReductionPlan& plan,
                  const models::ComputeCostModel& compute, std::vector<GradBucket>& buckets);

// Tied embeddings across stages: the first and last stage all-reduce the shared matrix's
// gradient once per step (Megatron-LM _allreduce_word_embedding_grads). Appends that bucket on
// those stages and returns its id; -1 where there is none.
int add_embedding_sync_bucket(const Scenario& s, int stage, Dtype dtype,
                              std::vector<GradBucket>& buckets);

}  // namespace clustersim::workload
