// The key tables of the scenario, its execution sections and the presets. Descriptions come
// from the loaders' headers and README.md; bounds are the ones the loaders have always checked.
#include "input/input_keys.hpp"

#include "core/scenario.hpp"
#include "core/units.hpp"
#include "input/limits.hpp"
#include "input/nccl_settings.hpp"
#include "input/preset_limits.hpp"

namespace clustersim::input {

namespace {

using namespace keys;

ObjectSpec make_scenario() {
  return {"scenario",
          "A scenario: the model, the cluster and the GPU count, the parallel layout, the "
          "training batch and precision, gradient communication, and the run sections",
          {text("name", "the scenario's name; default: the file name without .json"),
           text("description", "free text"),
           required(preset("model", "model",
                           "a model preset of models/presets (by name) or an inline model")),
           required(preset("cluster", "cluster",
                           "a cluster preset of topologies/clusters (by name) or an inline "
                           "cluster")),
           required(integer("gpus", 1, 1 << 24, "GPUs of the job")),
           required(object("parallelism", {"parallelism"}, "the parallel layout")),
           required(object("training", {"training"}, "batch, sequence, precision, kernels")),
           object("comm", {"comm"}, "gradient communication and NCCL settings"),
           object("faults", {"faults"}, "scripted faults and failure rates (campaign)"),
           object("checkpointing", {"checkpointing"}, "checkpoints of the whole run (campaign)"),
           object("cost", {"cost"}, "the price of a GPU-hour (campaign)"),
           object("campaign", {"campaign"}, "Monte Carlo settings of the whole run")}};
}

ObjectSpec make_parallelism() {
  return {
      "parallelism",
      "The parallel layout, as Megatron-LM lays it out",
      {integer("dp", 1, 1 << 20, "data-parallel size; default gpus / (tp x pp x cp)"),
       integer("tp", 1, 1 << 12, "tensor-parallel size"),
       integer("pp", 1, 1 << 12, "pipeline-parallel size"),
       integer("cp", 1, 1 << 12, "context-parallel size"),
       integer("vpp", 1, 1 << 10, "virtual pipeline stages per rank (interleaved schedule)"),
       integer("ep", 1, 1 << 16, "expert-parallel size; needs a model with \"moe\""),
       integer("etp", 1, 1 << 12, "expert tensor-parallel size; default tp"),
       flag("sequence_parallel", "Megatron sequence parallelism; default false"),
       flag("pipeline_scatter_gather",
            "without sequence parallelism, each TP rank sends 1/tp of a pipeline message and "
            "the receiver all-gathers it over TP (Megatron-LM before Megatron-Core); default "
            "false"),
       integer("zero_stage", 0, 3, "ZeRO stage of the optimizer state sharding; default 0"),
       choice("zero3_implementation", kZero3ImplementationNames.names(),
              "with zero_stage 3: \"fsdp\" (default), \"fsdp2\" (PyTorch FSDP2: its copies around "
              "each gather and reduce-scatter) or DeepSpeed's 2021 ZeRO-3"),
       choice("cp_implementation", kCpImplementationNames.names(),
              "with cp > 1: \"p2p\" (default: Transformer Engine's ring, Megatron-Core's "
              "cp_comm_type default), \"all_gather\" (K/V gathered before attention, "
              "nothing overlapped) or \"torch\" (PyTorch's context_parallel: K/V "
              "re-gathered for the backward, FP32 dK/dV ring)"),
       choice("schedule", kScheduleNames.names(),
              "pipeline schedule; default 1f1b, interleaved when vpp > 1"),
       array("layers_per_stage", integer("", 0, 1 << 20, "Transformer layers"),
             "layers of each pipeline stage (with vpp > 1, of each virtual stage); 0 for a "
             "stage that holds only the embedding or the loss (Megatron-Core's "
             "pipeline_model_parallel_layout \"E|...|L\")"),
       flag("account_for_embedding_in_pipeline_split",
            "count the input embedding as one layer when splitting; default false"),
       flag("account_for_loss_in_pipeline_split",
            "count the loss as one layer when splitting; default false")}};
}

KeySpec recompute_modules() {
  KeySpec k =
      array("recompute_modules",
            choice("", kRecomputeModuleNames.names(), "a module recomputed in the backward"),
            "modules recomputed from their inputs (Megatron-Core's names), with recompute "
            "none or selective: layernorm, mla_up_proj, moe_act, mlp, shared_experts");
  k.unique_items = true;
  return k;
}

ObjectSpec make_training() {
  const auto dtypes = [](std::initializer_list<Dtype> d) { return kDtypeNames.names_of(d); };
  return {"training",
          "The batch, the sequence, the precision and the kernels of a training step",
          {required(integer("global_batch", 1, std::int64_t(1) << 40, "sequences per step")),
           required(integer("micro_batch", 1, std::int64_t(1) << 30, "sequences per micro-batch")),
           required(integer("seq_len", 1, 1 << 26, "tokens per sequence")),
           closed("tokens_total", 1.0, kMaxTokensTotal, "tokens of the whole run (time to train)"),
           choice("precision", dtypes({Dtype::bf16, Dtype::fp16, Dtype::fp8}),
                  "compute precision; default bf16"),
           choice("recompute", kRecomputeNames.names(), "activation recomputation; default none"),
           integer("recompute_layers", 1, 1 << 20,
                   "with \"full\": recompute only the first N layers of each pipeline chunk"),
           recompute_modules(),
           flag("fp8_activation_cache",
                "with precision fp8: attention output in 12-bit E5M6, MoE SwiGLU inputs in FP8 "
                "(DeepSeek-V3); default false"),
           flag("dropout",
                "dropout masks are stored; default: the model's \"dropout\" (false "
                "for Llama-style presets)"),
           choice("attention", kAttentionNames.names(),
                  "flash (default: fused kernel) or unfused (stored scores)"),
           flag("repeat_kv",
                "K/V repeated to every query head before attention (torchtitan's Llama); "
                "default false"),
           choice("fp8_recipe", kFp8RecipeNames.names(),
                  "with precision fp8: delayed (default: amax history), current (each "
                  "tensor's own amax, Transformer Engine 2.x Float8CurrentScaling) or mxfp8 "
                  "(a scale per 32 elements, Blackwell only: Transformer Engine's "
                  "MXFP8BlockScaling)"),
           flag("fp8_gradient_gather",
                "with precision fp8 and sequence parallelism: output gradients all-gathered in "
                "FP8 (true: Transformer Engine, torchao's Float8RowwiseParallel) or BF16 (false: "
                "cast in the matmul after the gather); default true"),
           flag("fp8_param_gather",
                "with precision fp8 and zero_stage >= 1: weights kept in FP8 and the parameter "
                "all-gathers (ZeRO, FSDP, distributed optimizer) in FP8 (Megatron-Core "
                "--fp8-param-gather, torchao's FSDP2 float8 all-gather); default false"),
           choice("cross_entropy", kCrossEntropyNames.names(),
                  "fused (default) or unfused (Megatron-LM's vocab-parallel cross entropy in "
                  "PyTorch ops over FP32 logits)"),
           choice("grad_accumulation", kGradAccumulationNames.names(),
                  "how micro-batch gradients accumulate: fused (default: in the weight-gradient "
                  "GEMM), autograd (PyTorch adds each into .grad from the second micro-batch on) "
                  "or deepspeed-bf16 (cast to FP32 and added after every backward)"),
           choice("optimizer_kernels", kOptimizerKernelsNames.names(),
                  "Adam and gradient clipping: fused (default: one multi-tensor kernel) or "
                  "foreach (PyTorch's AdamW foreach=True and clip_grad_norm_)"),
           choice("kernel_fusion", kKernelFusionNames.names(),
                  "fused (default: one kernel per norm, activation, RoPE), compiled_blocks "
                  "(torch.compile per block, eager loss) or eager (PyTorch ops of torchtitan's "
                  "Llama)"),
           choice("cuda_graphs", kCudaGraphsNames.names(),
                  "none (default: kernels issued one by one) or full_iteration (every "
                  "micro-batch's passes replayed from one CUDA graph, Megatron-Core's "
                  "cuda_graph_scope full_iteration)"),
           flag("tp_comm_overlap", "overlap TP communication with GEMMs; needs sequence_parallel"),
           choice("tp_comm_overlap_implementation", kTpOverlapImplementationNames.names(),
                  "with tp_comm_overlap: userbuffers (default: Transformer Engine, every TP "
                  "collective) or torch (PyTorch's async TP: not the backward's reduce-scatters "
                  "of summed input gradients)"),
           object("tp_comm_overlap_sms", {"tp_comm_overlap_sms"},
                  "SMs the forward reduce-scatters take from their GEMMs"),
           flag("tp_async_backward",
                "a column-parallel linear's backward runs its TP collectives beside its GEMMs "
                "(Megatron-LM from 2021-08, Transformer Engine); default false"),
           flag("overlap_p2p_comm",
                "interleaved schedule: post each pipeline receive when the previous pass in its "
                "direction ends (Megatron-Core overlap_p2p_comm); default false"),
           flag("overlap_grad_reduce", "overlap the gradient reduction; default true"),
           flag("overlap_param_gather", "overlap the parameter all-gather; default true"),
           positive("grad_bucket_MiB",
                    "gradient bucket size in MiB; default max(40M, 1M x dp x cp) parameters in the "
                    "reduced gradient dtype, as Megatron-Core (40M with ZeRO-3)"),
           choice("grad_reduce", {"per_step", "per_micro_batch"},
                  "reduce gradients once per step (default) or after every micro-batch"),
           choice("optimizer_state_dtype", dtypes({Dtype::fp32, Dtype::bf16}),
                  "Adam's master copy, momentum and variance; default fp32"),
           choice("optimizer_moments_dtype", dtypes({Dtype::fp32, Dtype::bf16}),
                  "Adam's momentum and variance alone; default optimizer_state_dtype"),
           choice("moe_dispatcher", kMoeDispatcherNames.names(),
                  "how MoE tokens reach their experts; default alltoall"),
           choice("moe_expert_gemm", kMoeExpertGemmNames.names(),
                  "the local experts' GEMMs launched per expert (Transformer Engine on Hopper, "
                  "the default) or as one grouped kernel"),
           flag("moe_comm_overlap", "overlap the EP dispatch and combine with compute"),
           integer("moe_comm_sms", 0, 1 << 16,
                   "SMs the EP exchanges take from compute; with hybridep, its SMs per kernel")}};
}

ObjectSpec make_tp_overlap_sms() {
  return {"tp_comm_overlap_sms",
          "SMs Transformer Engine's userbuffers take from the two forward GEMMs",
          {integer("proj_fprop", 0, 1 << 16, "SMs taken from the attention projection"),
           integer("fc2_fprop", 0, 1 << 16, "SMs taken from the second MLP GEMM")}};
}

KeySpec nccl_value() {
  KeySpec v;
  v.kind = KeyKind::string_or_integer;
  v.description = "the variable's value, as the environment gives it";
  return v;
}

ObjectSpec make_comm() {
  KeySpec groups = array("fp32_layer_groups", choice("", {"embedding", "lm_head"}, "a layer group"),
                         "layer groups whose gradients are reduced in FP32");
  groups.unique_items = true;
  KeySpec compression =
      choice("compression", kCompressionNames.names(), "gradient compression: a name or an object");
  compression.refs = {"compression"};
  return {"comm",
          "Gradient communication",
          {choice("grad_dtype",
                  kDtypeNames.names_of({Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::fp8}),
                  "dtype of the reduced gradients; default fp16 for fp16 training, fp32 otherwise "
                  "(Megatron-LM, NeMo)"),
           compression, groups,
           map("nccl", known_nccl_variables(), nccl_value(),
               "NCCL environment variables by their names")}};
}

ObjectSpec make_compression() {
  return {"compression",
          "Gradient compression with its settings",
          {required(choice("kind", kCompressionNames.names(), "the compression")),
           fraction("warmup_fraction", "full-precision warm-up; required for onebit_adam")}};
}

}  // namespace

const ObjectSpec& scenario_keys() {
  return built_once<make_scenario>();
}
const ObjectSpec& parallelism_keys() {
  return built_once<make_parallelism>();
}
const ObjectSpec& training_keys() {
  return built_once<make_training>();
}
const ObjectSpec& tp_overlap_sms_keys() {
  return built_once<make_tp_overlap_sms>();
}
const ObjectSpec& comm_keys() {
  return built_once<make_comm>();
}
const ObjectSpec& compression_keys() {
  return built_once<make_compression>();
}

std::vector<const ObjectSpec*> all_object_specs() {
  std::vector<const ObjectSpec*> out = {
      &scenario_keys(),    &parallelism_keys(),   &training_keys(),      &tp_overlap_sms_keys(),
      &comm_keys(),        &compression_keys(),   &model_keys(),         &moe_keys(),
      &mla_keys(),         &gpu_keys(),           &peak_tflops_keys(),   &cluster_keys(),
      &fabric_keys(),      &faults_keys(),        &failure_rates_keys(), &cause_keys(),
      &stragglers_keys(),  &loss_spikes_keys(),   &sample_filter_keys(), &drift_keys(),
      &mitigations_keys(), &checkpointing_keys(), &restart_keys(),       &cost_keys(),
      &campaign_keys()};
  for (FaultKind k : {FaultKind::node_lost, FaultKind::gpu_slowdown, FaultKind::link_down,
                      FaultKind::link_degraded}) {
    out.push_back(&event_keys(k));
  }
  out.push_back(&straggler_class_keys(false));
  out.push_back(&straggler_class_keys(true));
  return out;
}

const ObjectSpec* find_object_spec(std::string_view name) {
  for (const ObjectSpec* s : all_object_specs()) {
    if (s->name == name) return s;
  }
  return nullptr;
}

}  // namespace clustersim::input
