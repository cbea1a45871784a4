// GPU memory per rank for a training scenario: model states (weights, gradients, optimizer
// states under ZeRO 0-3; routed experts split by expert parallelism), activations (Korthikanti et
// al. 2022, generalised to GQA and SwiGLU), communication buffers and 1-bit Adam error feedback,
// and the verdict against the GPU's HBM.
//
// Everything here is a closed-form estimate of the peak, by pipeline stage; the worst stage
// decides whether the scenario fits. Bytes throughout.
#pragma once

#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "core/units.hpp"

namespace clustersim::models {

// Activation bytes per token and per layer, before any parallelism, split the way Korthikanti
// et al. 2022 (Table 2) split their 34 s b h + 5 a s^2 b: parts that tensor parallelism leaves
// replicated (split only by sequence parallelism), parts that it shards, and the attention-score
// tensors (sharded by tensor parallelism, dropped by selective recomputation; none at all with
// FlashAttention, which stores FP32 softmax statistics in the sharded part instead).
struct ActivationCoefficients {
  double replicated_per_token = 0;  // 10h for GPT
  double sharded_per_token = 0;     // 24h for GPT
  double scores_per_token = 0;      // 5 a s for GPT
};
// `dropout` false: no dropout masks (and, unfused, no attention-dropout tensors).
// `fp8_linears`: FP8 linear layers (Transformer Engine) keep their inputs in FP8 for the
// weight-gradient GEMM.
ActivationCoefficients activation_coefficients(const clustersim::ModelSpec& model, int seq_len,
                                               clustersim::AttentionKernel attention,
                                               bool dropout = true, bool fp8_linears = false);

// Activation bytes of one Transformer layer for one micro-batch of `micro_batch` sequences on
// one GPU: `stored` lives from the layer's forward to its backward; `transient` is the working
// set that recomputation re-creates for one layer at a time during the backward pass.
struct LayerActivations {
  double stored = 0;
  double transient = 0;
};
LayerActivations layer_activation_bytes(const clustersim::ModelSpec& model, int seq_len,
                                        std::int64_t micro_batch, int tp, bool sequence_parallel,
                                        clustersim::Recompute recompute,
                                        clustersim::AttentionKernel attention, bool dropout = true,
                                        bool fp8_linears = false);

// Assumptions about what part of the HBM a training job can use.
struct HbmReserve {
  // CUDA context, cuBLAS/cuDNN handles and kernels resident on the device. "Depending on the CUDA
  // version, used device etc. you might see an allocation of ~700+MB" (ptrblck, PyTorch forums,
  // "High gpu memory overhead", 2020); we take 0.75 GiB.
  double cuda_context_bytes = 0.75 * kGiB;
  // Fraction of the HBM lost to the caching allocator's fragmentation and rounding
  // (block sizes rounded to 512 B / 2 MiB / 20 MiB segments, PyTorch
  // c10/cuda/CUDACachingAllocator). UNVERIFIED assumption: 5%; no measured figure in the reference
  // material, and the seed's third fault shows fragmentation growing over days, which this static
  // estimate ignores.
  double allocator_fragmentation_fraction = 0.05;
};

// Memory of one GPU of one pipeline stage.
struct StageMemory {
  int stage = 0;
  int layers = 0;
  double parameters = 0;            // parameters this GPU's model replica slice holds (before ZeRO)
  double weights_bytes = 0;         // 16-bit weights kept resident (sharded under ZeRO-3)
  double zero3_gathered_bytes = 0;  // ZeRO-3: unsharded weights/gradients of the units in flight
  double gradients_bytes = 0;       // gradient buffer (comm.grad_dtype; FP32 groups at 4 bytes)
  double optimizer_bytes = 0;       // FP32 master weights + Adam moments (sharded under ZeRO >= 1)
  double activations_bytes = 0;     // stored activations of all micro-batches in flight + transient
  double activation_per_micro_batch_bytes = 0;  // stored activations of one micro-batch
  double activation_transient_bytes = 0;        // recompute working set (one layer)
  double micro_batches_in_flight = 0;
  double nccl_buffers_bytes = 0;  // NCCL connection buffers (models/nccl_buffers.hpp)
  double dp_bucket_bytes = 0;     // gradient-reduction staging buckets
  double onebit_adam_bytes = 0;   // 1-bit Adam error-feedback buffers and packed sign buffers
  // Mixture of experts: the routed-expert parameters this GPU holds (its num_experts / ep
  // experts of each MoE layer on the stage, split by expert tensor parallelism; included in
  // `parameters`) and their weights, gradients and optimizer states (included in those three).
  int moe_layers = 0;
  double expert_parameters = 0;
  double expert_state_bytes = 0;

  double total_bytes() const {
    return weights_bytes + zero3_gathered_bytes + gradients_bytes + optimizer_bytes +
           activations_bytes + nccl_buffers_bytes + dp_bucket_bytes + onebit_adam_bytes;
  }
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  int worst_stage = 0;
  double hbm_bytes = 0;       // the GPU's capacity
  double reserved_bytes = 0;  // CUDA context + allocator fragmentation reserve
  HbmReserve reserve;
  std::vector<std::string> assumptions;  // one line each, for reports

  const StageMemory& worst() const { return stages.at(static_cast<std::size_t>(worst_stage)); }
  double usable_bytes() const { return hbm_bytes - reserved_bytes; }
  double peak_bytes() const { return worst().total_bytes(); }
  bool fits() const { return peak_bytes() <= usable_bytes(); }
  // HBM less the CUDA context: all a layout could use if the allocator fragmented nothing.
  double physical_bytes() const { return hbm_bytes - reserve.cuda_context_bytes; }
  // Over the usable HBM but inside the allocator fragmentation reserve, an unverified
  // allowance: whether it fits depends on fragmentation the model does not know. Published
  // runs have fit so (SC'21's ZeRO-3 530B on 640 GPUs, DeepSeek-V3 with its report's optimizer
  // dtypes), so it is not called "does not fit"; `run` simulates it and says so.
  bool tight() const { return !fits() && peak_bytes() <= physical_bytes(); }
  // usable - peak: positive = room to spare, negative = how much is missing.
  double headroom_bytes() const { return usable_bytes() - peak_bytes(); }
};

// Adam's state per parameter: a master copy of the weight in the optimizer's state dtype and the
// momentum and variance in the moments' dtype: 3 x 4 B = 12 B in FP32 (Rajbhandari et al. 2020,
// "ZeRO", §3.1: K = 12), 3 x 2 B in BF16 (Apex DistributedFusedAdam with dtype bf16 and
// store_params), 4 + 2 x 2 = 8 B with BF16 moments and an FP32 master (DeepSeek-V3 §3.3.3).
constexpr double kAdamMasterTensors = 1;
constexpr double kAdamMomentTensors = 2;
double adam_state_bytes_per_param(Dtype master_dtype, Dtype moments_dtype);

// Estimates memory per GPU for every pipeline stage of the scenario.
MemoryEstimate estimate_memory(const clustersim::Scenario& scenario,
                               const HbmReserve& reserve = {});

}  // namespace clustersim::models
