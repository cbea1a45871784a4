#include "input/execution.hpp"

#include <algorithm>

#include "core/units.hpp"
#include "input/framework_names.hpp"
#include "input/limits.hpp"
#include "input/nccl_settings.hpp"
#include "input/read_helpers.hpp"

namespace clustersim::input {

namespace {

// Megatron-LM's default DDP bucket: 40M parameters (distributed.py, bucket_size = 40000000);
// in BF16 gradients that is 80 MB.
constexpr double kDefaultGradBucketBytes = 40e6 * 2.0;
// 1-bit Adam's paper warms up for 15-25% of BERT-Large pre-training (Tang et al. 2021, §5).
constexpr double kDefaultOnebitWarmupFraction = 0.15;

void parse_zero3_implementation(const JsonNode& n, Parallelism& p) {
  if (!n.has("zero3_implementation")) return;
  if (p.zero_stage != 3) {
    n.fail_at("zero3_implementation", "applies with \"zero_stage\": 3 only");
  }
  p.zero3_implementation =
      enum_or(n, "zero3_implementation", kZero3ImplementationNames, Zero3Implementation::fsdp);
}

void parse_tp_overlap_sms(const JsonNode& n, Training& t) {
  const auto sms = n.find("tp_comm_overlap_sms");
  if (!sms) return;
  if (!t.tp_comm_overlap) {
    n.fail_at("tp_comm_overlap_sms", "applies with \"tp_comm_overlap\": true only");
  }
  sms->require_object();
  sms->only_keys({"proj_fprop", "fc2_fprop"});
  t.tp_overlap_proj_fprop_sms = static_cast<int>(sms->int_or("proj_fprop", 0, 0, 1 << 16));
  t.tp_overlap_fc2_fprop_sms = static_cast<int>(sms->int_or("fc2_fprop", 0, 0, 1 << 16));
}

void parse_recompute(const JsonNode& n, Training& t) {
  t.recompute = enum_or(n, "recompute", kRecomputeNames, Recompute::none);
  if (!n.has("recompute_layers")) return;
  if (t.recompute != Recompute::full) {
    n.fail_at("recompute_layers",
              "recompute_layers applies to full recomputation (\"recompute\": \"full\") only");
  }
  t.recompute_layers = static_cast<int>(n.int_at("recompute_layers", 1, 1 << 20));
}

CompressionSpec parse_compression(const JsonNode& comp) {
  CompressionSpec c;
  if (comp.is_string()) {
    c.kind = kCompressionNames.value(comp.as_enum(kCompressionNames.names()));
    // Given by name alone, 1-bit Adam warms up for the paper's fraction.
    if (c.kind == Compression::onebit_adam) c.warmup_fraction = kDefaultOnebitWarmupFraction;
    return c;
  }
  comp.only_keys({"kind", "warmup_fraction"});
  c.kind = enum_at(comp, "kind", kCompressionNames);
  c.warmup_fraction = comp.fraction_or("warmup_fraction", 0.0);
  if (c.kind == Compression::onebit_adam && !comp.has("warmup_fraction")) {
    comp.fail_at("warmup_fraction", "1-bit Adam needs a full-precision warm-up fraction");
  }
  return c;
}

std::vector<std::string> parse_fp32_layer_groups(const JsonNode& groups) {
  std::vector<std::string> out;
  for (const auto& item : groups.items()) {
    const std::string g = item.as_enum({"embedding", "lm_head"});
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
  n.only_keys({"dp", "tp", "pp", "cp", "vpp", "ep", "etp", "sequence_parallel", "zero_stage",
               "zero3_implementation", "schedule", "layers_per_stage",
               "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"});
  Parallelism p;
  p.dp = static_cast<int>(n.int_or("dp", 1, 1, 1 << 20));
  p.tp = static_cast<int>(n.int_or("tp", 1, 1, 1 << 12));
  p.pp = static_cast<int>(n.int_or("pp", 1, 1, 1 << 12));
  p.cp = static_cast<int>(n.int_or("cp", 1, 1, 1 << 12));
  p.vpp = static_cast<int>(n.int_or("vpp", 1, 1, 1 << 10));
  p.ep = static_cast<int>(n.int_or("ep", 1, 1, 1 << 16));
  p.etp = static_cast<int>(n.int_or("etp", 0, 1, 1 << 12));
  p.sequence_parallel = n.bool_or("sequence_parallel", false);
  p.zero_stage = static_cast<int>(n.int_or("zero_stage", 0, 0, 3));
  parse_zero3_implementation(n, p);
  const auto default_schedule =
      p.vpp > 1 ? PipelineSchedule::interleaved : PipelineSchedule::one_f_one_b;
  p.schedule = enum_or(n, "schedule", kScheduleNames, default_schedule);
  if (const auto layers = n.find("layers_per_stage")) {
    for (const auto& item : layers->items()) {
      p.layers_per_stage.push_back(static_cast<int>(item.as_int_in(1, 1 << 20)));
    }
  }
  p.embedding_in_pipeline_split = n.bool_or("account_for_embedding_in_pipeline_split", false);
  p.loss_in_pipeline_split = n.bool_or("account_for_loss_in_pipeline_split", false);
  return p;
}

Training parse_training(const JsonNode& n) {
  refuse_framework_names(n);
  n.only_keys({"global_batch", "micro_batch", "seq_len", "tokens_total", "precision", "recompute",
               "recompute_layers", "dropout", "attention", "tp_comm_overlap", "tp_comm_overlap_sms",
               "overlap_grad_reduce", "overlap_param_gather", "grad_bucket_MiB", "grad_reduce",
               "optimizer_state_dtype", "moe_dispatcher", "moe_comm_overlap", "moe_comm_sms"});
  Training t;
  t.global_batch = n.int_at("global_batch", 1, std::int64_t(1) << 40);
  t.micro_batch = n.int_at("micro_batch", 1, std::int64_t(1) << 30);
  t.seq_len = static_cast<int>(n.int_at("seq_len", 1, 1 << 26));
  t.tokens_total = n.number_in_or("tokens_total", 0.0, 1.0, kMaxTokensTotal);
  t.precision =
      enum_or(n, "precision", kDtypeNames, {Dtype::bf16, Dtype::fp16, Dtype::fp8}, Dtype::bf16);
  parse_recompute(n, t);
  t.dropout = n.bool_or("dropout", true);
  t.attention = enum_or(n, "attention", kAttentionNames, AttentionKernel::flash);
  t.tp_comm_overlap = n.bool_or("tp_comm_overlap", false);
  parse_tp_overlap_sms(n, t);
  t.moe_dispatcher = enum_or(n, "moe_dispatcher", kMoeDispatcherNames, MoeDispatcher::alltoall);
  t.moe_comm_overlap = n.bool_or("moe_comm_overlap", false);
  t.moe_comm_sms = static_cast<int>(n.int_or("moe_comm_sms", 0, 0, 1 << 16));
  t.optimizer_state_dtype =
      enum_or(n, "optimizer_state_dtype", kDtypeNames, {Dtype::fp32, Dtype::bf16}, Dtype::fp32);
  t.overlap_grad_reduce = n.bool_or("overlap_grad_reduce", true);
  t.overlap_param_gather = n.bool_or("overlap_param_gather", true);
  t.grad_bucket_bytes = n.positive_or("grad_bucket_MiB", kDefaultGradBucketBytes / kMiB) * kMiB;
  t.reduce_per_micro_batch =
      n.enum_or("grad_reduce", {"per_step", "per_micro_batch"}, "per_step") == "per_micro_batch";
  return t;
}

CommSpec parse_comm(const JsonNode& n) {
  n.only_keys({"grad_dtype", "compression", "fp32_layer_groups", "nccl"});
  CommSpec c;
  c.grad_dtype = enum_or(n, "grad_dtype", kDtypeNames,
                         {Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::fp8}, Dtype::bf16);
  if (const auto comp = n.find("compression")) c.compression = parse_compression(*comp);
  if (const auto groups = n.find("fp32_layer_groups")) {
    c.fp32_layer_groups = parse_fp32_layer_groups(*groups);
  }
  if (const auto nccl = n.find("nccl")) c.nccl = parse_nccl_settings(*nccl);
  return c;
}

}  // namespace clustersim::input
