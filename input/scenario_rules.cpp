#include "input/scenario_rules.hpp"

#include <algorithm>
#include <numeric>

#include "core/errors.hpp"
#include "core/hybrid_ep.hpp"

namespace clustersim {

namespace {

std::string plural(std::int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Raises the scenario's errors at a JSON pointer of its file.
struct Rules {
  Scenario& s;
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw ConfigError(s.file, pointer, message);
  }
  void warn(std::string message) const { s.warnings.push_back(std::move(message)); }
};

void check_gpus(const Rules& r) {
  const Scenario& s = r.s;
  const ClusterSpec& c = s.cluster;
  const Parallelism& p = s.parallelism;
  if (s.gpus > c.total_gpus()) {
    r.fail("/gpus", std::to_string(s.gpus) + " GPUs requested but cluster \"" + c.name +
                        "\" has only " + std::to_string(c.total_gpus()) + " (" +
                        plural(c.nodes, "node") + " x " + std::to_string(c.gpus_per_node) + ")");
  }
  if (s.gpus > c.gpus_per_node && s.gpus % c.gpus_per_node != 0) {
    r.fail("/gpus", std::to_string(s.gpus) + " GPUs do not fill whole nodes of " +
                        std::to_string(c.gpus_per_node) + " GPUs");
  }
  const std::int64_t product = std::int64_t(p.dp) * p.tp * p.pp * p.cp;
  if (product != s.gpus) {
    r.fail("/parallelism", "dp x tp x pp x cp = " + std::to_string(p.dp) + " x " +
                               std::to_string(p.tp) + " x " + std::to_string(p.pp) + " x " +
                               std::to_string(p.cp) + " = " + std::to_string(product) +
                               ", but the scenario uses " + std::to_string(s.gpus) + " GPUs");
  }
}

void check_tensor_parallel(const Rules& r) {
  const int tp = r.s.parallelism.tp;
  const ModelSpec& m = r.s.model;
  const int per_node = r.s.cluster.gpus_per_node;
  const std::string tp_text = "tp " + std::to_string(tp);
  if (m.num_heads % tp != 0) {
    r.fail("/parallelism/tp", tp_text + " does not divide the model's " +
                                  std::to_string(m.num_heads) + " attention heads");
  }
  if (m.num_kv_heads % tp != 0 && tp % m.num_kv_heads != 0) {
    r.fail("/parallelism/tp", tp_text + " does not divide the model's " +
                                  std::to_string(m.num_kv_heads) + " KV heads");
  }
  if (m.ffn_hidden % tp != 0) {
    r.fail("/parallelism/tp",
           tp_text + " does not divide ffn_hidden_size " + std::to_string(m.ffn_hidden));
  }
  if (tp > per_node) {
    r.warn(tp_text + " spans nodes (" + std::to_string(per_node) +
           " GPUs per node): tensor-parallel traffic crosses the network");
  } else if (per_node % tp != 0) {
    r.fail("/parallelism/tp",
           tp_text + " does not divide " + std::to_string(per_node) + " GPUs per node");
  }
  if (r.s.parallelism.sequence_parallel && tp == 1) {
    r.fail("/parallelism/sequence_parallel", "sequence parallelism needs tp > 1");
  }
}

// training.recompute_modules names modules the model has.
void check_recompute_modules(const Rules& r) {
  const ModelSpec& m = r.s.model;
  const Training& t = r.s.training;
  if (t.recompute_mla_up_proj && !m.mla) {
    r.fail("/training/recompute_modules",
           "mla_up_proj needs a model with multi-head latent attention (an \"mla\" block)");
  }
  if (t.recompute_moe_act && !m.moe) {
    r.fail("/training/recompute_modules", "moe_act needs a mixture-of-experts model");
  }
  if (t.recompute_shared_experts && !(m.moe && m.moe->shared_experts > 0)) {
    r.fail("/training/recompute_modules",
           "shared_experts needs a mixture-of-experts model with shared experts");
  }
  if (t.recompute_mlp && m.moe_layer_count() == m.num_layers) {
    r.warn(
        "recompute_modules \"mlp\" recomputes the MLP of dense layers only (Megatron-Core "
        "leaves an MoE layer's alone) and every layer of this model is an MoE layer: it "
        "changes nothing; \"moe_act\" recomputes the routed experts' activation");
  }
}

// Op-level selective checkpointing (recompute "selective_op") as torchtitan applies it: to a
// dense block with multi-head or grouped-query attention run by a fused kernel (whose output the
// policy keeps), and on its own (it recomputes every norm and activation already).
void check_op_checkpoint(const Rules& r) {
  const ModelSpec& m = r.s.model;
  const Training& t = r.s.training;
  if (t.recompute != Recompute::selective_op) return;
  const std::string why = "\"selective_op\" (torchtitan's op-level checkpointing) ";
  if (m.moe || m.mla) {
    r.fail("/training/recompute",
           why + "is modelled for dense models with multi-head or grouped-query attention");
  }
  if (!fused(t.attention)) {
    r.fail("/training/attention",
           why +
               "keeps the output of a fused attention kernel (scaled_dot_product_attention); "
               "use \"flash\", \"flash2\" or \"flash3\"");
  }
  if (t.recompute_norms || t.recompute_mla_up_proj || t.recompute_moe_act || t.recompute_mlp) {
    r.fail("/training/recompute_modules", why + "recomputes every norm and activation already");
  }
  if (r.s.parallelism.tp > 1) {
    r.warn(why +
           "with tp > 1: the recomputed forward's tensor-parallel all-gathers are not "
           "issued again (its kernels are)");
  }
}

// PyTorch's eager kernels (kernel_fusion "compiled_blocks" or "eager") are those of torchtitan's
// dense Llama: RMSNorm, RoPE, SwiGLU.
void check_kernel_fusion(const Rules& r) {
  const ModelSpec& m = r.s.model;
  if (r.s.training.kernel_fusion == KernelFusion::fused) return;
  if (m.moe || m.mla || m.norm != "rmsnorm" || m.ffn != FfnKind::swiglu ||
      m.learned_position_embeddings) {
    r.fail("/training/kernel_fusion",
           "PyTorch's eager kernels are modelled on torchtitan's Llama (RMSNorm, RoPE, SwiGLU, "
           "dense, no MLA): use \"fused\" for model " +
               m.name);
  }
}

// HybridEP is timed at rates NVIDIA measured inside one NVLink domain, on Hopper and Blackwell
// (core/hybrid_ep.hpp): the EP group's ep x etp consecutive ranks must lie in one node.
void check_hybrid_ep(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const GpuSpec& gpu = r.s.cluster.gpu;
  if (!hybrid_ep_rate(gpu, r.s.training.moe_comm_sms)) {
    r.fail("/training/moe_dispatcher", "\"hybridep\" has no measured bandwidth for the " +
                                           std::string(kGpuArchNames.name(gpu.architecture)) +
                                           " GPU " + gpu.name +
                                           " (measured on Hopper and Blackwell only)");
  }
  const int span = p.ep * p.expert_tp();
  const int gpn = r.s.cluster.gpus_per_node;
  if (p.ep > 1 && (span > gpn || gpn % span != 0)) {
    r.fail("/training/moe_dispatcher",
           "\"hybridep\" is modelled inside one NVLink domain (its bandwidths were measured "
           "there): an EP group of ep x etp = " +
               std::to_string(span) + " GPUs does not fit in the cluster's " + std::to_string(gpn) +
               "-GPU nodes");
  }
}

// What the step simulator builds of an MoE model (workload/pass_builder.hpp): expert tensor
// parallelism of 1 or tp (the TP group then all-gathers the dispatched tokens), no ZeRO-3
// (Megatron-Core shards MoE models with its distributed optimizer).
void check_expert_simulation(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const ModelSpec& m = r.s.model;
  const Training& t = r.s.training;
  if (!m.moe) {
    if (t.moe_comm_overlap) {
      r.fail("/training/moe_comm_overlap", "needs a mixture-of-experts model");
    }
    if (t.moe_dispatcher != MoeDispatcher::alltoall) {
      r.fail("/training/moe_dispatcher", "needs a mixture-of-experts model");
    }
    if (t.moe_expert_gemm != MoeExpertGemm::per_expert) {
      r.fail("/training/moe_expert_gemm", "needs a mixture-of-experts model");
    }
  } else {
    const int sms = r.s.cluster.gpu.sm_count;
    const bool hybrid = t.moe_dispatcher == MoeDispatcher::hybridep;
    if (t.moe_comm_sms > 0 && !t.moe_comm_overlap && !hybrid) {
      r.fail("/training/moe_comm_sms",
             "applies with \"moe_comm_overlap\": true or the \"hybridep\" dispatcher only");
    }
    if (hybrid) check_hybrid_ep(r);
    if (t.moe_comm_sms > 0 && t.moe_comm_overlap && t.moe_comm_sms >= sms) {
      r.fail("/training/moe_comm_sms",
             std::to_string(t.moe_comm_sms) + " SMs leave none of the GPU's " +
                 (sms > 0 ? std::to_string(sms)
                          : std::string("(unknown: the GPU preset has no sm_count)")) +
                 " for compute");
    }
    if (p.expert_tp() != 1 && p.expert_tp() != p.tp) {
      r.fail("/parallelism/etp", "etp " + std::to_string(p.expert_tp()) +
                                     " is not simulated: use 1 or tp (" + std::to_string(p.tp) +
                                     ")");
    }
    if (p.zero_stage == 3) {
      r.fail("/parallelism/zero_stage",
             "ZeRO-3 with an MoE model is not simulated: Megatron-Core shards MoE training with "
             "its distributed optimizer (zero_stage 1)");
    }
  }
}

// Expert parallelism as Megatron-Core lays it out (megatron/core/parallel_state.py: the
// tp x cp x dp ranks of a pipeline stage are regrouped as etp x ep x expert-dp; transformer_
// config.py: experts divisible by ep, sequence parallelism with tp and ep).
void check_expert_parallel(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const ModelSpec& m = r.s.model;
  if (!m.moe) {
    if (p.ep > 1) {
      r.fail("/parallelism/ep", "ep " + std::to_string(p.ep) +
                                    " needs a mixture-of-experts "
                                    "model; \"" +
                                    m.name + "\" is dense (no \"moe\" block)");
    }
    if (p.etp > 0) {
      r.fail("/parallelism/etp",
             "etp (expert tensor parallelism) needs a mixture-of-experts "
             "model; \"" +
                 m.name + "\" is dense (no \"moe\" block)");
    }
    return;
  }
  const MoeSpec& e = *m.moe;
  const std::string ep_text = "ep " + std::to_string(p.ep);
  if (e.num_experts % p.ep != 0) {
    r.fail("/parallelism/ep", ep_text + " does not divide the model's " +
                                  std::to_string(e.num_experts) + " routed experts");
  }
  const int etp = p.expert_tp();
  const std::string etp_key = p.etp > 0 ? "/parallelism/etp" : "/parallelism/tp";
  const std::string etp_text =
      "expert tensor parallelism " + std::to_string(etp) + (p.etp > 0 ? "" : " (etp = tp)");
  const std::int64_t stage_ranks = std::int64_t(p.tp) * p.cp * p.dp;
  if (stage_ranks % (std::int64_t(etp) * p.ep) != 0) {
    r.fail(p.etp > 0 ? "/parallelism/etp" : "/parallelism/ep",
           "tp x cp x dp = " + std::to_string(stage_ranks) +
               " ranks per pipeline stage are not divisible by etp x ep = " + std::to_string(etp) +
               " x " + std::to_string(p.ep));
  }
  if (e.expert_ffn_hidden % etp != 0) {
    r.fail(etp_key, etp_text + " does not divide expert_ffn_hidden_size " +
                        std::to_string(e.expert_ffn_hidden));
  }
  if (e.shared_experts > 0 && e.shared_expert_ffn_hidden % p.tp != 0) {
    r.fail("/parallelism/tp", "tp " + std::to_string(p.tp) +
                                  " does not divide shared_expert_ffn_hidden_size " +
                                  std::to_string(e.shared_expert_ffn_hidden));
  }
  if (p.ep > 1 && p.tp > 1 && !p.sequence_parallel) {
    r.fail("/parallelism/sequence_parallel",
           "expert parallelism with tp > 1 needs sequence_parallel (Megatron-Core refuses it "
           "otherwise: the tokens are dispatched from their sequence-parallel shards)");
  }
}

void check_schedule(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  if (p.vpp > 1 && p.pp == 1) {
    r.fail("/parallelism/vpp",
           "vpp " + std::to_string(p.vpp) + " (virtual pipeline stages) needs pp > 1");
  }
  if (p.vpp > 1 && p.schedule != PipelineSchedule::interleaved) {
    r.fail("/parallelism/schedule",
           std::string("vpp > 1 needs the \"interleaved\" schedule, not \"") +
               to_string(p.schedule) + "\"");
  }
  if (p.vpp == 1 && p.schedule == PipelineSchedule::interleaved) {
    r.fail("/parallelism/vpp", "the interleaved schedule needs vpp > 1");
  }
  if (r.s.training.overlap_p2p_comm && p.schedule != PipelineSchedule::interleaved) {
    r.fail("/training/overlap_p2p_comm",
           std::string("overlap_p2p_comm needs the \"interleaved\" schedule, not \"") +
               to_string(p.schedule) + "\" (Megatron-Core overlaps pipeline messages only there)");
  }
  if (p.schedule == PipelineSchedule::dualpipe) {
    // DeepSeek-V3 technical report §3.2.1; the reference implementation asserts the same.
    if (p.pp < 2 || p.pp % 2 != 0) {
      r.fail("/parallelism/pp",
             "dualpipe needs an even pp (each rank holds stages s and "
             "pp - 1 - s), not " +
                 std::to_string(p.pp));
    }
    const std::int64_t m = r.s.micro_batches();
    if (m % 2 != 0 || m < 2 * std::int64_t(p.pp)) {
      r.fail("/training/global_batch",
             "dualpipe needs an even number of micro-batches per step, at least 2 x pp = " +
                 std::to_string(2 * p.pp) + ", not " + std::to_string(m));
    }
    if (p.zero_stage == 3) {
      r.fail("/parallelism/zero_stage",
             "ZeRO-3 with dualpipe is not simulated (DeepSeek-V3 shards only the optimizer "
             "states); use zero_stage 1 or 2");
    }
  }
}

// Megatron-Core's account_for_{embedding,loss}_in_pipeline_split.
void check_embedding_loss_split(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const int num_layers = r.s.model.num_layers;
  const int split_extra = p.layers_added_to_split();
  const char* key = p.embedding_in_pipeline_split
                        ? "/parallelism/account_for_embedding_in_pipeline_split"
                        : "/parallelism/account_for_loss_in_pipeline_split";
  const int chunks = p.pp * p.vpp;
  const int split_layers = num_layers + split_extra;
  if (!p.layers_per_stage.empty()) {
    r.fail(key,
           "cannot be combined with parallelism.layers_per_stage (Megatron-Core refuses "
           "it with an uneven split too)");
  }
  if (split_layers % chunks != 0) {
    r.fail(key, "the model's " + std::to_string(num_layers) + " layers + " +
                    std::to_string(split_extra) + " = " + std::to_string(split_layers) +
                    " do not split evenly over pp x vpp = " + std::to_string(chunks) +
                    " virtual stages");
  }
}

// One entry per pipeline stage, or with vpp > 1 one per virtual stage in virtual-stage order
// (chunk c of rank s at c x pp + s), as Megatron-Core's pipeline_model_parallel_layout lists
// them.
void check_uneven_split(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const int num_layers = r.s.model.num_layers;
  const int entries = p.pp * std::max(1, p.vpp);
  if (static_cast<int>(p.layers_per_stage.size()) != entries) {
    r.fail("/parallelism/layers_per_stage",
           "gives " + plural(static_cast<std::int64_t>(p.layers_per_stage.size()), "stage") +
               (p.vpp > 1 ? " but pp x vpp is " + std::to_string(entries) +
                                " (one entry per virtual stage)"
                          : " but pp is " + std::to_string(p.pp)));
  }
  const int sum = std::accumulate(p.layers_per_stage.begin(), p.layers_per_stage.end(), 0);
  if (sum != num_layers) {
    r.fail("/parallelism/layers_per_stage", "adds up to " + std::to_string(sum) +
                                                " layers but the model has " +
                                                std::to_string(num_layers));
  }
}

void check_layer_split(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const int num_layers = r.s.model.num_layers;
  if (p.layers_added_to_split() > 0) {
    check_embedding_loss_split(r);
  } else if (!p.layers_per_stage.empty()) {
    check_uneven_split(r);
  } else if (num_layers % (p.pp * p.vpp) != 0) {
    r.fail(p.vpp > 1 ? "/parallelism/vpp" : "/parallelism/pp",
           "pp x vpp = " + std::to_string(p.pp * p.vpp) + " does not divide the model's " +
               std::to_string(num_layers) +
               " layers; give parallelism.layers_per_stage for an uneven split");
  }
}

void check_overlap_and_attention(const Rules& r) {
  const Parallelism& p = r.s.parallelism;
  const Training& t = r.s.training;
  const GpuSpec& gpu = r.s.cluster.gpu;
  if (t.tp_comm_overlap && !(p.tp > 1 && p.sequence_parallel)) {
    r.fail("/training/tp_comm_overlap",
           "TP communication overlap needs tp > 1 and sequence_parallel (it pipelines the "
           "sequence-parallel all-gathers and reduce-scatters with their GEMMs; Megatron-Bridge "
           "CommOverlapConfig refuses it otherwise)");
  }
  const int overlap_sms = std::max(t.tp_overlap_proj_fprop_sms, t.tp_overlap_fc2_fprop_sms);
  if (overlap_sms > 0 && overlap_sms >= gpu.sm_count) {
    r.fail("/training/tp_comm_overlap_sms",
           gpu.sm_count == 0
               ? "GPU " + gpu.name + " has no sm_count to take SMs from"
               : std::to_string(overlap_sms) + " SMs leave none of the " +
                     std::to_string(gpu.sm_count) + " of GPU " + gpu.name + " to the GEMM");
  }
  if (p.cp > 1 && t.attention == AttentionKernel::unfused) {
    r.fail("/training/attention",
           "context parallelism (cp " + std::to_string(p.cp) +
               ") needs a fused attention kernel (\"flash\", \"flash2\" or \"flash3\"): "
               "Megatron-LM's ring attention is built on fused attention kernels");
  }
  if (p.cp > 1 && t.seq_len % (2 * p.cp) != 0) {
    r.fail("/parallelism/cp", "cp " + std::to_string(p.cp) + " needs seq_len divisible by 2 x cp");
  }
}

void check_batch(const Rules& r) {
  const Scenario& s = r.s;
  const Parallelism& p = s.parallelism;
  const Training& t = s.training;
  const std::int64_t per_step = std::int64_t(p.dp) * t.micro_batch;
  if (t.global_batch % per_step != 0) {
    r.fail("/training/global_batch",
           "global batch " + std::to_string(t.global_batch) +
               " is not divisible by dp x micro_batch = " + std::to_string(p.dp) + " x " +
               std::to_string(t.micro_batch) + " = " + std::to_string(per_step));
  }
  const std::int64_t micro_batches = s.micro_batches();
  if (p.schedule == PipelineSchedule::interleaved && micro_batches % p.pp != 0) {
    r.fail("/training/global_batch",
           "the interleaved schedule needs the " + plural(micro_batches, "micro-batch") +
               " per step to be a multiple of pp " + std::to_string(p.pp));
  }
  if (p.pp > 1 && micro_batches < p.pp) {
    r.warn(plural(micro_batches, "micro-batch") + " per step for " + std::to_string(p.pp) +
           " pipeline stages: the pipeline never fills and most of the step is bubble");
  }
  if (t.seq_len > s.model.max_seq_len) {
    r.warn("seq_len " + std::to_string(t.seq_len) + " exceeds the model's trained context " +
           std::to_string(s.model.max_seq_len));
  }
}

void check_precision_and_compression(const Rules& r) {
  const Scenario& s = r.s;
  const Parallelism& p = s.parallelism;
  const Training& t = s.training;
  if (t.precision == Dtype::fp8 && !s.cluster.gpu.peak_flops.count(Dtype::fp8)) {
    r.fail("/training/precision", "GPU " + s.cluster.gpu.name + " has no FP8 tensor cores");
  }
  if (t.precision == Dtype::fp8 && t.fp8_recipe == Fp8Recipe::mxfp8 &&
      s.cluster.gpu.architecture != GpuArch::blackwell) {
    r.fail("/training/fp8_recipe",
           "MXFP8 needs Blackwell's block-scaled tensor cores; GPU " + s.cluster.gpu.name +
               " is not a Blackwell GPU (Transformer Engine's MXFP8BlockScaling runs on compute "
               "capability 10.0)");
  }
  if (t.fp8_param_gather && t.fp8_recipe == Fp8Recipe::mxfp8 && p.zero_stage == 3) {
    r.fail("/training/fp8_param_gather",
           "MXFP8 parameters are modelled with the distributed optimizer (zero_stage 1 or 2) "
           "only: how an FSDP gathers and re-quantizes MXFP8 weights is not modelled");
  }
  if (t.fp8_param_gather && p.zero_stage == 0) {
    r.fail("/training/fp8_param_gather",
           "FP8 parameter all-gathers need zero_stage 1, 2 or 3 (with plain data parallelism "
           "no parameters are gathered; Megatron-LM refuses --fp8-param-gather without the "
           "distributed optimizer or FSDP)");
  }
  if (t.fp8_param_gather && p.zero_stage == 3 &&
      p.zero3_implementation == Zero3Implementation::deepspeed_2021) {
    r.fail("/training/fp8_param_gather",
           "DeepSpeed 2021's ZeRO-3 gathers FP16 parameters only; it has no FP8 all-gather");
  }
  const bool onebit = s.comm.compression.kind == Compression::onebit_adam;
  if (onebit && p.zero_stage > 1) {
    // 1-bit Adam compresses an all-reduce of the whole momentum with error feedback on every
    // rank (Tang et al. 2021, Alg. 1); ZeRO-2/3 replace that all-reduce by a reduce-scatter of
    // gradients into shards, so the two do not compose.
    r.fail("/comm/compression", "1-bit Adam cannot be combined with ZeRO stage " +
                                    std::to_string(p.zero_stage) +
                                    " (DeepSpeed supports it without ZeRO partitioning of "
                                    "gradients)");
  }
  if (s.comm.grad_dtype == Dtype::fp8 && onebit) {
    r.fail("/comm/grad_dtype", "fp8 gradients and 1-bit Adam are alternatives; choose one");
  }
  if (t.tokens_total > 0 && t.tokens_total < s.tokens_per_step()) {
    r.fail("/training/tokens_total",
           "the run's tokens_total is smaller than one step's " +
               std::to_string(static_cast<long long>(s.tokens_per_step())) + " tokens");
  }
}

}  // namespace

void validate_scenario(Scenario& scenario) {
  const Rules rules{scenario};
  check_gpus(rules);
  check_tensor_parallel(rules);
  check_expert_parallel(rules);
  check_expert_simulation(rules);
  check_recompute_modules(rules);
  check_op_checkpoint(rules);
  check_kernel_fusion(rules);
  check_schedule(rules);
  check_layer_split(rules);
  check_overlap_and_attention(rules);
  check_batch(rules);
  check_precision_and_compression(rules);
}

}  // namespace clustersim
