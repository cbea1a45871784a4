// The validated scenario: plain structs with units in their names, produced by the loader
// (input/scenario_loader.hpp) from JSON and consumed by every other layer.
//
// Units: sizes in bytes unless a name says otherwise, times in seconds (`_s`), bandwidths in
// bytes per second (`_Bps`) after loading. The JSON files carry their own units in key names
// (`hbm_GiB`, `nic_Gbps`, `latency_us`) and the loader converts them once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/name_table.hpp"
#include "core/nccl_settings.hpp"
#include "core/system_calibration.hpp"

namespace clustersim {

enum class Dtype { fp32, tf32, bf16, fp16, fp8 };
inline const NameTable<Dtype> kDtypeNames = {{Dtype::fp32, "fp32"},
                                             {Dtype::tf32, "tf32"},
                                             {Dtype::bf16, "bf16"},
                                             {Dtype::fp16, "fp16"},
                                             {Dtype::fp8, "fp8"}};
const char* to_string(Dtype d);
double bytes_per_element(Dtype d);

// The MLP's activation: GeLU (GPT), SwiGLU (Shazeer 2020; Llama) with a third weight matrix,
// or squared ReLU (So et al. 2021, "Primer"; Nemotron), relu(x)^2 in two unfused PyTorch kernels.
enum class FfnKind { gelu, swiglu, squared_relu };
// Activation recomputation: none; Megatron-LM's selective (the attention core; Korthikanti et al.
// 2022 §5); full (each layer's forward); selective_op, PyTorch's op-level selective checkpointing
// with torchtitan's policy (models/layer_activations.hpp, op_checkpoint).
enum class Recompute { none, selective, full, selective_op };
// zb_h1: Qi et al. 2024, "Zero Bubble Pipeline Parallelism" (ICLR), section 3.1 (ZB-H1).
enum class PipelineSchedule { one_f_one_b, interleaved, gpipe, zb_h1, dualpipe };
enum class Compression { none, onebit_adam };
// How the attention core (scores, softmax, weighted sum) runs: one fused kernel that never
// writes the score matrix (FlashAttention, Dao et al. 2022), or Megatron-LM's 2021-22 path of
// batched GEMMs around a fused scale-mask-softmax kernel, which writes the scores to HBM and
// keeps them for the backward pass. The fused kernels differ only in speed:
//   flash   - the fused kernel the GPU's compute calibration measures (on Hopper cuDNN's, which
//             Transformer Engine, hence Megatron-Core and NeMo, prefers);
//   flash2  - FlashAttention-2 (Dao 2023), what PyTorch's scaled_dot_product_attention runs on
//             Hopper while its cuDNN backend is opt-in (PyTorch 2.5.1 on; docs/microbenchmarks.md);
//   flash3  - FlashAttention-3 (Shah et al. 2024).
// flash2 and flash3 need their figures in the calibration (attention.other_kernels).
enum class AttentionKernel { flash, flash2, flash3, unfused };
// Every kernel but `unfused` is fused: no score matrix in HBM.
inline bool fused(AttentionKernel k) {
  return k != AttentionKernel::unfused;
}
// How MoE tokens travel to their experts' GPUs (Megatron-Core moe_token_dispatcher_type):
//   alltoall - one NCCL all-to-all over the EP group for dispatch and one for combine;
//   deepep   - DeepEP's two-hop dispatch for DeepSeek-V3 (arXiv:2412.19437 §3.2.2): each token
//              crosses InfiniBand once per destination node, to the GPU of the same in-node
//              index, and is forwarded over NVLink there; the NVLink hop overlaps the
//              InfiniBand one. Dispatch in FP8 under an FP8 recipe (§3.3.2), combine in BF16;
//   hybridep - NVIDIA's HybridEP (Megatron-Core's flex dispatcher, backend hybridep) inside one
//              NVLink domain: each token sent once to each GPU holding one of its experts, in
//              BF16, at the algorithm bandwidth NVIDIA measured for it with moe_comm_sms SMs
//              (core/hybrid_ep.hpp).
enum class MoeDispatcher { alltoall, deepep, hybridep };
inline const NameTable<MoeDispatcher> kMoeDispatcherNames = {{MoeDispatcher::alltoall, "alltoall"},
                                                             {MoeDispatcher::deepep, "deepep"},
                                                             {MoeDispatcher::hybridep, "hybridep"}};
// How the local experts' GEMMs are launched (the time of the GEMMs is the same; the kernels are
// not):
//   per_expert - one GEMM per local expert and matrix, and under FP8 one quantization of each
//                expert's input: Transformer Engine's GroupedLinear, Megatron-Core's default
//                expert MLP (TEGroupedMLP), on Hopper (TE 2.9 nvte_multi_tensor_gemm runs
//                multi_stream_cublas_gemm unless NVTE_USE_CUTLASS_GROUPED_GEMM=1;
//                multi_tensor_quantize_impl fuses the quantization for delayed scaling only);
//   grouped    - one grouped-GEMM kernel per matrix for all local experts (CUTLASS grouped GEMM,
//                the grouped_gemm package of Megatron-Core's legacy GroupedMLP, DeepGEMM).
enum class MoeExpertGemm { per_expert, grouped };
inline const NameTable<MoeExpertGemm> kMoeExpertGemmNames = {
    {MoeExpertGemm::per_expert, "per_expert"}, {MoeExpertGemm::grouped, "grouped"}};
inline const NameTable<FfnKind> kFfnNames = {
    {FfnKind::gelu, "gelu"}, {FfnKind::swiglu, "swiglu"}, {FfnKind::squared_relu, "squared_relu"}};
inline const NameTable<Recompute> kRecomputeNames = {{Recompute::none, "none"},
                                                     {Recompute::selective, "selective"},
                                                     {Recompute::full, "full"},
                                                     {Recompute::selective_op, "selective_op"}};
// Modules whose outputs are dropped after the forward pass and recomputed in the backward from
// their stored inputs (Megatron-Core's recompute_modules, output-discarding checkpointing;
// megatron/core/transformer/transformer_config.py): "layernorm" the two pre-norms of each
// layer, "mla_up_proj" MLA's latent norms, up-projections and RoPE, "moe_act" the routed
// experts' activation function, "mlp" the whole MLP of each dense (not MoE) layer, its norm
// included, from the layer's hidden states (Megatron-Core's TransformerLayer checkpoints
// self.mlp and leaves an MoE layer's alone; megatron/core/transformer/transformer_layer.py,
// core_v0.14), "shared_experts" an MoE layer's shared experts from their input (MoELayer's
// shared_experts_recompute, moe/moe_layer.py, core_v0.14). DeepSeek-V3 §3.2.3 recomputes all
// RMSNorms and the MLA up-projections, §3.3.3 the SwiGLU outputs of the MoE. How the element-wise
// work of a step (norms, RoPE, the MLP activation, the loss) runs:
//   fused           - one kernel per norm, activation and RoPE, each reading its inputs and
//                     writing its outputs once (Transformer Engine, Megatron-Core's fused
//                     kernels) and Megatron-LM's fused vocab-parallel cross entropy;
//   compiled_blocks - each Transformer block compiled (torch.compile, fused as above), the
//                     final norm and the loss left eager (torchtitan's compile = true compiles
//                     each TransformerBlock only);
//   eager           - every PyTorch op of torchtitan's Llama its own kernel (compile = false).
// The eager kernels are those of torchtitan 9dec370's code (workload/kernel_traffic.hpp).
enum class KernelFusion { fused, compiled_blocks, eager };
// How the host issues a step's kernels:
//   none           - one by one from the framework's Python: the gap between queued kernels,
//                    and a pass the host cannot issue in time waits for it
//                    (docs/system-calibration.md#host-dispatch);
//   full_iteration - the forward and backward passes of every micro-batch captured once in a
//                    CUDA graph and replayed each step (Megatron-Core's cuda_graph_impl "local"
//                    with cuda_graph_scope "full_iteration"): each kernel costs the graph's
//                    launch, measured (models/compute_cost.hpp kCudaGraphKernelS).
enum class CudaGraphs { none, full_iteration };
// How FP8 linear layers scale their inputs (Transformer Engine recipes):
//   delayed - the scale from an amax history of earlier steps (TE's DelayedScaling, its default
//             through TE 1.x): the cast fuses into the kernel before it;
//   current - the scale from the tensor's own amax (TE 2.x Float8CurrentScaling, "FP8-CS"): an
//             amax pass and a scale kernel before each cast (workload/kernel_traffic.hpp);
//   mxfp8   - one E8M0 scale per 32 consecutive elements (TE 2.x MXFP8BlockScaling, "FP8-MX"),
//             Blackwell's block-scaled GEMMs: one kernel casts each operand both ways with
//             its block scales, each GEMM first rearranges its operands' scales (docs/mxfp8.md).
enum class Fp8Recipe { delayed, current, mxfp8 };
// The vocab-parallel cross entropy (Megatron-Core tensor_parallel/cross_entropy.py):
//   fused   - one kernel each way over the FP32 logits (Megatron-Core's
//             cross_entropy_loss_fusion, Megatron-Bridge's default, TE's implementation);
//   unfused - Megatron-LM's _VocabParallelCrossEntropy in PyTorch ops: the cast to FP32, max,
//             subtract, exp, sum and divide over the logits, then multiply and cast back in the
//             backward (its default before cross_entropy_loss_fusion; Megatron-LM 2021-24).
enum class CrossEntropy { fused, unfused };
// How each micro-batch's weight gradients join the step's gradient:
//   fused          - the weight-gradient GEMM accumulates into the gradient buffer itself
//                    (Megatron-LM's gradient_accumulation_fusion from 83b1e42f, 2022-02;
//                    Transformer Engine's fuse_wgrad_accumulation): no kernel of its own;
//   autograd       - PyTorch's AccumulateGrad adds each micro-batch's gradient into the
//                    parameter's .grad in place, in the 16-bit parameter dtype, from the second
//                    micro-batch on (Megatron-LM 2021's FP16 runs: no contiguous DDP buffers);
//   deepspeed_bf16 - DeepSpeed's BF16_Optimizer: after every micro-batch's backward each BF16
//                    gradient is cast to FP32 and added into the FP32 gradient (update_hp_grads).
enum class GradAccumulation { fused, autograd, deepspeed_bf16 };
inline const NameTable<GradAccumulation> kGradAccumulationNames = {
    {GradAccumulation::fused, "fused"},
    {GradAccumulation::autograd, "autograd"},
    {GradAccumulation::deepspeed_bf16, "deepspeed-bf16"}};

// The kernels of Adam's update and of the gradient-norm clipping before it:
//   fused   - one multi-tensor kernel for the update (Apex FusedAdam, Transformer Engine,
//             PyTorch's fused=True) and a clip that reads each gradient once and scales only
//             when the norm exceeds the limit (Megatron-LM clip_grad_norm_fp32);
//   foreach - PyTorch's torch.optim.AdamW with foreach=True: eight element-wise passes over the
//             parameter lists, and torch.nn.utils.clip_grad_norm_, which multiplies every
//             gradient by the clamped coefficient (torchtitan's defaults).
enum class OptimizerKernels { fused, foreach_ };
inline const NameTable<OptimizerKernels> kOptimizerKernelsNames = {
    {OptimizerKernels::fused, "fused"}, {OptimizerKernels::foreach_, "foreach"}};

inline const NameTable<CrossEntropy> kCrossEntropyNames = {{CrossEntropy::fused, "fused"},
                                                           {CrossEntropy::unfused, "unfused"}};
inline const NameTable<Fp8Recipe> kFp8RecipeNames = {
    {Fp8Recipe::delayed, "delayed"}, {Fp8Recipe::current, "current"}, {Fp8Recipe::mxfp8, "mxfp8"}};
inline const NameTable<CudaGraphs> kCudaGraphsNames = {
    {CudaGraphs::none, "none"}, {CudaGraphs::full_iteration, "full_iteration"}};
inline const NameTable<KernelFusion> kKernelFusionNames = {
    {KernelFusion::fused, "fused"},
    {KernelFusion::compiled_blocks, "compiled_blocks"},
    {KernelFusion::eager, "eager"}};
enum class RecomputeModule { layernorm, mla_up_proj, moe_act, mlp, shared_experts };
inline const NameTable<RecomputeModule> kRecomputeModuleNames = {
    {RecomputeModule::layernorm, "layernorm"},
    {RecomputeModule::mla_up_proj, "mla_up_proj"},
    {RecomputeModule::moe_act, "moe_act"},
    {RecomputeModule::mlp, "mlp"},
    {RecomputeModule::shared_experts, "shared_experts"}};
inline const NameTable<PipelineSchedule> kScheduleNames = {
    {PipelineSchedule::one_f_one_b, "1f1b"},
    {PipelineSchedule::interleaved, "interleaved"},
    {PipelineSchedule::gpipe, "gpipe"},
    {PipelineSchedule::zb_h1, "zb-h1"},
    {PipelineSchedule::dualpipe, "dualpipe"}};
inline const NameTable<Compression> kCompressionNames = {{Compression::none, "none"},
                                                         {Compression::onebit_adam, "onebit_adam"}};
inline const NameTable<AttentionKernel> kAttentionNames = {{AttentionKernel::flash, "flash"},
                                                           {AttentionKernel::flash2, "flash2"},
                                                           {AttentionKernel::flash3, "flash3"},
                                                           {AttentionKernel::unfused, "unfused"}};
const char* to_string(FfnKind k);
const char* to_string(Recompute r);
const char* to_string(PipelineSchedule s);
const char* to_string(Compression c);
const char* to_string(AttentionKernel k);
const char* to_string(KernelFusion f);
const char* to_string(CudaGraphs g);
const char* to_string(Fp8Recipe r);
const char* to_string(CrossEntropy c);
const char* to_string(GradAccumulation g);
const char* to_string(OptimizerKernels k);
const char* to_string(MoeDispatcher d);
const char* to_string(MoeExpertGemm g);

// The mixture-of-experts FFN of a model (Shazeer et al. 2017; GShard; DeepSeekMoE, Dai et al.
// 2024): in each MoE layer a router picks `experts_per_token` of `num_experts` routed experts for
// every token, and `shared_experts` experts see every token. The FFN of every other layer is
// the model's dense one (ModelSpec::ffn_hidden). Expert FFNs use the model's activation (SwiGLU:
// three matrices each).
struct MoeSpec {
  int num_experts = 0;               // routed experts per MoE layer
  int experts_per_token = 0;         // top-k
  int expert_ffn_hidden = 0;         // FFN width of one routed expert
  int shared_experts = 0;            // experts every token goes through
  int shared_expert_ffn_hidden = 0;  // FFN width of one shared expert (0 without them)
  // The shared experts' summed FFN width, the one FFN every token passes through.
  double shared_ffn_width() const {
    return static_cast<double>(shared_experts) * shared_expert_ffn_hidden;
  }
  // The first layers keep the dense FFN (DeepSeek's first_k_dense_replace); of the others,
  // layer i (0-based) is an MoE layer when i % moe_layer_freq == 0 (DeepSeek's and Megatron-
  // Core's moe_layer_freq; 1 = all of them).
  int first_dense_layers = 0;
  int moe_layer_freq = 1;
  // Tokens an expert takes per micro-batch, as a multiple of the mean (tokens x top-k /
  // experts); tokens beyond it are dropped. 0 = dropless (Megatron-Core's default, None).
  double capacity_factor = 0;
  // Tokens routed to the busiest expert / the mean: 1 = perfectly balanced; at most
  // num_experts / experts_per_token (every token on the same experts).
  double routing_imbalance = 1.0;
  // Group-limited routing (DeepSeek-V3 §2.1.2, config.json n_group / topk_group): the routed
  // experts form `expert_groups` equal groups and each token picks experts from at most
  // `groups_per_token` of them. 0 = no limit.
  int expert_groups = 0;
  int groups_per_token = 0;
};

// Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1; DeepSeek-V3): queries and
// keys/values pass through low-rank latents, and each head's query/key has a part without
// position (qk_nope_head_dim) and a decoupled RoPE part (qk_rope_head_dim; the key's RoPE part
// is one vector shared by all heads).
struct MlaSpec {
  int q_lora_rank = 0;  // query latent width; 0 = queries projected directly from the hidden
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Model architecture: a decoder-only Transformer, dense unless `moe` is set.
struct ModelSpec {
  std::string name;
  std::string source;  // citation for the shape
  int num_layers = 0;
  int hidden = 0;
  int num_heads = 0;
  int num_kv_heads = 0;  // == num_heads without grouped-query attention
  int ffn_hidden = 0;
  int vocab = 0;
  int max_seq_len = 0;
  FfnKind ffn = FfnKind::gelu;
  bool tied_embeddings = false;              // LM head shares the input embedding matrix
  bool learned_position_embeddings = false;  // GPT-style absolute positions (RoPE otherwise)
  bool linear_biases = false;                // biases on the linear layers (GPT) or not (Llama)
  // Whether the model's own training configuration uses dropout: GPT-style models (Megatron-LM's
  // 0.1) do, Llama-style ones do not. The default of the scenario's training.dropout.
  bool trained_with_dropout = true;
  std::string norm = "layernorm";  // "layernorm" (weight+bias) or "rmsnorm" (weight only)
  // Width of one attention head when the config gives it (Qwen3: 128 with hidden 2048 and 32
  // heads); 0 = hidden / num_heads.
  int attention_head_dim = 0;
  std::optional<MoeSpec> moe;  // mixture-of-experts FFN; none = dense
  std::optional<MlaSpec> mla;  // multi-head latent attention; none = multi-head / grouped-query
  // Multi-token prediction modules (DeepSeek-V3 §2.2): each one Transformer layer, a 2h -> h
  // projection and two RMSNorms, sharing the embedding and output head of the main model.
  int mtp_layers = 0;
  int head_dim() const { return attention_head_dim > 0 ? attention_head_dim : hidden / num_heads; }
  // Whether Transformer layer `layer` (0-based, of num_layers) has the MoE FFN.
  bool is_moe_layer(int layer) const {
    return moe && layer >= moe->first_dense_layers && layer % moe->moe_layer_freq == 0;
  }
  // Layers with the MoE FFN, of the num_layers.
  int moe_layer_count() const {
    int n = 0;
    for (int i = 0; i < num_layers; ++i) n += is_moe_layer(i) ? 1 : 0;
    return n;
  }
};

// The GPU's architecture (NVIDIA compute capability 7.0, 8.0, 9.0, 10.0): NCCL picks its tuning
// tables, NVLink SHARP support and channel counts by it (nccl/nccl_model.hpp).
enum class GpuArch { volta, ampere, hopper, blackwell };
inline const NameTable<GpuArch> kGpuArchNames = {{GpuArch::volta, "volta"},
                                                 {GpuArch::ampere, "ampere"},
                                                 {GpuArch::hopper, "hopper"},
                                                 {GpuArch::blackwell, "blackwell"}};

// One GPU model. Peaks are dense (no sparsity), in FLOP/s.
struct GpuSpec {
  std::string name;
  GpuArch architecture = GpuArch::hopper;  // "architecture"; Hopper when a GPU file omits it
  std::map<Dtype, double> peak_flops;      // dense peak per dtype, FLOP/s
  double hbm_bytes = 0;                    // capacity as the datasheet gives it ("hbm_GB")
  // Device memory as CUDA reports it ("hbm_reported_GiB", cudaDeviceProp::totalGlobalMem); 0 =
  // not given. Datasheets round a power-of-two HBM configuration to "GB" (an H100's 80 GB is
  // 79.11 GiB to CUDA, not 74.5), so the memory verdicts use this figure where a GPU has one.
  double reported_memory_bytes = 0;
  double hbm_Bps = 0;          // HBM bandwidth
  double nvlink_Bps = 0;       // NVLink per GPU, one direction
  double pcie_Bps = 0;         // PCIe per GPU, one direction
  double kernel_launch_s = 0;  // launch overhead per kernel
  // Host time to issue one kernel ("host_us_per_kernel"); negative = the measured default,
  // models/compute_cost.hpp kHostPerKernelS.
  double host_per_kernel_s = -1;
  int sm_count = 0;  // streaming multiprocessors; 0 = not given
  // Kernel-efficiency calibration of this GPU (models/compute_cost.hpp format): an absolute path
  // or one relative to the data root; "" = the default (H100/H800) calibration.
  std::string compute_calibration;
  // System parameters that replace the calibration file's fitted ones (core/
  // system_calibration.hpp). Not read from JSON: `clustersim calibrate --runs` and `validate`
  // set it to evaluate a fit or one of its cross-validation folds.
  std::optional<SystemValues> system_override;

