#include "workload/workload.hpp"

#include "workload/grad_buckets.hpp"
#include "workload/pass_builder.hpp"
#include "workload/stage_program.hpp"

namespace clustersim::workload {

namespace {

// Modelling choices of this build worth reporting next to its results.
std::vector<std::string> modelling_notes(const Scenario& s, bool compressed_phase) {
  const Training& tr = s.training;
  std::vector<std::string> notes;
  if (compressed_phase) {
    notes.push_back(
        "1-bit Adam compressed phase: momentum compressed to sign bits with error feedback and "
        "reduced after the backward pass (all-to-all then all-gather, Tang et al. 2021)");
  }
  if (tr.recompute == Recompute::selective && fused(tr.attention)) {
    notes.push_back(
        "selective recomputation of the attention core costs no extra kernel time: the "
        "FlashAttention backward already recomputes the scores (Dao 2023)");
  }
  if (tr.tp_comm_overlap) {
    const bool torch = tr.tp_comm_overlap_implementation == TpOverlapImplementation::torch;
    notes.push_back(
        std::string("TP communication overlap: each sequence-parallel all-gather / "
                    "reduce-scatter ") +
        (torch ? "fused with one matmul is pipelined in tp chunks with it (PyTorch's "
                 "micro-pipelined TP)"
               : "is pipelined in tp chunks with its GEMM (Transformer Engine userbuffers)") +
        "; exposed = comm / tp + max(comm - GEMM, 0) (tp - 1) / tp; " +
        (torch ? "the backward's reduce-scatters of summed input gradients (separate Q/K/V, "
                 "gate/up projections) run alone"
               : "the GEMM's slowdown from the SMs the transfers use is not modelled"));
  }
  if (tr.attention == AttentionKernel::unfused) {
    notes.push_back(
        "unfused attention: batched Q K^T and P V GEMMs over the full score matrix with the "
        "fused softmax and attention dropout reading and writing it (Megatron-LM 2021-22)");
  }
  if (s.parallelism.zero_stage == 3 && !tr.reduce_per_micro_batch) {
    notes.push_back(
        "ZeRO-3 with per-step gradient reduction keeps unsharded gradients across micro-batches "
        "(FSDP no_sync); the memory model decides whether that fits");
  }
  const Parallelism& par = s.parallelism;
  if (reduction_plan(s, compressed_phase).expert_buckets) {
    notes.push_back(
        "the routed experts' gradients are reduced over their expert-data-parallel "
        "group of " +
        std::to_string(par.expert_dp()) + " rank(s) (tp x cp x dp / (etp x ep))" +
        (par.zero_stage >= 1 ? ", which shards their optimizer states" : "") +
        "; the rest over dp x cp = " + std::to_string(par.dp * par.cp) + " (Megatron-Core)");
  }
  return notes;
}

}  // namespace

const char* to_string(CollKind k) {
  switch (k) {
    case CollKind::all_reduce: return "all_reduce";
    case CollKind::reduce_scatter: return "reduce_scatter";
    case CollKind::all_gather: return "all_gather";
    case CollKind::all_to_all: return "all_to_all";
  }
  return "?";
}

const char* to_string(Group g) {
  switch (g) {
    case Group::tp: return "tp";
    case Group::cp: return "cp";
    case Group::dp: return "dp";
    case Group::embedding: return "embedding";
    case Group::ep: return "ep";
    case Group::ep_rail: return "ep_rail";
    case Group::expert_dp: return "expert_dp";
  }
  return "?";
}

const char* to_string(ComputeKind k) {
  switch (k) {
    case ComputeKind::forward: return "forward";
    case ComputeKind::backward: return "backward";
    case ComputeKind::recompute: return "recompute";
    case ComputeKind::embedding: return "embedding";
    case ComputeKind::lm_head: return "lm_head";
    case ComputeKind::optimizer: return "optimizer";
    case ComputeKind::compression: return "compression";
    case ComputeKind::gather_copy: return "gather_copy";
    case ComputeKind::grad_accumulation: return "grad_accumulation";
  }
  return "?";
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::compute: return "compute";
    case OpKind::collective: return "collective";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::recv_post: return "recv_post";
    case OpKind::grad_ready: return "grad_ready";
    case OpKind::grad_wait: return "grad_wait";
    case OpKind::gather_issue: return "gather_issue";
    case OpKind::gather_wait: return "gather_wait";
  }
  return "?";
}

double GradBucket::bytes() const {
  double b = 0;
  for (const auto& c : calls) b += c.bytes;
  return b;
}

ExpertExchange expert_exchange(const Workload& w, int stage) {
  ExpertExchange out;
  for (const Op& op : w.stages.at(static_cast<std::size_t>(stage)).ops) {
    if (op.kind != OpKind::collective) continue;
    const Collective& c = w.collectives[static_cast<std::size_t>(op.index)];
    if (!is_expert_group(c.group)) continue;
    out.bytes += c.bytes;
    ++out.calls;
  }
  return out;
}

double grad_bytes_per_element(Dtype dtype) {
  return bytes_per_element(dtype);
}

