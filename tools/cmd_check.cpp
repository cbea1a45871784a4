// `clustersim check [SCENARIO] [--json FILE]`: validates a scenario, prints what it resolves to
// (model, cluster, layout, batch, NCCL settings), the derived quantities (parameters, FLOPs in
// both conventions, micro-batches, pipeline bubble) and the memory per GPU with the verdict.
//
// "Does not fit" is a result, not an error: the exit code is 0 either way. Bad input is a
// ConfigError (exit 2 from main) and then nothing is written.
#include <iomanip>
#include <iostream>
#include <sstream>
#include <vector>

#include "core/units.hpp"
#include "models/compute_cost.hpp"
#include "models/memory.hpp"
#include "models/pipeline.hpp"
#include "models/transformer.hpp"
#include "step/work_estimate.hpp"
#include "tools/cli.hpp"
#include "tools/commands.hpp"
#include "tools/load.hpp"
#include "tools/output.hpp"
#include "tools/work_budget.hpp"
#include "workload/workload.hpp"

namespace clustersim::cli {

namespace {

using models::FlopConvention;

const std::vector<OptionSpec>& check_options() {
  static const std::vector<OptionSpec> specs = {
      {"json", "", true, false,
       "also write the results as JSON to FILE (params_total, flops_per_step, "
       "memory_per_gpu_GiB, fits, breakdowns)"},
  };
  return specs;
}

std::string billions(double n) {
  return fixed(n / 1e9, 2) + " B";
}

// "1.23e18" style for FLOPs, with the SI prefix spelled out for readability.
std::string flops(double f) {
  const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP"};
  int u = 0;
  double v = f;
  while (v >= 1000 && u < 7) {
    v /= 1000;
    ++u;
  }
  return fixed(v, v >= 100 ? 1 : 2) + " " + units[u];
}

std::string gib(double bytes) {
  return fixed(bytes / kGiB, 2) + " GiB";
}

constexpr std::size_t kLabelWidth = 24;

void row(std::ostream& os, const std::string& label, const std::string& value) {
  label_row(os, label, value, kLabelWidth);
}

std::string describe_model(const ModelSpec& m) {
  std::ostringstream os;
  os << m.name << ": " << m.num_layers << " layers, hidden " << m.hidden << ", " << m.num_heads
     << " heads";
  if (m.num_kv_heads != m.num_heads) os << " (" << m.num_kv_heads << " KV, GQA)";
  os << ", "
     << (m.ffn == FfnKind::swiglu         ? "SwiGLU"
         : m.ffn == FfnKind::squared_relu ? "squared-ReLU"
                                          : "GeLU")
     << " FFN " << m.ffn_hidden << ", vocab " << m.vocab << ", "
     << (m.norm == "rmsnorm" ? "RMSNorm" : "LayerNorm") << ", "
     << (m.learned_position_embeddings ? "learned positions" : "RoPE") << ", "
     << (m.linear_biases ? "biases" : "no biases") << ", "
     << (m.tied_embeddings ? "tied" : "untied") << " embeddings";
  if (m.mla) {
    os << "; MLA (KV latent " << m.mla->kv_lora_rank << ", query latent " << m.mla->q_lora_rank
       << ", heads " << m.mla->qk_nope_head_dim << "+" << m.mla->qk_rope_head_dim << " / "
       << m.mla->v_head_dim << ")";
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    os << "; MoE in " << m.moe_layer_count() << " layers: top-" << e.experts_per_token << " of "
       << e.num_experts << " experts of width " << e.expert_ffn_hidden;
    if (e.shared_experts > 0) {
      os << " + " << e.shared_experts << " shared of width " << e.shared_expert_ffn_hidden;
    }
    os << ", "
       << (e.capacity_factor > 0 ? "capacity factor " + fixed(e.capacity_factor, 2)
                                 : std::string("dropless"));
    if (e.routing_imbalance > 1) os << ", routing imbalance " << fixed(e.routing_imbalance, 2);
  }
  if (m.mtp_layers > 0) os << "; " << m.mtp_layers << " MTP module(s)";
  return os.str();
}

std::string describe_cluster(const ClusterSpec& c) {
  std::ostringstream os;
  os << c.name << ": " << c.nodes << " nodes x " << c.gpus_per_node << " " << c.gpu.name
     << ", NVLink " << fixed(c.nvlink_Bps / 1e9, 0) << " GB/s per direction, " << c.nics_per_node
     << " x " << fixed(c.nic_Bps * 8 / 1e9, 0) << " Gb/s NIC" << (c.nics_per_node > 1 ? "s" : "")
     << " per node, " << (c.rail_optimized ? "rail-optimized " : "") << "fat tree ("
     << c.fabric.nodes_per_leaf << " nodes per leaf, oversubscription "
     << fixed(c.fabric.oversubscription, 1) << ")";
  return os.str();
}

std::string describe_gpu(const GpuSpec& g) {
  std::ostringstream os;
  os << g.name << ": ";
  bool first = true;
  for (Dtype d : {Dtype::bf16, Dtype::fp8}) {
    const auto it = g.peak_flops.find(d);
    if (it == g.peak_flops.end()) continue;
    os << (first ? "" : ", ") << to_string(d) << " " << fixed(it->second / 1e12, 1) << " TFLOP/s";
    first = false;
  }
  os << " dense, " << fixed(g.hbm_bytes / 1e9, 0) << " GB HBM";
  if (g.reported_memory_bytes > 0)
    os << " (" << fixed(g.reported_memory_bytes / kGiB, 2) << " GiB to CUDA)";
  os << " at " << fixed(g.hbm_Bps / 1e12, 2) << " TB/s";
  return os.str();
}

std::string describe_layout(const Scenario& s) {
  const Parallelism& p = s.parallelism;
  std::ostringstream os;
  os << s.gpus << " GPUs = DP " << p.dp << " x TP " << p.tp << " x PP " << p.pp;
  if (p.cp > 1) {
    os << " x CP " << p.cp << " ("
       << (p.cp_implementation == CpImplementation::p2p          ? "Transformer Engine's ring"
           : p.cp_implementation == CpImplementation::all_gather ? "K/V all-gathered"
                                                                 : "PyTorch's context_parallel")
       << ")";
  }
  if (p.sequence_parallel) os << ", sequence parallel";
  if (s.model.moe) {
    os << "; experts: EP " << p.ep << " x expert TP " << p.expert_tp() << " x expert DP "
       << p.expert_dp();
  }
  os << ", ZeRO-" << p.zero_stage;
  if (p.zero_stage == 3 && p.zero3_implementation == Zero3Implementation::deepspeed_2021) {
    os << " (DeepSpeed 2021: per-matrix gathers after a synchronize, per-rank copies, nothing "
          "overlapped)";
  }
  if (p.zero_stage == 3 && p.zero3_implementation == Zero3Implementation::fsdp2) {
    os << " (PyTorch FSDP2: each gather copied out, each reduce-scatter's gradients copied in"
       << (p.fsdp2_keeps_gathered()
               ? "; with pipeline parallelism gathered once a step and reduced after the last "
                 "backward"
               : "")
       << ")";
  }
  if (p.pp > 1) {
    os << ", " << to_string(p.schedule) << " schedule";
    if (p.vpp > 1) os << " (" << p.vpp << " chunks per rank)";
    if (p.embedding_in_pipeline_split || p.loss_in_pipeline_split) {
      os << ", "
         << (p.embedding_in_pipeline_split && p.loss_in_pipeline_split ? "embedding and loss"
             : p.embedding_in_pipeline_split                           ? "embedding"
                                                                       : "loss")
         << " counted as layers in the split";
    }
  }
  return os.str();
}

nlohmann::json stage_json(const models::StageMemory& st) {
  return {{"stage", st.stage},
          {"layers", st.layers},
          {"parameters", st.parameters},
          {"weights_bytes", st.weights_bytes},
          {"zero3_gathered_bytes", st.zero3_gathered_bytes},
          {"gradients_bytes", st.gradients_bytes},
          {"optimizer_bytes", st.optimizer_bytes},
          {"activations_bytes", st.activations_bytes},
          {"activation_per_micro_batch_bytes", st.activation_per_micro_batch_bytes},
          {"activation_transient_bytes", st.activation_transient_bytes},
          {"micro_batches_in_flight", st.micro_batches_in_flight},
          {"nccl_buffers_bytes", st.nccl_buffers_bytes},
          {"dp_bucket_bytes", st.dp_bucket_bytes},
          {"onebit_adam_bytes", st.onebit_adam_bytes},
          {"total_bytes", st.total_bytes()},
          {"total_GiB", st.total_bytes() / kGiB}};
}

// The MoE split of one GPU's memory, for check --json (MoE models only).
nlohmann::json moe_stage_json(const models::StageMemory& st) {
  return {{"moe_layers", st.moe_layers},
          {"expert_parameters", st.expert_parameters},
          {"expert_state_bytes", st.expert_state_bytes},
          {"dense_state_bytes",
           st.weights_bytes + st.gradients_bytes + st.optimizer_bytes - st.expert_state_bytes}};
}

// What check derives from a scenario: parameters, FLOPs, pipeline bubble and memory.
struct Derived {
  models::ParameterCounts params;
  models::StepFlops megatron;
  models::StepFlops palm;
  std::int64_t micro_batches = 0;
  double bubble_over_ideal = 0;
  double bubble_of_step = 0;
  models::MemoryEstimate memory;
};

Derived derive(const Scenario& s) {
  const Parallelism& p = s.parallelism;
  Derived d;
  d.params = models::count_parameters(s.model);
  d.megatron = models::flops_per_step(s, FlopConvention::megatron);
  d.palm = models::flops_per_step(s, FlopConvention::palm);
  d.micro_batches = s.micro_batches();
  d.bubble_over_ideal = models::bubble_over_ideal(p.pp, p.vpp, d.micro_batches, p.schedule);
  d.bubble_of_step = models::bubble_fraction_of_step(p.pp, p.vpp, d.micro_batches, p.schedule);
  d.memory = models::estimate_memory(s);
  return d;
}

std::string batch_text(const Scenario& s, std::int64_t micro_batches) {
  std::ostringstream b;
  b << s.training.global_batch << " sequences x " << s.training.seq_len
    << " tokens = " << fixed(s.tokens_per_step() / 1e6, 2) << "M tokens per step; micro-batch "
    << s.training.micro_batch << ", " << micro_batches << " micro-batch"
    << (micro_batches == 1 ? "" : "es") << " per DP rank per step";
  return b.str();
}

// The training line's TP overlap clause: none, userbuffers, or PyTorch's async TP.
std::string tp_overlap_text(const Training& tr) {
  if (!tr.tp_comm_overlap) return "";
  std::string t = ", TP communication overlapped with GEMMs";
  if (tr.tp_comm_overlap_implementation == TpOverlapImplementation::torch) {
    t += " (PyTorch's async TP: not the backward's reduce-scatters of summed input gradients)";
  }
  return t;
}

std::string training_text(const Scenario& s) {
  const Training& tr = s.training;
  std::ostringstream t;
  const bool fp8 = tr.precision == Dtype::fp8;
  const bool mxfp8 = fp8 && tr.fp8_recipe == Fp8Recipe::mxfp8;
  t << to_string(tr.precision)
    << (fp8 && tr.fp8_recipe == Fp8Recipe::current ? " (current scaling)" : "")
    << (mxfp8 ? " (MXFP8: a scale per 32 elements)" : "")
    << (fp8 && !tr.fp8_gradient_gather ? " (gradients gathered in BF16)" : "")
    << (tr.fp8_param_gather ? (mxfp8 ? " (MXFP8 parameters, gathered in BF16)"
                                     : " (FP8 parameters, gathered in FP8)")
                            : "")
    << ", " << to_string(tr.recompute) << " recomputation";
  if (tr.recompute == Recompute::full && tr.recompute_layers > 0) {
    t << " of " << models::recomputed_layers(s) << " of " << s.model.num_layers
      << " layers (the first " << tr.recompute_layers << " of each chunk)";
  }
  std::vector<std::string> modules;
  if (tr.recompute_norms) modules.push_back("the pre-norms");
  if (tr.recompute_mla_up_proj) modules.push_back("MLA's latent norms and up-projections");
  if (tr.recompute_moe_act) modules.push_back("the routed experts' activation");
  if (tr.recompute_mlp) modules.push_back("the dense layers' MLP");
  if (tr.recompute_shared_experts) modules.push_back("the MoE layers' shared experts");
  for (std::size_t i = 0; i < modules.size(); ++i) {
    t << (i == 0 ? ", recomputed in the backward: " : ", ") << modules[i];
  }
  if (tr.fp8_activation_cache) t << ", FP8 activation cache (E5M6 attention output)";
  if (tr.kernel_fusion == KernelFusion::eager) t << ", PyTorch's eager element-wise kernels";
  if (tr.cuda_graphs == CudaGraphs::full_iteration)
    t << ", the whole step replayed from a CUDA graph";
  if (tr.kernel_fusion == KernelFusion::compiled_blocks) {
    t << ", compiled blocks (final norm and loss eager)";
  }
  if (tr.cross_entropy == CrossEntropy::unfused) t << ", unfused cross entropy";
  if (tr.grad_accumulation == GradAccumulation::autograd) {
    t << ", micro-batch gradients added into .grad by autograd";
  }
  if (tr.grad_accumulation == GradAccumulation::deepspeed_bf16) {
    t << ", micro-batch gradients cast and added into FP32 (DeepSpeed BF16_Optimizer)";
  }
  if (tr.optimizer_kernels == OptimizerKernels::foreach_) {
    t << ", PyTorch's foreach AdamW and clip_grad_norm_";
  }
  t << ", " << to_string(tr.attention) << " attention" << (tr.dropout ? "" : ", no dropout")
    << tp_overlap_text(tr)
    << (tr.tp_overlap_proj_fprop_sms + tr.tp_overlap_fc2_fprop_sms > 0
            ? " (taking " + std::to_string(tr.tp_overlap_proj_fprop_sms) + " and " +
                  std::to_string(tr.tp_overlap_fc2_fprop_sms) +
                  " SMs from the forward output-projection and FFN-out GEMMs)"
            : std::string())
    << (tr.tp_async_backward && !tr.tp_comm_overlap && s.parallelism.tp > 1
            ? ", the backward's TP collectives beside its GEMMs"
            : "")
    << (tr.overlap_p2p_comm ? ", each pipeline receive posted when the pass before it ends" : "")
    << ", DP reduction "
    << (tr.reduce_per_micro_batch ? "after every micro-batch" : "once per step")
    << (s.parallelism.fsdp2_keeps_gathered() ? " (after the last backward)"
        : tr.overlap_grad_reduce             ? " (overlapped with backward)"
                                             : "");
  return t.str();
}

std::string communication_text(const CommSpec& comm) {
  std::ostringstream c;
  c << "gradients in " << to_string(comm.grad_dtype);
  if (!comm.fp32_layer_groups.empty()) {
    c << " (FP32 for";
    for (const auto& g : comm.fp32_layer_groups) c << " " << g;
    c << ")";
  }
  c << ", compression " << to_string(comm.compression.kind);
  if (comm.compression.kind == Compression::onebit_adam) {
    c << " (warm-up " << fixed(100 * comm.compression.warmup_fraction, 0) << "% of the run)";
  }
  return c.str();
}

void print_notes(std::ostream& os, const Scenario& s) {
  if (!s.comm.nccl.notes.empty()) {
    os << "  NCCL settings\n";
    for (const auto& n : s.comm.nccl.notes) {
      std::string l = "    " + n.name + "=" + n.value;
      if (l.size() < 34) l.resize(34, ' ');
      os << l << (n.modelled ? "modelled: " : "no modelled effect: ") << n.explanation << "\n";
    }
  }
  if (!s.warnings.empty()) {
    os << "  warnings\n";
    for (const auto& w : s.warnings) os << "    - " << w << "\n";
  }
}

// The scenario as resolved: model, cluster, layout, batch, training, communication.
void print_inputs(std::ostream& os, const Scenario& s, const Derived& d,
                  const models::ComputeCalibration& compute) {
  os << "Scenario " << s.name << "  (" << s.file << ")\n";
  row(os, "model", describe_model(s.model));
  row(os, "cluster", describe_cluster(s.cluster));
  row(os, "GPU", describe_gpu(s.cluster.gpu));
  system_rows(os, s, compute, kLabelWidth);
  row(os, "layout", describe_layout(s));
  row(os, "batch", batch_text(s, d.micro_batches));
  row(os, "training", training_text(s));
  if (s.training.tokens_total > 0) {
    row(os, "run",
        fixed(s.training.tokens_total / 1e12, 2) +
            "T tokens = " + fixed(s.training.tokens_total / s.tokens_per_step(), 0) + " steps");
  }
  row(os, "communication", communication_text(s.comm));
  print_notes(os, s);
}

// Total against active parameters of an MoE model, what each layer kind holds.
void print_moe_parameters(std::ostream& os, const models::ParameterCounts& p) {
  row(os, "MoE parameters",
      billions(p.active()) + " active per token of " + billions(p.total() - p.mtp) +
          " (main model); " + std::to_string(p.dense_layers()) + " dense layers x " +
          billions(p.per_layer()) + ", " + std::to_string(p.moe_layers) + " MoE layers x " +
          billions(p.per_moe_layer(false)) + " (" + billions(p.per_moe_layer(true)) +
          " active); routed experts " + billions(p.routed_experts()));
  if (p.mtp > 0) {
    row(os, "MTP modules",
        billions(p.mtp) + " (" + billions(p.mtp_active) +
            " active; embedding and head shared), included in the total");
  }
}

void print_derived(std::ostream& os, const Scenario& s, const Derived& d) {
  const models::ParameterCounts& params = d.params;
  const double peak =
      s.cluster.gpu.peak(s.training.precision == Dtype::fp8 ? Dtype::fp8 : Dtype::bf16);
  os << "\nDerived\n";
  row(os, "parameters",
      billions(params.total()) + " total: embedding " +
          billions(params.embedding + params.position_embedding) + ", " +
          std::to_string(params.num_layers) + " layers" +
          (params.moe_layers > 0 ? std::string(" (below)") : " x " + billions(params.per_layer())) +
          ", LM head " + (params.lm_head > 0 ? billions(params.lm_head) : "tied") + "; PaLM N " +
          billions(params.palm_n()));
  if (s.model.moe) print_moe_parameters(os, params);
  auto conv_row = [&](const char* label, const models::StepFlops& f) {
    row(os, label,
        flops(f.per_token.model()) + "/token model, " + flops(f.per_token.hardware()) +
            "/token hardware; per step " + flops(f.model()) + " model, " + flops(f.hardware()) +
            " hardware");
  };
  conv_row("FLOPs (Megatron-LM)", d.megatron);
  conv_row("FLOPs (PaLM 6N+12lhs)", d.palm);
  row(os, "compute bound",
      human_seconds(d.megatron.model() / (s.gpus * peak)) + " per step at 100% MFU, " +
          human_seconds(d.megatron.model() / (s.gpus * peak * 0.5)) + " at 50%");
  if (s.parallelism.pp > 1) {
    // ZB-H1: (p-1)(F+B-W) / (m (F+B+W)) with the paper's F = B = W; DualPipe: (p/2-1)(F&B+B-3W)
    // / (m (F+B)) with F&B = F + B (models/pipeline.hpp).
    const PipelineSchedule sched = s.parallelism.schedule;
    const char* form = sched == PipelineSchedule::zb_h1      ? "(p-1)/3m (F = B = W)"
                       : sched == PipelineSchedule::dualpipe ? "(p-2)/3m (F = B = W)"
                       : s.parallelism.vpp > 1               ? "(p-1)/(v m)"
                                                             : "(p-1)/m";
    row(os, "pipeline bubble",
        std::string(form) + " = " + fixed(100 * d.bubble_over_ideal, 2) + "% of ideal compute, " +
            fixed(100 * d.bubble_of_step, 2) + "% of the step");
  } else {
    row(os, "pipeline bubble", "none (pp = 1)");
  }
}

// The MoE token exchanges of one step on the busiest pipeline rank (workload::expert_exchange).
void print_expert_exchange(std::ostream& os, const Scenario& s,
                           const models::ComputeCalibration& calibration) {
  const workload::Workload w =
      workload::build_workload(s, models::ComputeCostModel(s.cluster.gpu, calibration));
  workload::ExpertExchange most;
  int stage = 0;
  for (int st = 0; st < w.pp; ++st) {
    const workload::ExpertExchange x = workload::expert_exchange(w, st);
    if (x.bytes > most.bytes) {
      most = x;
      stage = st;
    }
  }
  std::string text = "none (ep 1: every token's experts are on its GPU)";
  if (most.calls > 0) {
    text = fixed(most.bytes / 1e9, 2) + " GB per GPU per step in " + std::to_string(most.calls) +
           " all-to-alls (send buffers, pipeline stage " + std::to_string(stage) + "; " +
           to_string(s.training.moe_dispatcher) + " dispatcher" +
           (s.training.moe_comm_overlap ? ", overlapped with compute)" : ")");
  }
  row(os, "EP exchanges", text);
}

// Model states of one GPU split into the routed experts' and the rest (MoE models).
void print_moe_memory(std::ostream& os, const Scenario& s, const models::StageMemory& st) {
  const Parallelism& p = s.parallelism;
  const double states = st.weights_bytes + st.gradients_bytes + st.optimizer_bytes;
  row(os, "MoE split",
      "experts " + gib(st.expert_state_bytes) + " (" + billions(st.expert_parameters) +
          " parameters: " + std::to_string(s.model.moe->num_experts / p.ep) + " experts x " +
          std::to_string(st.moe_layers) + " MoE layers, 1/" + std::to_string(p.expert_tp()) +
          " of each; ZeRO over expert DP " + std::to_string(p.expert_dp()) + "), dense " +
          gib(states - st.expert_state_bytes) + " (ZeRO over DP x CP " +
          std::to_string(p.dp * p.cp) + ")");
}

void print_memory_parts(std::ostream& os, const Scenario& s, const models::StageMemory& worst) {
  const Parallelism& p = s.parallelism;
  const std::string shard = ", 1/" + std::to_string(p.dp * p.cp);
  const bool kept = p.fsdp2_keeps_gathered();
  row(os, "weights",
      gib(worst.weights_bytes) + "  (" + billions(worst.parameters) +
          " parameters in this GPU's model slice" +
          (kept ? shard + " of them as the FP32 shard, all of them in 16 bits, kept gathered "
                          "all step under pipeline parallelism (FSDP2)"
           : p.zero_stage >= 3 ? shard + " of them resident (ZeRO-3)"
                               : "") +
          ")");
  if (worst.zero3_gathered_bytes > 0) {
    row(os, "ZeRO-3 gathered",
        gib(worst.zero3_gathered_bytes) +
            (p.zero3_implementation == Zero3Implementation::deepspeed_2021
                 ? "  (1 weight matrix at a time + its gradient, DeepSpeed 2021)"
                 : "  (2 units prefetched + 1 unsharded gradient)"));
  }
  row(os, "gradients",
      gib(worst.gradients_bytes) +
          (kept && s.micro_batches() > 1
               ? "  (unsharded, accumulated over the step's micro-batches until the last backward)"
               : ""));
  row(os, "optimizer states", gib(worst.optimizer_bytes));
  row(os, "activations",
      gib(worst.activations_bytes) + "  (" + gib(worst.activation_per_micro_batch_bytes) +
          " per micro-batch x " + fixed(worst.micro_batches_in_flight, 2) + " in flight + " +
          gib(worst.activation_transient_bytes) + " recompute working set)");
  row(os, "NCCL buffers",
      gib(worst.nccl_buffers_bytes) +
          "  (connections NCCL makes on first use: Ring per communicator, Tree where all-reduces "
          "run, point-to-point; DeepEP's own buffers with its dispatcher; NVLS not counted; per "
          "communicator below)");
  if (worst.dp_bucket_bytes > 0) row(os, "DP buckets", gib(worst.dp_bucket_bytes));
  if (worst.onebit_adam_bytes > 0) row(os, "1-bit Adam buffers", gib(worst.onebit_adam_bytes));
  if (s.model.moe) print_moe_memory(os, s, worst);
}

void print_memory(std::ostream& os, const Scenario& s, const models::MemoryEstimate& mem) {
  const models::StageMemory& worst = mem.worst();
  os << "\nMemory per GPU";
  if (s.parallelism.pp > 1) {
    os << " (stage " << worst.stage << " of " << s.parallelism.pp << ", the largest)";
  }
  os << "\n";
  print_memory_parts(os, s, worst);
  row(os, "total", gib(worst.total_bytes()));
  row(os, "usable HBM", gib(mem.usable_bytes()) + " of " + gib(mem.hbm_bytes));
  if (s.parallelism.pp > 1) {
    std::string per_stage;
    for (const auto& st : mem.stages) {
      per_stage +=
          (per_stage.empty() ? "" : ", ") + std::to_string(st.stage) + ": " + gib(st.total_bytes());
    }
    row(os, "per stage", per_stage);
  }
  os << "  assumptions\n";
  for (const auto& a : mem.assumptions) os << "    - " << a << "\n";
}

// What simulating one step creates (step/work_estimate.hpp) and the budget `run` holds it to.
void print_simulation_work(std::ostream& os, const step::WorkEstimate& e) {
  std::ostringstream work;
  work << std::setprecision(2) << e.ops << " ops in " << e.stages << " stage programs ("
       << e.stored_ops << " stored, " << e.passes << " passes), " << e.transfers
       << " pipeline transfers, " << e.launches << " reductions and gathers, " << e.actors
       << (e.actors == 1 ? " actor, " : " actors, ") << e.gpus << " GPUs";
  os << "\nSimulating one step (`run`)\n";
  row(os, "work", work.str());
  row(os, "peak memory",
      "about " + step::describe(e) + "; `run` refuses above --max-memory (default " +
          gib(kDefaultMemoryFraction * physical_memory_bytes()) + " here)");
}

nlohmann::json work_json(const step::WorkEstimate& e) {
  return {{"ops", e.ops},
          {"stored_ops", e.stored_ops},
          {"passes", e.passes},
          {"pipeline_transfers", e.transfers},
          {"launches", e.launches},
          {"gathers", e.gathers},
          {"actors", e.actors},
          {"gpus", e.gpus},
          {"peak_memory_bytes", e.bytes},
          {"main_term", e.main_term}};
}

void print_verdict(std::ostream& os, const models::MemoryEstimate& mem) {
  os << "\nVerdict: ";
  if (mem.fits()) {
    os << "FITS - " << gib(mem.peak_bytes()) << " of " << gib(mem.usable_bytes())
       << " usable per GPU, " << gib(mem.headroom_bytes()) << " to spare\n";
  } else if (mem.tight()) {
    os << "TIGHT - needs " << gib(mem.peak_bytes()) << " per GPU, " << gib(-mem.headroom_bytes())
       << " over the " << gib(mem.usable_bytes()) << " usable but inside the "
       << fixed(100 * mem.reserve.allocator_fragmentation_fraction, 0)
       << "% allocator fragmentation reserve (unverified; " << gib(mem.physical_bytes())
       << " without it): it fits if the allocator fragments less; `run` simulates it\n";
  } else {
    os << "DOES NOT FIT - needs " << gib(mem.peak_bytes()) << " per GPU but only "
       << gib(mem.usable_bytes()) << " is usable: " << gib(-mem.headroom_bytes()) << " over ("
       << fixed(mem.peak_bytes() / mem.usable_bytes(), 2) << "x)\n";
  }
}

nlohmann::json params_json(const models::ParameterCounts& params) {
  nlohmann::json j = {{"embedding", params.embedding},
                      {"position_embedding", params.position_embedding},
                      {"per_layer", params.per_layer()},
                      {"attention_per_layer", params.attention_per_layer},
                      {"mlp_per_layer", params.mlp_per_layer},
                      {"norms_per_layer", params.norms_per_layer},
                      {"final_norm", params.final_norm},
                      {"lm_head", params.lm_head},
                      {"palm_n", params.palm_n()}};
  if (params.moe_layers > 0) {
    j["active"] = params.active();
    j["moe_layers"] = params.moe_layers;
    j["per_moe_layer"] = params.per_moe_layer(false);
    j["per_moe_layer_active"] = params.per_moe_layer(true);
    j["routed_experts"] = params.routed_experts();
    j["mtp"] = params.mtp;
  }
  return j;
}

nlohmann::json flops_json(const models::StepFlops& f) {
  return {{"per_token_model", f.per_token.model()},
          {"per_token_hardware", f.per_token.hardware()},
          {"per_step_model", f.model()},
          {"per_step_hardware", f.hardware()}};
}

nlohmann::json layout_json(const Parallelism& p) {
  return {{"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"cp", p.cp},
          {"vpp", p.vpp},
          {"sequence_parallel", p.sequence_parallel},
          {"zero_stage", p.zero_stage},
          {"schedule", to_string(p.schedule)}};
}

nlohmann::json check_json(const Scenario& s, const Derived& d) {
  const models::MemoryEstimate& mem = d.memory;
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : mem.stages) {
    stages.push_back(stage_json(st));
    if (s.model.moe) stages.back()["moe"] = moe_stage_json(st);
  }
  nlohmann::json out = {
      {"scenario", s.name},
      {"file", s.file},
      {"model", s.model.name},
      {"cluster", s.cluster.name},
      {"gpus", s.gpus},
      {"layout", layout_json(s.parallelism)},
      {"params_total", d.params.total()},
      {"params", params_json(d.params)},
      {"tokens_per_step", s.tokens_per_step()},
      {"flops_per_step", d.megatron.model()},
      {"flops_by_convention", {{"megatron", flops_json(d.megatron)}, {"palm", flops_json(d.palm)}}},
      {"micro_batches", d.micro_batches},
      {"bubble_over_ideal", d.bubble_over_ideal},
      {"bubble_fraction_of_step", d.bubble_of_step},
      {"memory_per_gpu_GiB", mem.peak_bytes() / kGiB},
      {"memory_worst_stage", mem.worst_stage},
      {"memory_stages", stages},
      {"hbm_GiB", mem.hbm_bytes / kGiB},
      {"usable_GiB", mem.usable_bytes() / kGiB},
      {"headroom_GiB", mem.headroom_bytes() / kGiB},
      {"fits", mem.fits()},
      {"tight", mem.tight()},
      {"memory_assumptions", mem.assumptions},
      {"warnings", s.warnings},
  };
  if (s.model.moe) {
    out["layout"]["ep"] = s.parallelism.ep;
    out["layout"]["expert_tp"] = s.parallelism.expert_tp();
    out["layout"]["expert_dp"] = s.parallelism.expert_dp();
  }
  return out;
}

}  // namespace

std::string usage_check() {
  return "usage: clustersim check [SCENARIO] [--json FILE]\n\n"
         "Validates SCENARIO (default: " +
         default_scenario_path() +
         ") and prints the resolved model, cluster and layout, parameters, FLOPs per token and "
         "per step (Megatron-LM and PaLM conventions), micro-batches, the pipeline bubble, and "
         "the memory per GPU with a verdict: fits or does not fit, and by how much. Exit code 0 "
         "whether or not it fits (the verdict is the output); 2 for bad input, in which case no "
         "file is written.\n\nJSON: flops_per_step is the Megatron-convention model FLOPs of one "
         "optimizer step (what MFU divides); flops_by_convention has all four.\n\noptions:\n" +
         describe_options(check_options());
}

int cmd_check(const std::vector<std::string>& argv) {
  const Args args(argv, check_options(), 1);
  const std::string path =
      args.positional().empty() ? default_scenario_path() : args.positional()[0];
  // The input as run and campaign read it (tools/load.hpp): bad input anywhere, calibration
  // files included, is a ConfigError (exit 2) naming the file and JSON pointer.
  const CommandInput checked = load_command_input(path);
  const Scenario& s = checked.scenario;
  const Derived d = derive(s);
  const step::WorkEstimate work = step::estimate_step_work(s, checked.calibrations);
  print_inputs(std::cout, s, d, checked.calibrations.compute);
  print_derived(std::cout, s, d);
  // The exchanges are counted on the step's programs: only when building them is affordable.
  const bool affordable = work.bytes <= kDefaultMemoryFraction * physical_memory_bytes();
  if (s.model.moe && affordable) print_expert_exchange(std::cout, s, checked.calibrations.compute);
  if (s.model.moe && !affordable)
    row(std::cout, "EP exchanges", "not counted: see the step's work below");
  print_memory(std::cout, s, d.memory);
  print_simulation_work(std::cout, work);
  print_verdict(std::cout, d.memory);
  if (const auto json_path = args.value("json")) {
    nlohmann::json j = check_json(s, d);
    j["simulation_estimate"] = work_json(work);
    write_json_file(*json_path, j);
  }
  return 0;
}

}  // namespace clustersim::cli