  // The memory a training job's process can address: CUDA's figure, else the datasheet's.
  double memory_capacity_bytes() const {
    return reported_memory_bytes > 0 ? reported_memory_bytes : hbm_bytes;
  }
  double peak(Dtype d) const;  // throws std::out_of_range with the dtype name if absent
};

enum class FabricKind { fat_tree };
inline const NameTable<FabricKind> kFabricNames = {{FabricKind::fat_tree, "fat_tree"}};
const char* to_string(FabricKind k);

// The network between nodes.
struct FabricSpec {
  FabricKind kind = FabricKind::fat_tree;
  int nodes_per_leaf = 0;       // nodes whose NICs (of one rail, if rail-optimized) share a leaf
  double oversubscription = 1;  // leaf downlink : uplink bandwidth ratio (1 = non-blocking)
};

struct ClusterSpec {
  std::string name;
  std::string source;
  GpuSpec gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  int nics_per_node = 0;        // 8 on a rail-optimized HGX node, 1 in the seed as written
  double nic_Bps = 0;           // per NIC, one direction
  bool rail_optimized = false;  // NIC i of every node on leaf/plane i
  double nvlink_Bps = 0;        // per GPU, one direction, into the NVSwitch
  double nvlink_latency_s = 0;
  bool gpudirect_rdma = true;  // whether NICs can read GPU memory directly
  FabricSpec fabric;
  // `clustersim calibrate -o` file whose network fits replace NCCL's cost model for the
  // collectives it measured (path as resolved by the loader; "" = none).
  std::string calibration;
  int total_gpus() const { return nodes * gpus_per_node; }
};

// How ZeRO-3 moves parameters and gradients.
enum class Zero3Implementation {
  // One all-gather per layer (or embedding / head), prefetched one unit ahead when
  // training.overlap_param_gather; gradients reduce-scattered in buckets (PyTorch FSDP,
  // Megatron-Core FSDP).
  fsdp,
  // DeepSpeed stage 3 as released in 2021 (v0.3.13 to v0.5.4): one all-gather per weight tensor
  // into a list of per-rank views (PyTorch copies each rank's piece out), each after a
  // device-wide synchronize, so nothing overlaps; weights re-gathered for the recompute
  // forward; gradients all-reduced in reduce_bucket_size buckets.
  deepspeed_2021,
  // PyTorch's FSDP2 (fully_shard, per-parameter sharding): as fsdp, plus the copies it makes on
  // the compute stream: each gathered unit copied out of the all-gather buffer into its
  // parameters, and each unit's gradients copied (cast to the reduce dtype) into the
  // reduce-scatter input (torch/distributed/_composable/fsdp/_fsdp_collectives.py).
  fsdp2,
};
inline const NameTable<Zero3Implementation> kZero3ImplementationNames = {
    {Zero3Implementation::fsdp, "fsdp"},
    {Zero3Implementation::deepspeed_2021, "deepspeed-2021"},
    {Zero3Implementation::fsdp2, "fsdp2"}};
const char* to_string(Zero3Implementation z);

// How context parallelism moves K and V (with cp > 1).
enum class CpImplementation {
  // Transformer Engine's ring (AttnFuncWithCPAndKVP2P), what Megatron-Core runs unless
  // cp_comm_type says otherwise: cp attention steps per call, each on this rank's queries and one
  // rank's K/V chunk received point-to-point while the step before computes, each step's output
  // merged into the running one; the backward passes K/V and the dK/dV accumulators round the
  // ring the same way (docs/context-parallel.md#p2p).
  p2p,
  // Transformer Engine's AttnFuncWithCPAndKVAllGather (Megatron-Core's cp_comm_type
  // "all_gather", after Llama 3's all-gather CP): K and V all-gathered over the CP group before
  // the forward attention and again before the backward, dK and dV reduce-scattered after it, in
  // the activation dtype, nothing overlapped; the gathered K/V and dK/dV reordered, two attention
  // calls per pass, their outputs copied (docs/context-parallel.md#all_gather).
  all_gather,
  // PyTorch's context_parallel (torch.distributed.tensor.experimental) with its all-gather
  // rotation, as torchtitan runs it: the forward all-gathers K and V once per attention call
  // and merges each step's partial output into FP32 (convert_to_f32); the backward all-gathers
  // K and V again and passes FP32 dK/dV accumulators around the ring, cp hops (docs/nccl.md).
  torch,
};
// Which framework pipelines the tensor-parallel collectives with their GEMMs (tp_comm_overlap):
//   userbuffers - Transformer Engine's userbuffers (Megatron-Core, NeMo, Megatron-Bridge): every
//                 sequence-parallel all-gather and reduce-scatter of the forward and the backward.
//   torch       - PyTorch's micro-pipelined TP (torch.compile's micro_pipeline_tp pass,
//                 torchtitan's async TP): an all-gather is fused with the matmuls that take its
//                 result as their first operand, a reduce-scatter only with the one matmul whose
//                 output it reduces. In the backward the input gradient of the attention block is
//                 the sum of the separate Q, K and V projections' input gradients, and that of a
//                 gated MLP the sum of its gate and up projections' (an MoE layer's, of the
//                 router, experts and shared experts): those reduce-scatters run alone
//                 (docs/tensor-parallel-overlap.md#torch).
enum class TpOverlapImplementation { userbuffers, torch };
inline const NameTable<TpOverlapImplementation> kTpOverlapImplementationNames = {
    {TpOverlapImplementation::userbuffers, "userbuffers"},
    {TpOverlapImplementation::torch, "torch"}};
const char* to_string(TpOverlapImplementation t);

inline const NameTable<CpImplementation> kCpImplementationNames = {
    {CpImplementation::p2p, "p2p"},
    {CpImplementation::all_gather, "all_gather"},
    {CpImplementation::torch, "torch"}};
const char* to_string(CpImplementation c);

struct Parallelism {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;   // context parallelism (sequence split across GPUs for attention)
  int vpp = 1;  // virtual pipeline stages per rank (interleaved schedule); 1 = none
  // Expert parallelism (Megatron-Core expert_model_parallel_size): the routed experts of each
  // MoE layer split over ep ranks, taken from the tp x cp x dp ranks of a pipeline stage.
  int ep = 1;
  // Tensor parallelism inside each expert (expert_tensor_parallel_size); 0 = tp, Megatron-Core's
  // default. expert_tp() is the size in use.
  int etp = 0;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // Data parallelism of the expert weights: the tp x cp x dp ranks of a stage / (etp x ep).
  int expert_dp() const { return tp * cp * dp / (expert_tp() * ep); }
  bool sequence_parallel = false;
  // Without sequence parallelism, each TP rank sends 1/tp of a pipeline message and the
  // receiving stage all-gathers it over its TP group (Megatron-LM's legacy p2p_communication
  // scatter/gather, Narayanan et al. SC'21 section 4.1); false: every TP rank sends the whole
  // message (Megatron-Core).
  bool pipeline_scatter_gather = false;
  int zero_stage = 0;  // 0 (none), 1 (optimizer), 2 (+gradients), 3 (+parameters)
  Zero3Implementation zero3_implementation = Zero3Implementation::fsdp;
  CpImplementation cp_implementation = CpImplementation::p2p;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  std::vector<int> layers_per_stage;  // uneven split; empty = even
  // Megatron-Core's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split:
  // the input embedding (the loss) counts as one layer when the layers are split over the
  // pp x vpp virtual stages, so the first (last) virtual stage builds one Transformer layer less
  // (megatron/core/transformer/transformer_block.py get_num_layers_to_build).
  bool embedding_in_pipeline_split = false;
  bool loss_in_pipeline_split = false;
  // Non-Transformer layers counted in the pipeline split (0, 1 or 2).
  int layers_added_to_split() const {
    return (embedding_in_pipeline_split ? 1 : 0) + (loss_in_pipeline_split ? 1 : 0);
  }
  // FSDP2 under pipeline parallelism keeps a chunk's parameters gathered from its first forward
  // to the step's last backward: torchtitan turns reshard_after_forward off with pp (9dec370
  // parallelize_llama.py apply_fsdp) and PyTorch's pipeline stage turns resharding after
  // backward off for every backward but the last (torch/distributed/pipelining/stage.py
  // backward_maybe_with_nosync). One gather per unit a step (docs/pytorch-ops.md).
  bool fsdp2_keeps_gathered() const {
    return zero_stage >= 3 && zero3_implementation == Zero3Implementation::fsdp2 && pp > 1;
  }
};

struct Training {
  std::int64_t global_batch = 0;  // sequences per optimizer step
  std::int64_t micro_batch = 0;   // sequences per micro-batch per DP rank
  int seq_len = 0;
  double tokens_total = 0;        // tokens for the whole run (campaign)
  Dtype precision = Dtype::bf16;  // compute dtype of the GEMMs
  Recompute recompute = Recompute::none;
  // With full recomputation: how many Transformer layers of each pipeline chunk (virtual
  // stage) are recomputed, the first ones (Megatron-LM --recompute-method block
  // --recompute-num-layers N); the others keep their activations. 0 = every layer.
  int recompute_layers = 0;
  // Modules recomputed on top of `recompute` ("none" or "selective"; "full" recomputes them
  // anyway): see RecomputeModule.
  bool recompute_norms = false;
  bool recompute_mla_up_proj = false;
  bool recompute_moe_act = false;
  bool recompute_mlp = false;             // the dense layers' MLP ("mlp")
  bool recompute_shared_experts = false;  // the MoE layers' shared experts
  // DeepSeek-V3's low-precision activation cache (§3.3.3), with precision fp8: the attention
  // output (the output projection's input, which the attention backward reads too) kept once
  // in a 12-bit E5M6 format instead of 16-bit plus an FP8 copy, and the routed experts' SwiGLU
  // inputs kept in FP8.
  bool fp8_activation_cache = false;
  // Dropout on (Megatron-LM's default hidden and attention dropout 0.1): its masks are stored
  // for the backward pass and, unfused, attention dropout is a kernel of its own. Off for runs
  // configured without dropout (e.g. Llama recipes: hidden_dropout = attention_dropout = 0).
  bool dropout = true;
  AttentionKernel attention = AttentionKernel::flash;
  // K and V repeated to every query head before the attention call (torchtitan's Llama and
  // Hugging Face's eager Llama call repeat_kv): the attention kernel reads, and context
  // parallelism exchanges, query-head-wide K/V, and the repeat is a copy of its own. Without
  // it (Transformer Engine, Megatron-Core) grouped K/V heads reach the kernel as they are.
  bool repeat_kv = false;
  KernelFusion kernel_fusion = KernelFusion::fused;
  CudaGraphs cuda_graphs = CudaGraphs::none;
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;  // with precision fp8
  // With precision fp8 and sequence parallelism: a row-parallel linear's output gradient is cast
  // to FP8 (E5M2) before its all-gather in the backward (Transformer Engine v1.8 and v2.9,
  // grad_output_preprocess; torchao's Float8RowwiseParallel, whose NoopFwToFloat8BwDynamic casts
  // the gradient before the gather). Off: gathered in BF16 and cast after, in the matmul
  // (torchao's Float8Linear under PyTorch's plain RowwiseParallel).
  bool fp8_gradient_gather = true;
  // FP8 parameters (precision fp8): the weights are kept in FP8 and the ZeRO / FSDP / distributed-
  // optimizer parameter all-gathers move FP8 (1 B per element) instead of BF16. Transformer
  // Engine's primary FP8 weights (Megatron-Core --fp8-param-gather, Megatron-Bridge's FP8
  // precision configs) and torchao's FSDP2 float8 all-gather (enable_fsdp_float8_all_gather).
  bool fp8_param_gather = false;
  CrossEntropy cross_entropy = CrossEntropy::fused;
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  OptimizerKernels optimizer_kernels = OptimizerKernels::fused;
  // Tensor-parallel communication overlap (Transformer Engine userbuffers, Megatron-Core
  // tp_comm_overlap): each sequence-parallel all-gather / reduce-scatter pipelined in chunks
  // with the GEMM it feeds or follows. Needs tp > 1 and sequence parallelism.
  bool tp_comm_overlap = false;
  TpOverlapImplementation tp_comm_overlap_implementation = TpOverlapImplementation::userbuffers;
  // The backward of a column-parallel linear launches its tensor-parallel collectives
  // asynchronously beside its GEMMs (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication
  // from 2021-08, Transformer Engine's Linear and LayerNormLinear): the input-gradient
  // all-reduce or reduce-scatter runs beside the weight-gradient GEMM, and with sequence
  // parallelism the input, kept split, is all-gathered again beside the input-gradient GEMM.
  // Off: each runs alone (Megatron-LM of 2021, DeepSpeed's Megatron fork). Userbuffers
  // (tp_comm_overlap) take precedence where both are set.
  bool tp_async_backward = false;
  // SMs the pipelined reduce-scatter of each forward row-parallel GEMM takes from it
  // (userbuffers num_sm with set_sm_margin: the GEMM runs on the GPU's other SMs): the output
  // projection (proj_fprop) and the second MLP linear (fc2_fprop). 0 = no margin, Transformer
  // Engine's default.
  int tp_overlap_proj_fprop_sms = 0;
  int tp_overlap_fc2_fprop_sms = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  MoeExpertGemm moe_expert_gemm = MoeExpertGemm::per_expert;
  // The EP all-to-alls of one micro-batch overlapped with the compute of another, paired
  // forward and backward chunks as DualPipe runs them (DeepSeek-V3 §3.2.1) and Megatron-Core's
  // overlap_moe_expert_parallel_comm does in 1F1B: per MoE layer, max(0, all-to-all - compute)
  // stays exposed.
  bool moe_comm_overlap = false;
  // SMs the dispatch and combine kernels hold while they overlap compute (DeepSeek-V3 §3.2.2:
  // 20 of the H800's 132 SMs keep InfiniBand and NVLink busy): with moe_comm_overlap the
  // step's compute-bound kernels run on the other SMs. 0 = none. With the hybridep dispatcher
  // they also set its measured bandwidth (Megatron-Core's --moe-hybridep-num-sms; 0 = its
  // default, 16).
  int moe_comm_sms = 0;
  // Dtype of the Adam state: master copy of the weights, momentum and variance. FP32 in
  // Megatron-LM's and DeepSpeed's mixed-precision Adam; BF16 where a recipe sets Apex
  // DistributedFusedAdam's `dtype` to it (NeMo optim.dtype: bf16), which then keeps its
  // parameter copy (store_params, default True), m and v in BF16.
  Dtype optimizer_state_dtype = Dtype::fp32;
  // Dtype of Adam's momentum and variance when it differs from the master copy's: DeepSeek-V3
  // keeps them in BF16 with FP32 master weights (technical report §3.3.3). The loader sets it
  // to optimizer_state_dtype unless the scenario gives it.
  Dtype optimizer_moments_dtype = Dtype::fp32;
  // Interleaved schedule only: each pass posts the receive of the next pass in its direction as
  // soon as it ends, and the pass waits for it only when it starts (Megatron-Core's
  // overlap_p2p_comm, forward_backward_pipelining_with_interleaving), so a pipeline message
  // moves while the rank computes the pass in between. Off: the receive is posted when the
  // pass that needs it starts.
  bool overlap_p2p_comm = false;
  bool overlap_grad_reduce = true;      // DP reduction overlapped with the backward pass
  bool overlap_param_gather = true;     // ZeRO parameter all-gather overlapped (prefetched)
  double grad_bucket_bytes = 0;         // DP bucket size
  bool reduce_per_micro_batch = false;  // DP reduction after every micro-batch (no accumulation)
};

struct CompressionSpec {
  Compression kind = Compression::none;
  // 1-bit Adam: fraction of the run in the full-precision warm-up phase.
  double warmup_fraction = 0;
};

struct CommSpec {
  Dtype grad_dtype = Dtype::bf16;
  CompressionSpec compression;
  // Layer groups whose gradients stay in FP32 ("embedding", "lm_head").
  std::vector<std::string> fp32_layer_groups;
  NcclSettings nccl;
};

// Faults injected into one simulated step (from the scenario's "faults" events,
// core/faults.hpp; consumed by the step simulator).
struct GpuSlowdown {
  int rank = 0;             // global rank whose GPU runs slower
  double speed_factor = 1;  // (0, 1]: 0.5 = half speed
  double from_s = 0;        // simulated time the slowdown starts
  std::string cause;        // e.g. "ECC down-clocking"
};
struct LinkFault {
  std::string link;             // link name as the cluster graph names it (topologies/)
  double bandwidth_factor = 1;  // remaining fraction of bandwidth (0 with down = true)
  bool down = false;            // link unusable: collectives crossing it hang
  double from_s = 0;
  double until_s = 0;  // 0 = until the end
};
struct NodeLoss {
  int node = 0;
  double at_s = 0;
};
struct StepFaults {
  std::vector<GpuSlowdown> slow_gpus;
  std::vector<LinkFault> links;
  std::vector<NodeLoss> lost_nodes;
  bool empty() const { return slow_gpus.empty() && links.empty() && lost_nodes.empty(); }
};

struct Scenario {
  std::string file;  // where it was loaded from
  std::string name;
  std::string description;
  ModelSpec model;
  ClusterSpec cluster;
  int gpus = 0;
  Parallelism parallelism;
  Training training;
  CommSpec comm;
  std::vector<std::string> warnings;  // valid but noteworthy (e.g. tp spans nodes)

  // Micro-batches per optimizer step on each DP rank: global_batch / (dp * micro_batch).
  std::int64_t micro_batches() const {
    return training.global_batch / (parallelism.dp * training.micro_batch);
  }
  // Tokens per optimizer step.
  double tokens_per_step() const {
    return static_cast<double>(training.global_batch) * training.seq_len;
  }
};

}  // namespace clustersim