double exposed_tp_comm_s(double comm_s, double gemm_s, int tp) {
  if (gemm_s <= 0 || tp < 2) return comm_s;
  const double chunks = tp;
  return comm_s / chunks + std::max(comm_s - gemm_s, 0.0) * (chunks - 1) / chunks;
}

BesideGemm beside_gemm(double comm_s, double gemm_s, double sm_taken) {
  const double rate = 1 - sm_taken;
  // Slowed for the collective's whole length, or finished inside it.
  const double gemm = comm_s * rate < gemm_s ? gemm_s + comm_s * sm_taken : gemm_s / rate;
  return {gemm - gemm_s, std::max(comm_s - gemm, 0.0)};
}

double onebit_payload_bytes(double elements, int n) {
  constexpr double kBitsPerByte = 8;
  constexpr double kScaleBytes = 4;  // one FP32 scale per chunk (Tang et al. 2021 section 4.1)
  return elements / kBitsPerByte + kScaleBytes * n;
}

models::ComputeCostModel as_launched(const Scenario& s, const models::ComputeCostModel& c) {
  return s.training.cuda_graphs == CudaGraphs::full_iteration ? c.replayed_from_cuda_graph() : c;
}

LayerCosts layer_costs(const Scenario& scenario, const models::ComputeCostModel& compute) {
  const models::ComputeCostModel launched = as_launched(scenario, compute);
  PassBuilder b(scenario, launched);  // keeps a reference
  LayerCosts out;
  out.forward = total(b.layer_forward());
  out.backward = total(b.layer_backward());
  if (scenario.training.recompute == Recompute::full) out.recompute = out.forward;
  if (scenario.training.recompute == Recompute::selective) {
    // layer_backward() runs the recomputed attention core inline; report it separately.
    out.recompute = b.selective_recompute();
    out.backward -= out.recompute;
  }
  // layer_backward() runs the recompute modules and op-level recomputation inline too.
  models::OpCost modules = b.module_recompute(false);
  modules += b.op_checkpoint_recompute();
  out.recompute += modules;
  out.backward -= modules;
  out.forward_gemm_flops =
      b.qkv().flops() + b.out_proj().flops() + b.ffn_in().flops() + b.ffn_out().flops();
  out.forward_attention_flops = b.attention_forward().flops;
  return out;
}

namespace {

// With moe_comm_sms, the compute-bound kernels run on the SMs the all-to-all kernels leave:
// every peak scaled by (sm_count - sms) / sm_count; memory-bound kernels keep their bandwidth.
models::ComputeCostModel comm_sm_share(const Scenario& s, const models::ComputeCostModel& c) {
  const int sms = s.training.moe_comm_sms;
  if (!s.model.moe || !s.training.moe_comm_overlap || sms <= 0) return c;
  GpuSpec gpu = c.gpu();
  const double share = static_cast<double>(gpu.sm_count - sms) / gpu.sm_count;
  for (auto& [dtype, peak] : gpu.peak_flops) peak *= share;
  return models::ComputeCostModel(gpu, c.calibration());
}

}  // namespace

Workload build_workload(const Scenario& s, const models::ComputeCostModel& compute,
                        const WorkloadOptions& options) {
  const Parallelism& par = s.parallelism;
  Workload w;
  w.pp = par.pp;
  w.vpp = par.vpp;
  w.chain = StageChain::of(par.schedule, par.pp, par.vpp);
  w.tp = par.tp;
  w.dp = par.dp;
  w.cp = par.cp;
  w.micro_batches = static_cast<int>(s.micro_batches());
  w.tokens_per_step = s.tokens_per_step();
  w.compressed_phase =
      s.comm.compression.kind == Compression::onebit_adam && options.compressed_phase;

  // comm_sm_share builds a model afresh from the GPU, so the launch mode is applied after it.
  const models::ComputeCostModel overlapped = as_launched(s, comm_sm_share(s, compute));
  PassBuilder passes(s, overlapped);
  const StepPlan plan{s,
                      overlapped,
                      passes.step_passes(),
                      pipeline_message_bytes(passes.dims(), s.parallelism.pipeline_scatter_gather),
                      passes.message_gather(),
                      w.compressed_phase};
  w.notes = modelling_notes(s, w.compressed_phase);
  for (int stage = 0; stage < par.pp; ++stage) w.stages.push_back(build_stage_program(plan, stage));
  w.collectives = passes.collectives();
  if (s.model.moe && s.training.moe_comm_overlap) {
    w.moe_overlap.on = true;
    for (const Segments* pass : {&plan.passes.moe_layer_forward, &plan.passes.moe_layer_backward}) {
      for (const Segment& seg : *pass) {
        const Group g = seg.is_collective ? w.collectives[seg.collective].group : Group::tp;
        if (is_expert_group(g)) w.moe_overlap.a2a.push_back(seg.collective);
        if (!seg.is_collective) w.moe_overlap.layer_compute_s += seg.cost.time_s;
      }
    }
  }
  return w;
}

}  // namespace clustersim::workload
