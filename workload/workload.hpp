// The training step as programs: for each pipeline rank, the ordered list of what one GPU of
// that rank does in one optimizer step (compute kernels, tensor-parallel collectives, pipeline
// sends and receives, gradient buckets handed to the data-parallel reduction, ZeRO parameter
// gathers, the optimizer update). No SimGrid: sim/ replays these programs on the platform.
//
// Symmetry: every tensor-parallel rank of a stage and every data-parallel replica runs the same
// program, so one program per pipeline rank ("rank class") describes all dp x tp x cp GPUs of
// that stage. The step simulator breaks the symmetry only where faults do.
//
// Sources of the shapes and volumes:
//   * Kernels and TP collectives of a layer: Shoeybi et al. 2019 (Megatron-LM, section 3) and
//     Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
//     section 4.2.2: with sequence parallelism each all-reduce becomes a reduce-scatter plus an
//     all-gather of the same s b h tensor).
//   * Pipeline messages: one activation (forward) or its gradient (backward) of s b h elements
//     per micro-batch and stage boundary, each TP rank sending 1/t of it (Narayanan et al. 2021,
//     section 4.1 scatter/gather optimisation; with sequence parallelism the tensor is already
//     split).
//   * Data-parallel reduction: gradients in buckets of training.grad_bucket_bytes, in reverse
//     layer order as backward produces them (PyTorch DDP / Megatron-LM DDP); all-reduce without
//     ZeRO, reduce-scatter with ZeRO >= 1 (Rajbhandari et al. 2020), followed for ZeRO-1/2 by an
//     all-gather of the updated parameters; ZeRO-3 gathers each layer's parameters before its
//     forward and backward (FSDP / DeepSpeed stage 3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/scenario.hpp"
#include "models/compute_cost.hpp"
#include "workload/op_sequence.hpp"
#include "workload/schedule.hpp"

