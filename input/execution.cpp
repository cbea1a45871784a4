#include "input/execution.hpp"

#include <algorithm>

#include "core/units.hpp"
#include "input/framework_names.hpp"
#include "input/input_keys.hpp"
#include "input/key_spec.hpp"
#include "input/nccl_settings.hpp"

namespace clustersim::input {

namespace {

// 1-bit Adam's paper warms up for 15-25% of BERT-Large pre-training (Tang et al. 2021, §5).
constexpr double kDefaultOnebitWarmupFraction = 0.15;

void parse_zero3_implementation(const JsonNode& n, Parallelism& p) {
  if (!n.has("zero3_implementation")) return;
  if (p.zero_stage != 3) {
    n.fail_at("zero3_implementation", "applies with \"zero_stage\": 3 only");
  }
  p.zero3_implementation = choice_or(n, parallelism_keys(), "zero3_implementation",
                                     kZero3ImplementationNames, Zero3Implementation::fsdp);
}

void parse_tp_overlap_sms(const JsonNode& n, Training& t) {
  const auto sms = n.find("tp_comm_overlap_sms");
  if (!sms) return;
  if (!t.tp_comm_overlap) {
    n.fail_at("tp_comm_overlap_sms", "applies with \"tp_comm_overlap\": true only");
  }
  sms->require_object();
  const ObjectSpec& keys = tp_overlap_sms_keys();
  only_table_keys(*sms, keys);
  if (t.tp_comm_overlap_implementation != TpOverlapImplementation::userbuffers) {
    n.fail_at("tp_comm_overlap_sms",
              "SMs taken by the transfers are Transformer Engine's userbuffers setting; "
              "\"tp_comm_overlap_implementation\" is not \"userbuffers\"");
  }
  t.tp_overlap_proj_fprop_sms = static_cast<int>(int_or(*sms, keys, "proj_fprop", 0));
  t.tp_overlap_fc2_fprop_sms = static_cast<int>(int_or(*sms, keys, "fc2_fprop", 0));
}

void parse_recompute(const JsonNode& n, Training& t) {
  t.recompute = choice_or(n, training_keys(), "recompute", kRecomputeNames, Recompute::none);
  if (!n.has("recompute_layers")) return;
  if (t.recompute != Recompute::full) {
    n.fail_at("recompute_layers",
              "recompute_layers applies to full recomputation (\"recompute\": \"full\") only");
  }
  t.recompute_layers = static_cast<int>(int_at(n, training_keys(), "recompute_layers"));
}

// training.recompute_modules: each module once, not with full recomputation (which recomputes
// every module anyway). Whether the model has the module is a rule across sections
// (scenario_rules.cpp).
void parse_recompute_modules(const JsonNode& n, Training& t) {
  const auto modules = n.find("recompute_modules");
  if (!modules) return;
  if (t.recompute == Recompute::full) {
    n.fail_at("recompute_modules",
              "full recomputation recomputes every module already; use \"none\" or "
              "\"selective\" with recompute_modules");
  }
  const KeySpec& item_key = training_keys().key("recompute_modules").items.front();
  std::vector<RecomputeModule> seen;
  for (const auto& item : modules->items()) {
    const std::string name = item.as_enum(item_key.choices);
    const RecomputeModule m = kRecomputeModuleNames.value(name);
    if (std::find(seen.begin(), seen.end(), m) != seen.end()) {
      item.fail("\"" + name + "\" is listed twice");
    }
    seen.push_back(m);
    switch (m) {
      case RecomputeModule::layernorm: t.recompute_norms = true; break;
      case RecomputeModule::mla_up_proj: t.recompute_mla_up_proj = true; break;
      case RecomputeModule::moe_act: t.recompute_moe_act = true; break;
      case RecomputeModule::mlp: t.recompute_mlp = true; break;
      case RecomputeModule::shared_experts: t.recompute_shared_experts = true; break;
    }
  }
}

CompressionSpec parse_compression(const JsonNode& comp) {
  CompressionSpec c;
  if (comp.is_string()) {
    c.kind = kCompressionNames.value(comp.as_enum(comm_keys().key("compression").choices));
    // Given by name alone, 1-bit Adam warms up for the paper's fraction.
    if (c.kind == Compression::onebit_adam) c.warmup_fraction = kDefaultOnebitWarmupFraction;
    return c;
  }
  const ObjectSpec& keys = compression_keys();
  only_table_keys(comp, keys);
  c.kind = choice_at(comp, keys, "kind", kCompressionNames);
  c.warmup_fraction = number_or(comp, keys, "warmup_fraction", 0.0);
  if (c.kind == Compression::onebit_adam && !comp.has("warmup_fraction")) {
    comp.fail_at("warmup_fraction", "1-bit Adam needs a full-precision warm-up fraction");
  }
  return c;
}

std::vector<std::string> parse_fp32_layer_groups(const JsonNode& groups) {
  std::vector<std::string> out;
  for (const auto& item : groups.items()) {
    const std::string g = item.as_enum(comm_keys().key("fp32_layer_groups").items.front().choices);
    if (std::find(out.begin(), out.end(), g) != out.end()) {
      item.fail("\"" + g + "\" is listed twice");
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace

Parallelism parse_parallelism(const JsonNode& n) {
  refuse_framework_names(n);
  const ObjectSpec& keys = parallelism_keys();
  only_table_keys(n, keys);
  Parallelism p;
  p.dp = static_cast<int>(int_or(n, keys, "dp", 1));
  p.tp = static_cast<int>(int_or(n, keys, "tp", 1));
  p.pp = static_cast<int>(int_or(n, keys, "pp", 1));
  p.cp = static_cast<int>(int_or(n, keys, "cp", 1));
  p.vpp = static_cast<int>(int_or(n, keys, "vpp", 1));
  p.ep = static_cast<int>(int_or(n, keys, "ep", 1));
  p.etp = static_cast<int>(int_or(n, keys, "etp", 0));
  p.sequence_parallel = n.bool_or("sequence_parallel", false);
  p.pipeline_scatter_gather = n.bool_or("pipeline_scatter_gather", false);
  p.zero_stage = static_cast<int>(int_or(n, keys, "zero_stage", 0));
  parse_zero3_implementation(n, p);
  p.cp_implementation =
      choice_or(n, keys, "cp_implementation", kCpImplementationNames, CpImplementation::p2p);
  const auto default_schedule =
      p.vpp > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  p.schedule = choice_or(n, keys, "schedule", kScheduleNames, default_schedule);
  if (const auto layers = n.find("layers_per_stage")) {
    const KeySpec& item_key = keys.key("layers_per_stage").items.front();
    for (const auto& item : layers->items()) {
      p.layers_per_stage.push_back(static_cast<int>(read_int(item, item_key)));
    }
  }
  p.embedding_in_pipeline_split = n.bool_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_pipeline_split = n.bool_or("account_for_loss_in_pipeline_split", false);
  return p;
}

Training parse_training(const JsonNode& n, bool model_dropout) {
  refuse_framework_names(n);
  const ObjectSpec& keys = training_keys();
  only_table_keys(n, keys);
  Training t;
  t.global_batch = int_at(n, keys, "global_batch");
  t.micro_batch = int_at(n, keys, "micro_batch");
  t.seq_len = static_cast<int>(int_at(n, keys, "seq_len"));
  t.tokens_total = number_or(n, keys, "tokens_total", 0.0);
  t.precision = choice_or(n, keys, "precision", kDtypeNames, Dtype::bf16);
  parse_recompute(n, t);
  parse_recompute_modules(n, t);
  t.fp8_activation_cache = n.bool_or("fp8_activation_cache", false);
  if (t.fp8_activation_cache && t.precision != Dtype::fp8) {
    n.fail_at("fp8_activation_cache", "the FP8 activation cache needs \"precision\": \"fp8\"");
  }
  t.dropout = n.bool_or("dropout", model_dropout);
  t.attention = choice_or(n, keys, "attention", kAttentionNames, AttentionKernel::flash);
  t.repeat_kv = n.bool_or("repeat_kv", false);
  t.kernel_fusion = choice_or(n, keys, "kernel_fusion", kKernelFusionNames, KernelFusion::fused);
  t.cuda_graphs = choice_or(n, keys, "cuda_graphs", kCudaGraphsNames, CudaGraphs::none);
  t.fp8_recipe = choice_or(n, keys, "fp8_recipe", kFp8RecipeNames, Fp8Recipe::delayed);
  t.cross_entropy = choice_or(n, keys, "cross_entropy", kCrossEntropyNames, CrossEntropy::fused);
  t.grad_accumulation =
      choice_or(n, keys, "grad_accumulation", kGradAccumulationNames, GradAccumulation::fused);
  if (t.grad_accumulation == GradAccumulation::deepspeed_bf16 && t.precision != Dtype::bf16) {
    n.fail_at("grad_accumulation",
              "DeepSpeed's BF16_Optimizer accumulation needs \"precision\": \"bf16\"");
  }
  t.optimizer_kernels =
      choice_or(n, keys, "optimizer_kernels", kOptimizerKernelsNames, OptimizerKernels::fused);
  if (n.has("fp8_recipe") && t.precision != Dtype::fp8) {
    n.fail_at("fp8_recipe", "an FP8 scaling recipe needs \"precision\": \"fp8\"");
  }
  t.fp8_gradient_gather = n.bool_or("fp8_gradient_gather", true);
  if (n.has("fp8_gradient_gather") && t.precision != Dtype::fp8) {
    n.fail_at("fp8_gradient_gather", "gathering gradients in FP8 needs \"precision\": \"fp8\"");
  }
  t.fp8_param_gather = n.bool_or("fp8_param_gather", false);
  if (t.fp8_param_gather && t.precision != Dtype::fp8) {
    n.fail_at("fp8_param_gather", "FP8 parameters need \"precision\": \"fp8\"");
  }
  t.tp_comm_overlap = n.bool_or("tp_comm_overlap", false);
  if (n.has("tp_comm_overlap_implementation") && !t.tp_comm_overlap) {
    n.fail_at("tp_comm_overlap_implementation", "applies with \"tp_comm_overlap\": true only");
  }
  t.tp_comm_overlap_implementation =
      choice_or(n, keys, "tp_comm_overlap_implementation", kTpOverlapImplementationNames,
                TpOverlapImplementation::userbuffers);
  t.tp_async_backward = n.bool_or("tp_async_backward", false);
  parse_tp_overlap_sms(n, t);
  t.moe_dispatcher =
      choice_or(n, keys, "moe_dispatcher", kMoeDispatcherNames, MoeDispatcher::alltoall);
  t.moe_expert_gemm =
      choice_or(n, keys, "moe_expert_gemm", kMoeExpertGemmNames, MoeExpertGemm::per_expert);
  t.moe_comm_overlap = n.bool_or("moe_comm_overlap", false);
  t.moe_comm_sms = static_cast<int>(int_or(n, keys, "moe_comm_sms", 0));
  t.optimizer_state_dtype = choice_or(n, keys, "optimizer_state_dtype", kDtypeNames, Dtype::fp32);
  t.optimizer_moments_dtype =
      choice_or(n, keys, "optimizer_moments_dtype", kDtypeNames, t.optimizer_state_dtype);
  t.overlap_p2p_comm = n.bool_or("overlap_p2p_comm", false);
  t.overlap_grad_reduce = n.bool_or("overlap_grad_reduce", true);
  t.overlap_param_gather = n.bool_or("overlap_param_gather", true);
  // Without the key: Megatron-Core's default, set once the layout is known
  // (default_grad_bucket_bytes).
  t.grad_bucket_bytes = number_or(n, keys, "grad_bucket_MiB", 0) * kMiB;
  t.reduce_per_micro_batch = choice_or(n, keys, "grad_reduce", "per_step") == "per_micro_batch";
  return t;
}

Dtype default_grad_dtype(Dtype precision) {
  return precision == Dtype::fp16 ? Dtype::fp16 : Dtype::fp32;
}

CommSpec parse_comm(const JsonNode& n, Dtype precision) {
  const ObjectSpec& keys = comm_keys();
  only_table_keys(n, keys);
  CommSpec c;
  c.grad_dtype = choice_or(n, keys, "grad_dtype", kDtypeNames, default_grad_dtype(precision));
  if (const auto comp = n.find("compression")) c.compression = parse_compression(*comp);
  if (const auto groups = n.find("fp32_layer_groups")) {
    c.fp32_layer_groups = parse_fp32_layer_groups(*groups);
  }
  if (const auto nccl = n.find("nccl")) c.nccl = parse_nccl_settings(*nccl);
  return c;
}

double default_grad_bucket_bytes(const Scenario& s) {
  const double ranks = static_cast<double>(s.parallelism.dp) * s.parallelism.cp;
  const double params =
      s.parallelism.zero_stage >= 3
          ? kMegatronBucketMinParams
          : std::max(kMegatronBucketMinParams, kMegatronBucketParamsPerDpRank * ranks);
  return params * bytes_per_element(s.comm.grad_dtype);
}

}  // namespace clustersim::input