namespace clustersim::workload {

enum class CollKind : unsigned char { all_reduce, reduce_scatter, all_gather, all_to_all };
const char* to_string(CollKind k);

// The process group a collective runs in.
enum class Group : unsigned char {
  tp,         // tensor-parallel group (inside a node in sane layouts)
  cp,         // context-parallel group
  dp,         // data-parallel group (x context parallel: gradients are reduced over dp * cp)
  embedding,  // first and last pipeline stage (tied embedding gradients, Megatron-LM)
  ep,         // expert-parallel group (MoE token dispatch and combine; topologies::place_experts)
  ep_rail,    // the members of a GPU's EP group with its in-node index, one per node (DeepEP)
  // Megatron-Core's expert-data-parallel group (tp x cp x dp / (etp x ep) ranks at stride
  // etp x ep, topologies::place_experts): it reduces the routed experts' gradients and shards
  // their optimizer states, as dp does the rest of a layer's.
  expert_dp,
};
const char* to_string(Group g);
inline bool is_expert_group(Group g) {
  return g == Group::ep || g == Group::ep_rail;
}

// A TP/CP collective of one size, costed once by the simulator and referenced by index.
struct Collective {
  CollKind kind = CollKind::all_reduce;
  Group group = Group::tp;
  double bytes = 0;  // nccl-tests size: full buffer (all_reduce), gathered/scattered total
  Dtype dtype = Dtype::bf16;
  std::string label;  // e.g. "layer all-reduce"
  // > 0: the exchange takes bytes / measured_Bps, a measured algorithm bandwidth per GPU
  // (HybridEP, core/hybrid_ep.hpp), instead of NCCL's simulated time.
  double measured_Bps = 0;
};

// One communication call of a gradient reduction (a bucket may need several: e.g. FP32 and
// FP16 parts, or all-to-all then all-gather for 1-bit Adam).
struct CommCall {
  CollKind kind = CollKind::all_reduce;
  double bytes = 0;  // nccl-tests size
  Dtype dtype = Dtype::bf16;
};

// Gradients handed to the DP reduction at once.
struct GradBucket {
  int id = 0;
  int chunk = 0;
  double params = 0;  // parameters on this rank whose gradients the bucket carries
  std::vector<CommCall> calls;
  Group group = Group::dp;
  std::string label;  // e.g. "layers 79-77"
  // Device work the reduction stream runs for this bucket besides its calls (DeepSpeed 2021:
  // flattening the gradients, dividing them, copying the result back).
  double stream_work_s = 0;
  double bytes() const;
};

// A ZeRO parameter all-gather (ZeRO-1/2: after the optimizer; ZeRO-3: before a layer's use).
struct ParamGather {
  int id = 0;
  double params = 0;
  CommCall call;
  Group group = Group::dp;  // dp, or expert_dp for the routed experts' buckets
  std::string label;
};

// The program of one GPU of pipeline rank `stage`.
struct StageProgram {
  int stage = 0;
  int layers = 0;            // Transformer layers on this rank (all chunks)
  double params = 0;         // parameters on one GPU of this rank (before ZeRO sharding)
  double expert_params = 0;  // of params, the routed experts' (sharded over expert_dp)
  OpSequence ops;            // in program order, stored once per distinct pass (op_sequence.hpp)
  std::vector<GradBucket> buckets;
  std::vector<ParamGather> gathers;
  double compute_s = 0;       // sum of compute op times on a healthy GPU
  double executed_flops = 0;  // sum of compute op FLOPs (causal attention counted halved)
};

// Options of a workload build.
struct WorkloadOptions {
  // 1-bit Adam: build the compressed phase (sign bits + error feedback) instead of the
  // full-precision warm-up phase. Ignored without comm.compression onebit_adam.
  bool compressed_phase = false;
};

// The EP all-to-alls of an MoE layer hidden behind paired compute (training.moe_comm_overlap):
// per MoE layer, forward and backward, max(0, A - C) of the all-to-all time A stays exposed,
// C being the layer's forward and backward compute; each all-to-all keeps its share of it.
struct MoeOverlap {
  bool on = false;
  double layer_compute_s = 0;  // C
  std::vector<int> a2a;        // the layer's EP collectives, once per use (their times sum to A)
};

struct Workload {
  int pp = 1, vpp = 1, tp = 1, dp = 1, cp = 1;
  StageChain chain;  // which pipeline rank holds each virtual stage
  MoeOverlap moe_overlap;
  int micro_batches = 1;
  double tokens_per_step = 0;
  bool compressed_phase = false;
  std::vector<StageProgram> stages;     // one per pipeline rank
  std::vector<Collective> collectives;  // distinct TP/CP collectives
  std::vector<std::string> notes;       // modelling choices worth reporting
};

// Builds the programs of one training step. Preconditions: `scenario` passed
// validate_scenario(). Throws std::invalid_argument on an internal inconsistency.
Workload build_workload(const Scenario& scenario, const models::ComputeCostModel& compute,
                        const WorkloadOptions& options = {});

// Per-layer kernel costs on one GPU (exposed for tests and reports).
struct LayerCosts {
  models::OpCost forward;         // all forward kernels of one layer
  models::OpCost backward;        // all backward kernels (without recomputation)
  models::OpCost recompute;       // what recomputation adds to the backward
  double forward_gemm_flops = 0;  // the GEMM part of `forward`
  double forward_attention_flops = 0;
};
LayerCosts layer_costs(const Scenario& scenario, const models::ComputeCostModel& compute);

// The GPU's kernels issued as the scenario issues them: replayed from a CUDA graph when
// training.cuda_graphs says so, else one by one.
models::ComputeCostModel as_launched(const Scenario& s, const models::ComputeCostModel& c);

// Exposed time of a TP collective of `comm_s` pipelined in `tp` chunks with a GEMM of `gemm_s`
// (Transformer Engine userbuffers: chunk i's transfer overlaps chunk i-1's GEMM). The pair
// takes (comm + gemm) / tp + max(comm, gemm) (tp - 1) / tp; the GEMM is counted as compute,
// so the collective exposes comm / tp + max(comm - gemm, 0) (tp - 1) / tp.
double exposed_tp_comm_s(double comm_s, double gemm_s, int tp);
// A TP collective of `comm_s` launched asynchronously beside a GEMM of `gemm_s`
// (tp_async_backward) while its NCCL kernel holds `sm_taken` of the GPU's SMs (channels over SMs,
// docs/sm-contention.md): the GEMM runs at 1 - sm_taken of its rate until the collective ends,
// then at its own. The GEMM is counted as compute; `gemm_slowdown_s` is what it loses to NCCL's
// SMs, `exposed_s` what the collective lasts beyond the slowed GEMM. The pair takes
// gemm + comm x sm_taken when the GEMM outlasts the collective, comm when it does not.
struct BesideGemm {
  double gemm_slowdown_s = 0;
  double exposed_s = 0;
};
BesideGemm beside_gemm(double comm_s, double gemm_s, double sm_taken);

// What one GPU of pipeline rank `stage` hands to the MoE token exchanges in a step: the sum of
// the nccl-tests sizes (send buffers) of its expert-group all-to-alls, and how many there are.
struct ExpertExchange {
  double bytes = 0;
  int calls = 0;
};
ExpertExchange expert_exchange(const Workload& w, int stage);

// Gradient bytes per element on the wire for `dtype` (fp32 4, bf16/fp16 2, fp8 1).
double grad_bytes_per_element(Dtype dtype);

// 1-bit Adam (Tang et al. 2021): bytes of one compressed all-reduce of `elements` values among
// n ranks: one sign bit per element plus one FP32 scale per chunk (n chunks).
double onebit_payload_bytes(double elements, int n);

}  // namespace clustersim::workload
