#include "models/memory.hpp"

#include <algorithm>
#include <cmath>

#include "core/units.hpp"
#include "models/layer_activations.hpp"
#include "models/nccl_buffers.hpp"
#include "models/op_checkpoint.hpp"
#include "models/pipeline.hpp"
#include "models/transformer.hpp"

namespace clustersim::models {

namespace {

// Bytes of a 16-bit activation element and of a dropout mask element (Korthikanti et al. 2022
// §4.1: "we assume activations are stored in 16-bit floating point ... dropout masks need a
// single byte per element").
constexpr double kActivationBytes = 2.0;
constexpr double kMaskBytes = 1.0;
// Under FP8, Transformer Engine's linear layers save the FP8 cast of their input (1 byte per
// element) for the weight-gradient GEMM instead of the 16-bit tensor: Linear saves `inputmat`
// (the FP8 data) "if fp8 and not override_linear_precision.wgrad", LayerNormLinear allocates
// ln_out as uint8 "if fp8 and not return_layernorm_output" and saves it
// (transformer_engine/pytorch/module/linear.py and layernorm_linear.py, TE v1.8).
constexpr double kFp8ActivationBytes = 1.0;
// Megatron computes the cross-entropy over vocab-parallel logits in FP32 and keeps them for the
// backward pass (megatron/core/tensor_parallel/cross_entropy.py).
constexpr double kLogitBytes = 4.0;
// Resident 16-bit weights (BF16/FP16 training; Rajbhandari et al. §3.1: 2 bytes per parameter).
constexpr double kWeightBytes = 2.0;
// FP8 training (Transformer Engine) keeps an FP8 copy of each weight next to the BF16 one.
// UNVERIFIED: one extra byte per parameter, no transposed copy counted. With FP8 parameters
// (training.fp8_param_gather) the FP8 copy is the only resident weight: Transformer Engine's
// primary FP8 weights (fp8_model_init; the FP32 master lives in the optimizer) and torchao's
// FSDP2 float8 all-gather, whose gathered parameter is the FP8 tensor itself.
constexpr double kFp8WeightCacheBytes = 1.0;
// An MXFP8 weight (Fp8Recipe::mxfp8) is held both ways, row-wise for the forward GEMM and
// column-wise for the input-gradient GEMM, each FP8 byte with an E8M0 scale byte per 32 elements
// (Transformer Engine 2.9 MXFP8Tensor: rowwise_data, columnwise_data and their scale_inv).
constexpr double kMxfp8WeightBytes = 2 * (1.0 + 1.0 / 32);
// Gradients accumulate in at least 16 bits even when they are communicated in FP8.
constexpr double kMinGradAccumulationBytes = 2.0;
constexpr double kFp32Bytes = 4.0;
// FlashAttention keeps, per query row and head, the FP32 log-sum-exp of the scores for its
// backward pass instead of the score matrix (Dao et al. 2022, FlashAttention Algorithm 2: "the
// softmax normalization statistics (m, l)"; FlashAttention-2 Algorithm 1 stores L = m + log l).
// Its dropout regenerates the mask from the RNG state, so no mask is stored either.
constexpr double kFlashSoftmaxStatsBytes = kFp32Bytes;
// ZeRO-3 keeps the unit being computed and the one being prefetched gathered: PyTorch FSDP's
// rate limiter allows "at most two in-flight all-gathers" (limit_all_gathers, default True since
// pytorch#104900); the unit's unsharded gradient exists until its reduce-scatter.
constexpr double kZero3GatheredUnits = 2.0;
constexpr double kZero3UnshardedGradUnits = 1.0;
// ZeRO-2/3 (DeepSpeed) reduce gradients through double-buffered buckets of reduce_bucket_size.
constexpr double kZeroReduceBuckets = 2.0;
// 1-bit Adam (Tang et al. 2021, Alg. 1) keeps a worker error the size of the local momentum and
// a server error the size of the rank's 1/n chunk, both FP32 in DeepSpeed
// (deepspeed/runtime/fp16/onebit/adam.py); the compressed all-reduce sends and receives one sign
// bit per element.
constexpr double kOnebitErrorBytes = 4.0;
constexpr double kOnebitSignBytes = 1.0 / 8.0;
constexpr double kOnebitSignBuffers = 2.0;  // send and receive

double gib(double bytes) {
  return bytes / kGiB;
}

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

bool in_fp32_groups(const Scenario& s, const char* group) {
  const auto& g = s.comm.fp32_layer_groups;
  return std::find(g.begin(), g.end(), group) != g.end();
}

}  // namespace

double adam_state_bytes_per_param(Dtype master_dtype, Dtype moments_dtype) {
  return kAdamMasterTensors * bytes_per_element(master_dtype) +
         kAdamMomentTensors * bytes_per_element(moments_dtype);
}

ActivationCoefficients activation_coefficients(const ModelSpec& m, int seq_len,
                                               AttentionKernel attention, bool dropout,
                                               bool fp8_linears) {
  // Korthikanti et al. 2022 §4.1 count, per layer, for a GPT layer (MHA, 4h GeLU MLP, dropout),
  // in bytes per token (their s b factored out):
  //   attention 11h + 5as: QKV input 2h, Q and K 4h, softmax output 2as, softmax dropout mask
  //             as, dropout output 2as, V 2h, output-projection input 2h, dropout mask h;
  //   MLP       19h: first-linear input 2h, GeLU input 8h, GeLU output (second-linear input)
  //             8h, dropout mask h;
  //   norms     4h: the inputs of the two LayerNorms.
  // Tensor parallelism leaves 10h replicated (norm inputs 4h, QKV and MLP inputs 4h, the two
  // dropout masks 2h) and shards the rest, 24h + 5as (their Table 2).
  // Generalisation (our derivation, same rule: every tensor a backward kernel reads is stored):
  //   * GQA: K and V are kv = kv_heads x head_dim wide, so the sharded attention part is
  //     Q 2h + K 2kv + V 2kv + output-projection input 2h = 4h + 4kv (8h for MHA).
  //   * MLP: GeLU stores its input and output, 2f + 2f = 4f (16h for f = 4h); SwiGLU
  //     (Shazeer 2020) stores the gate and up outputs (read by the SiLU and product backward)
  //     and their product (the down projection's input): 6f.
  //   * RMSNorm stores its input like LayerNorm. The score tensors hold one softmax per query
  //     head (a heads x s keys per token), which GQA does not change.
  //   * Without dropout (training.dropout false) there are no masks (2h) and, unfused, no
  //     attention-dropout mask and output (3as): the backward reads the softmax output.
  //   * FlashAttention stores no score tensor (no softmax output, mask or dropout output): the
  //     5as term becomes the FP32 softmax statistics, 4 bytes per head (sharded like Q).
  //   * FP8 linear layers (fp8_linears) keep 1-byte inputs: the QKV and first-MLP inputs
  //     (the normalised layer inputs, replicated) and the second-MLP input (the activation
  //     output, f wide) shrink from 2 to 1 byte; the output projection keeps an FP8 copy of its
  //     input next to the 16-bit attention output the attention backward reads (a x head_dim
  //     wide, sharded).
  const double h = m.hidden;
  const double kv = static_cast<double>(m.num_kv_heads) * m.head_dim();
  const double f = m.ffn_hidden;
  const double a = m.num_heads;
  const double s = seq_len;
  const double mlp_tensors = m.ffn == FfnKind::swiglu ? 3.0 : 2.0;
  ActivationCoefficients c;
  c.replicated_per_token = kActivationBytes * 2 * h                 // the two norm inputs
                           + kActivationBytes * 2 * h               // QKV input and first-MLP input
                           + (dropout ? kMaskBytes * 2 * h : 0.0);  // attention and MLP masks
  c.sharded_per_token = kActivationBytes * (2 * h + 2 * kv)  // Q, K, V, output-projection input
                        + kActivationBytes * mlp_tensors * f;
  if (fp8_linears) {
    const double fp8_saving = kActivationBytes - kFp8ActivationBytes;
    c.replicated_per_token -= fp8_saving * 2 * h;                   // QKV and first-MLP inputs
    c.sharded_per_token -= fp8_saving * f;                          // second-MLP input
    c.sharded_per_token += kFp8ActivationBytes * a * m.head_dim();  // output-projection copy
  }
  if (fused(attention)) {
    c.sharded_per_token += kFlashSoftmaxStatsBytes * a;
  } else {
    // Softmax output (2 bytes), dropout mask (1 byte), dropout output (2 bytes) per score.
    c.scores_per_token = (dropout ? 2 * kActivationBytes + kMaskBytes : kActivationBytes) * a * s;
  }
  return c;
}

LayerActivations layer_activation_bytes(const ModelSpec& m, int seq_len, std::int64_t micro_batch,
                                        int tp, bool sp, Recompute recompute,
                                        AttentionKernel attention, bool dropout, bool fp8_linears) {
  const ActivationCoefficients c =
      activation_coefficients(m, seq_len, attention, dropout, fp8_linears);
  const double tokens = static_cast<double>(seq_len) * static_cast<double>(micro_batch);
  const double t = tp;
  // Korthikanti et al. Table 2: TP shards the sharded and score parts; SP also splits the
  // replicated part along the sequence.
  const double replicated = sp ? c.replicated_per_token / t : c.replicated_per_token;
  const double no_recompute =
      tokens * (replicated + c.sharded_per_token / t + c.scores_per_token / t);
  const double scores = tokens * c.scores_per_token / t;
  LayerActivations out;
  switch (recompute) {
    case Recompute::none: out.stored = no_recompute; break;
    case Recompute::selective:
      // Table 2: sbh(10 + 24/t) with TP, sbh 34/t with TP+SP: the score tensors are recomputed.
      out.stored = no_recompute - scores;
      out.transient = scores;  // re-created for one layer during its backward
      break;
    case Recompute::full:
      // Only the layer input (2 s b h bytes) is kept (Korthikanti et al. §4.3, Table 2); with
      // sequence parallelism each tensor-parallel rank keeps its 1/t of the sequence.
      out.stored = tokens * kActivationBytes * m.hidden / (sp ? t : 1.0);
      out.transient = no_recompute;  // the whole layer re-created during its backward
      break;
    case Recompute::selective_op:
      out.stored = op_checkpoint_stored_bytes(m, tokens, tp, sp);
      out.transient = no_recompute;  // the block re-created during its backward
      break;
  }
  return out;
}

namespace {

// What every stage's estimate is built from: bytes per parameter and per-layer activations.
struct MemorySizes {
  double layer_params = 0;  // parameters of one layer on one TP rank
  double weight_bytes = 0;  // per parameter, resident
  double grad_bytes = 0;    // per parameter, accumulated
  double embedding_grad_bytes = 0;
  double head_grad_bytes = 0;
  // The ranks ZeRO shards over: dp x cp, since context-parallel ranks hold the same weights
  // (Megatron-Core's distributed optimizer and NeMo's distributed Adam both take
  // get_data_parallel_group(with_context_parallel=True); NeMo v2.0.0rc0
  // nemo/core/optim/distributed_adam.py).
  double shard_ranks = 1;
  // PyTorch FSDP (fully_shard with a mixed-precision policy) keeps each rank's shard of the
  // parameters in their FP32 dtype, casts a copy to BF16 only when it gathers them, and hands the
  // FP32 shard to the optimizer as its parameters: the shard is the master copy, and Adam adds
  // its two moments only (4 + 4 + 8 = 16 B/param with FP32 gradients, not 2 + 4 + 12 = 18).
  bool master_is_shard = false;
  double adam_bytes = 0;  // per parameter, held by the optimizer
  int seq_per_gpu = 1;
  LayerActivations act;   // a layer under training.recompute
  LayerActivations kept;  // a layer left out of a partial full recomputation
  // Mixture of experts: one MoE layer's parameters on one GPU besides its routed experts (split
  // by tp), its routed experts there (num_experts / ep of them, split by etp), the ranks ZeRO
  // shards the experts over (the expert-data-parallel group, Megatron-Core's
  // expert_data_parallel group: tp x cp x dp / (etp x ep)), and its activations.
  double moe_layer_params = 0;
  double expert_params = 0;
  double expert_shard_ranks = 1;
  LayerActivations moe_act;
  LayerActivations moe_kept;
};

// The layout of one layer's activations on one GPU (models/layer_activations.hpp).
ActivationLayout activation_layout(const Scenario& s) {
  const Parallelism& par = s.parallelism;
  ActivationLayout l;
  l.tp = par.tp;
  l.etp = s.model.moe ? par.expert_tp() : 1;
  l.sequence_parallel = par.sequence_parallel;
  if (s.model.moe) {
    // The busiest GPU's copies: top-k times the routing imbalance, capped by the capacity
    // factor when tokens are dropped (as the step's expert GEMMs, workload/pass_builder.cpp).
    const MoeSpec& e = *s.model.moe;
    const double rho = e.capacity_factor > 0 ? std::min(e.routing_imbalance, e.capacity_factor)
                                             : e.routing_imbalance;
    l.copies_per_token = e.experts_per_token * rho;
  }
  return l;
}

// Layer activations by the term-by-term count (MLA, MoE, recompute modules, FP8 cache): a dense
// layer (`moe` false) or an MoE layer, under `recompute`.
LayerActivations activations_by_terms(const Scenario& s, const MemorySizes& z, bool moe,
                                      Recompute recompute) {
  const double tokens = static_cast<double>(z.seq_per_gpu) * s.training.micro_batch;
  return layer_activations(s.model, z.seq_per_gpu, tokens, moe, activation_layout(s), recompute,
                           activation_options(s.training));
}

void add_moe_sizes(const Scenario& s, MemorySizes& z) {
  const ModelSpec& m = s.model;
  if (!m.moe) return;
  const Parallelism& par = s.parallelism;
  const LayerParameters layer = moe_layer_parameters_on_gpu(m, par);
  z.moe_layer_params = layer.dense;
  z.expert_params = layer.experts;
  z.expert_shard_ranks = par.expert_dp();
  z.moe_act = activations_by_terms(s, z, true, s.training.recompute);
  z.moe_kept = activations_by_terms(s, z, true, Recompute::none);
}

MemorySizes memory_sizes(const Scenario& s) {
  const Parallelism& par = s.parallelism;
  const Training& tr = s.training;
  MemorySizes z;
  z.layer_params = layer_parameters_per_tp_rank(s.model, par.tp);
  const bool fp8 = tr.precision == Dtype::fp8;
  const double fp8_weight_bytes =
      fp8 && tr.fp8_recipe == Fp8Recipe::mxfp8 ? kMxfp8WeightBytes : kFp8WeightCacheBytes;
  z.weight_bytes =
      tr.fp8_param_gather ? fp8_weight_bytes : kWeightBytes + (fp8 ? fp8_weight_bytes : 0.0);
  z.grad_bytes = std::max(kMinGradAccumulationBytes, bytes_per_element(s.comm.grad_dtype));
  z.embedding_grad_bytes = in_fp32_groups(s, "embedding") ? kFp32Bytes : z.grad_bytes;
  z.head_grad_bytes = in_fp32_groups(s, "lm_head") ? kFp32Bytes : z.grad_bytes;
  z.shard_ranks = static_cast<double>(par.dp) * par.cp;
  z.master_is_shard =
      par.zero_stage >= 3 && par.zero3_implementation != Zero3Implementation::deepspeed_2021;
  z.adam_bytes = adam_state_bytes_per_param(tr.optimizer_state_dtype, tr.optimizer_moments_dtype) -
                 (z.master_is_shard ? bytes_per_element(tr.optimizer_state_dtype) : 0.0);
  // Context parallelism splits each sequence over cp ranks: activations per GPU shrink by cp
  // (the loader requires FlashAttention with cp > 1, so no score tensor depends on s).
  z.seq_per_gpu = std::max(1, tr.seq_len / par.cp);
  if (uses_activation_terms(s)) {
    z.act = activations_by_terms(s, z, false, tr.recompute);
    z.kept = activations_by_terms(s, z, false, Recompute::none);
  } else {
    z.act =
        layer_activation_bytes(s.model, z.seq_per_gpu, tr.micro_batch, par.tp,
                               par.sequence_parallel, tr.recompute, tr.attention, tr.dropout, fp8);
    z.kept = layer_activation_bytes(s.model, z.seq_per_gpu, tr.micro_batch, par.tp,
                                    par.sequence_parallel, Recompute::none, tr.attention,
                                    tr.dropout, fp8);
  }
  add_moe_sizes(s, z);
  return z;
}

// MoE layers of pipeline stage `stage`: the layers of its virtual stages (chunk x pp + stage),
// numbered in virtual-stage order, that ModelSpec::is_moe_layer names.
int moe_layers_on_stage(const Scenario& s, int stage) {
  if (!s.model.moe) return 0;
  const std::vector<int> chunks = layers_per_virtual_stage(s);
  const int pp = s.parallelism.pp;
  int first = 0;
  int n = 0;
  for (std::size_t vs = 0; vs < chunks.size(); ++vs) {
    if (static_cast<int>(vs) % pp == stage) {
      for (int i = first; i < first + chunks[vs]; ++i) n += s.model.is_moe_layer(i) ? 1 : 0;
    }
    first += chunks[vs];
  }
  return n;
}

// Parameters on one GPU of a stage: layers split by tp; the vocab-parallel embedding (and
// learned positions, replicated) on the first stage; final norm and the output layer on the
// last. With tied embeddings and pp > 1 Megatron keeps a copy of the word embeddings on the last
// stage and all-reduces their gradients (Shoeybi et al. 2019; megatron/core/models/common/
// language_module.py).
struct StageParameters {
  double embedding = 0;
  double head = 0;
  double other = 0;
  double experts = 0;  // routed experts (MoE layers)
};
// The multi-token prediction modules on the last stage, next to the output head they share
// (DeepSeek-V3 report §3.2.3: the deepest layers and the output head on one pipeline rank,
// shared with the MTP module): each a layer like the model's last, its 2h -> h projection
// split by tp and two norms.
void add_mtp_parameters(const Scenario& s, const MemorySizes& z, StageParameters& sp) {
  const ModelSpec& m = s.model;
  const double own = mtp_module_own_parameters(m, s.parallelism.tp);
  const bool moe_layer = m.is_moe_layer(m.num_layers - 1);
  sp.other += m.mtp_layers * ((moe_layer ? z.moe_layer_params : z.layer_params) + own);
  if (moe_layer) sp.experts += m.mtp_layers * z.expert_params;
}

StageParameters stage_parameters(const Scenario& s, const MemorySizes& z, int stage, int layers) {
  const ParameterCounts params = count_parameters(s.model);
  const int tp = s.parallelism.tp;
  const int pp = s.parallelism.pp;
  StageParameters sp;
  const int moe_layers = moe_layers_on_stage(s, stage);
  sp.other = (layers - moe_layers) * z.layer_params;
  if (moe_layers > 0) {
    sp.other += moe_layers * z.moe_layer_params;
    sp.experts = moe_layers * z.expert_params;
  }
  if (stage == 0) {
    sp.embedding = params.embedding / tp;
    sp.other += params.position_embedding;
  }
  if (stage == pp - 1) {
    sp.other += params.final_norm;
    if (params.lm_head > 0) {
      sp.head = params.lm_head / tp;
    } else if (pp > 1) {
      sp.head = params.embedding / tp;
    }
    if (s.model.mtp_layers > 0) add_mtp_parameters(s, z, sp);
  }
  return sp;
}

// Model states under ZeRO (Rajbhandari et al. 2020 §5): stage 1 shards the optimizer states,
// stage 2 also the gradients, stage 3 also the weights, each over z.shard_ranks.
void add_model_states(StageMemory& st, const Scenario& s, const MemorySizes& z,
                      const StageParameters& sp) {
  const Parallelism& par = s.parallelism;
  // FSDP2 under pipeline parallelism keeps the stage's 16-bit parameters gathered all step,
  // and its gradients unsharded until the last backward: the pipeline stage sets
  // set_requires_gradient_sync(False) for every backward but a step's last
  // (torch/distributed/pipelining/stage.py backward_maybe_with_nosync), and FSDP2 accumulates
  // them in the reduce dtype (FSDPParam.to_accumulated_grad_if_needed), comm.grad_dtype here.
  const bool kept_gathered = par.fsdp2_keeps_gathered();
  const bool unsharded_grads = kept_gathered && s.micro_batches() > 1;
  const double weight_shard = par.zero_stage >= 3 ? z.shard_ranks : 1.0;
  const double grad_shard = par.zero_stage >= 2 && !unsharded_grads ? z.shard_ranks : 1.0;
  const double opt_shard = par.zero_stage >= 1 ? z.shard_ranks : 1.0;
  const double dense = sp.embedding + sp.head + sp.other;  // all but the routed experts
  st.weights_bytes = dense * (z.master_is_shard ? kFp32Bytes : z.weight_bytes) / weight_shard;
  st.gradients_bytes = (sp.embedding * z.embedding_grad_bytes + sp.head * z.head_grad_bytes +
                        sp.other * z.grad_bytes) /
                       grad_shard;
  st.optimizer_bytes = dense * z.adam_bytes / opt_shard;
  if (par.zero_stage < 3) return;
  const bool first = st.stage == 0;
  const bool last = st.stage == par.pp - 1;
  if (par.zero3_implementation == Zero3Implementation::deepspeed_2021) {
    // DeepSpeed 2021 gathers one weight matrix at a time and waits for it (no prefetch in
    // flight; workload/param_gathers.cpp), and each gradient lives until it is copied into the
    // reduction bucket (counted with the DP buckets).
    const std::vector<double> matrices = layer_weight_matrices_per_tp_rank(s.model, par.tp);
    const double unit = std::max({*std::max_element(matrices.begin(), matrices.end()),
                                  first ? sp.embedding : 0.0, last ? sp.head : 0.0});
    st.zero3_gathered_bytes = unit * (z.weight_bytes + z.grad_bytes);
  } else {
    const double unit =
        std::max({z.layer_params, first ? sp.embedding : 0.0, last ? sp.head : 0.0});
    if (kept_gathered) st.weights_bytes += dense * z.weight_bytes;
    st.zero3_gathered_bytes =
        unit * ((kept_gathered ? 0.0 : kZero3GatheredUnits) * z.weight_bytes +
                (unsharded_grads ? 0.0 : kZero3UnshardedGradUnits) * z.grad_bytes);
  }
}

// The routed experts' states, as add_model_states counts the rest, sharded by ZeRO over the
// expert-data-parallel ranks (Megatron-Core's distributed optimizer shards expert parameters
// over that group). UNVERIFIED for ZeRO-3: no gathered expert units are added.
void add_expert_states(StageMemory& st, const Scenario& s, const MemorySizes& z,
                       const StageParameters& sp) {
  if (sp.experts == 0) return;
  const Parallelism& par = s.parallelism;
  const double ranks = z.expert_shard_ranks;
  const double weights = sp.experts * (z.master_is_shard ? kFp32Bytes : z.weight_bytes) /
                         (par.zero_stage >= 3 ? ranks : 1.0);
  const double grads = sp.experts * z.grad_bytes / (par.zero_stage >= 2 ? ranks : 1.0);
  const double optimizer = sp.experts * z.adam_bytes / (par.zero_stage >= 1 ? ranks : 1.0);
  st.weights_bytes += weights;
  st.gradients_bytes += grads;
  st.optimizer_bytes += optimizer;
  st.expert_parameters = sp.experts;
  st.expert_state_bytes = weights + grads + optimizer;
}

void add_activations(StageMemory& st, const Scenario& s, const MemorySizes& z) {
  const ModelSpec& m = s.model;
  const Parallelism& par = s.parallelism;
  const Training& tr = s.training;
  st.micro_batches_in_flight =
      micro_batches_in_flight(st.stage, par.pp, par.vpp, s.micro_batches(), par.schedule);
  const double tokens = static_cast<double>(z.seq_per_gpu) * static_cast<double>(tr.micro_batch);
  const double sp_div = par.sequence_parallel ? par.tp : 1.0;
  // Layers whose activations follow tr.recompute; with partial full recomputation only the
  // recomputed ones, the others keep everything.
  const int act_layers =
      tr.recompute == Recompute::full ? recomputed_layers_on_stage(s, st.stage) : st.layers;
  double per_micro_batch = z.act.stored * act_layers + z.kept.stored * (st.layers - act_layers);
  // MoE layers store their FFN's activations instead of the dense FFN's (taken as recomputed
  // like the stage's other layers).
  if (st.moe_layers > 0) {
    const double moe_extra =
        act_layers > 0 ? z.moe_act.stored - z.act.stored : z.moe_kept.stored - z.kept.stored;
    per_micro_batch += moe_extra * st.moe_layers;
  }
  // Korthikanti et al. §4.3: the embedding dropout mask on the first stage; the final norm's
  // and output layer's inputs (2 bytes each per element) and the FP32 logits (split by the
  // vocab-parallel output layer) on the last.
  if (st.stage == 0 && tr.dropout) per_micro_batch += tokens * kMaskBytes * m.hidden / sp_div;
  if (st.stage == par.pp - 1) {
    const double head =
        tokens * (2 * kActivationBytes * m.hidden / sp_div + kLogitBytes * m.vocab / par.tp);
    per_micro_batch += head;
    if (m.mtp_layers > 0) {
      // Each multi-token prediction module (DeepSeek-V3 §2.2) stores what a layer like the
      // model's last does, the inputs of its two RMSNorms and of its 2h -> h projection (the
      // concatenated normalised vectors; FP8 under FP8), and its own pass through the shared
      // head (final norm and head inputs, FP32 logits).
      const bool moe_layer = m.is_moe_layer(m.num_layers - 1);
      const double layer = act_layers > 0 ? (moe_layer ? z.moe_act : z.act).stored
                                          : (moe_layer ? z.moe_kept : z.kept).stored;
      const double projection_input =
          2 * m.hidden * (tr.precision == Dtype::fp8 ? kFp8ActivationBytes : kActivationBytes);
      const double own =
          tokens * (2 * kActivationBytes * m.hidden + projection_input) / sp_div + head;
      per_micro_batch += m.mtp_layers * (layer + own);
    }
  }
  st.activation_per_micro_batch_bytes = per_micro_batch;
  st.activation_transient_bytes =
      act_layers > 0
          ? (st.moe_layers > 0 ? std::max(z.act.transient, z.moe_act.transient) : z.act.transient)
          : 0.0;
  st.activations_bytes =
      per_micro_batch * st.micro_batches_in_flight + st.activation_transient_bytes;
}

// Communication buffers: NCCL's, ZeRO-2/3's reduction buckets, 1-bit Adam's error feedback.
void add_buffers(StageMemory& st, const Scenario& s, const MemorySizes& z, double nccl_bytes) {
  st.nccl_buffers_bytes = nccl_bytes;
  if (z.shard_ranks > 1 && s.parallelism.zero_stage >= 2)
    st.dp_bucket_bytes = kZeroReduceBuckets * s.training.grad_bucket_bytes;
  if (s.comm.compression.kind == Compression::onebit_adam && z.shard_ranks > 1) {
    st.onebit_adam_bytes = st.parameters * kOnebitErrorBytes                    // worker error
                           + st.parameters * kOnebitErrorBytes / z.shard_ranks  // server error
                           + st.parameters * kOnebitSignBytes * kOnebitSignBuffers;
  }
}

// DualPipe (DeepSeek-V3 technical report §3.2.1, table 2): pipeline rank s keeps a copy of
// stages s and p - 1 - s, so twice the parameters with their gradients and optimizer states.
// Activations: micro-batches enter at rank 0 (forward direction) and at rank p - 1 (reverse
// direction), half of them each, and a stage at position q of its direction holds up to p - q
// of them at the peak, as 1F1B does (deepseek-ai/DualPipe dualpipe.py, steps 1-4: rank s runs
// 2 (p/2 - h - 1) + h + 1 forward chunks of its first phase and h + 1 of its second before its
// first backward, h = min(s, p - 1 - s), and one more of the first in the main step). Rank s is
// at position s of the forward direction with stage s and at position p - 1 - s of the reverse
// one with stage p - 1 - s: p - s micro-batches of stage s and s + 1 of stage p - 1 - s, p + 1
// in all (table 2), each at most the m / 2 micro-batches of its direction.
std::vector<StageMemory> dualpipe_ranks(const std::vector<StageMemory>& stages,
                                        std::int64_t micro_batches) {
  std::vector<StageMemory> out = stages;
  const std::size_t p = stages.size();
  const double half = std::max(1.0, static_cast<double>(micro_batches) / 2);
  for (std::size_t s = 0; s < p; ++s) {
    const StageMemory& a = stages[s];
    const StageMemory& b = stages[p - 1 - s];
    StageMemory& r = out[s];
    r.layers = a.layers + b.layers;
    r.parameters = a.parameters + b.parameters;
    r.weights_bytes = a.weights_bytes + b.weights_bytes;
    r.gradients_bytes = a.gradients_bytes + b.gradients_bytes;
    r.optimizer_bytes = a.optimizer_bytes + b.optimizer_bytes;
    r.moe_layers = a.moe_layers + b.moe_layers;
    r.expert_parameters = a.expert_parameters + b.expert_parameters;
    r.expert_state_bytes = a.expert_state_bytes + b.expert_state_bytes;
    const double forward = std::min(static_cast<double>(p - s), half);
    const double reverse = std::min(static_cast<double>(s + 1), half);
    const double stored =
        forward * a.activation_per_micro_batch_bytes + reverse * b.activation_per_micro_batch_bytes;
    r.micro_batches_in_flight = forward + reverse;
    r.activation_per_micro_batch_bytes = stored / r.micro_batches_in_flight;
    r.activation_transient_bytes =
        std::max(a.activation_transient_bytes, b.activation_transient_bytes);
    r.activations_bytes = stored + r.activation_transient_bytes;
    if (a.onebit_adam_bytes > 0) r.onebit_adam_bytes = a.onebit_adam_bytes + b.onebit_adam_bytes;
  }
  return out;
}

int worst_stage(const std::vector<StageMemory>& stages) {
  int worst = 0;
  for (std::size_t i = 1; i < stages.size(); ++i) {
    if (stages[i].total_bytes() > stages[static_cast<std::size_t>(worst)].total_bytes()) {
      worst = static_cast<int>(i);
    }
  }
  return worst;
}

std::vector<std::string> memory_assumptions(const Scenario& s, const MemoryEstimate& est,
                                            const MemorySizes& z, const NcclBufferEstimate& nccl) {
  const Training& tr = s.training;
  const HbmReserve& reserve = est.reserve;
  std::vector<std::string> out;
  const GpuSpec& gpu = s.cluster.gpu;
  const std::string capacity =
      gpu.reported_memory_bytes > 0
          ? " GiB (as CUDA reports it)"
          : " GiB (the datasheet's " + fmt(gpu.hbm_bytes / 1e9, 0) + " GB; no figure CUDA reports)";
  out.push_back("usable HBM = " + fmt(gib(est.hbm_bytes), 1) + capacity + " - CUDA context " +
                fmt(gib(reserve.cuda_context_bytes), 2) + " GiB - " +
                fmt(100 * reserve.allocator_fragmentation_fraction, 0) +
                "% allocator fragmentation reserve (UNVERIFIED) = " +
                fmt(gib(est.usable_bytes()), 1) + " GiB");
  out.push_back(
      "weights " + fmt(z.weight_bytes, 0) + " B/param, gradients " + fmt(z.grad_bytes, 0) +
      " B/param (comm.grad_dtype " + to_string(s.comm.grad_dtype) + ")" +
      (s.comm.fp32_layer_groups.empty() ? std::string()
                                        : ", FP32 (4 B) for the FP32 layer groups") +
      ", Adam states " +
      fmt(adam_state_bytes_per_param(tr.optimizer_state_dtype, tr.optimizer_moments_dtype), 0) +
      " B/param (master copy in " + to_string(tr.optimizer_state_dtype) +
      ", momentum and variance in " + to_string(tr.optimizer_moments_dtype) +
      "; ZeRO paper K = 12 for FP32)" +
      (z.master_is_shard ? "; FSDP: the FP32 parameter shard (4 B/param) is the master copy, Adam "
                           "adds its two moments only"
                         : ""));
  out.push_back(
      std::string("activations per Korthikanti et al. 2022 (") +
      (tr.dropout ? "with dropout masks" : "no dropout: no masks") +
      (fused(tr.attention) ? ", FlashAttention: no score tensors, FP32 softmax statistics), "
                           : ", unfused attention: score tensors stored), ") +
      std::string(to_string(tr.recompute)) + " recomputation" +
      (tr.recompute == Recompute::full && tr.recompute_layers > 0
           ? " of the first " + std::to_string(tr.recompute_layers) + " layer(s) of each chunk"
           : std::string()) +
      ", " + fmt(est.stages.front().micro_batches_in_flight, 2) +
      " micro-batch(es) in flight on stage 0");
  if (uses_activation_terms(s)) {
    out.push_back(
        "MLA / MoE layer activations term by term (models/layer_activations.hpp): latents, "
        "per-head Q K V, router scores, each routed copy x top-k x routing imbalance" +
        std::string(activation_options(tr).any_module() ? "; recompute modules' outputs not stored"
                                                        : "") +
        (tr.fp8_activation_cache ? "; FP8 activation cache (DeepSeek-V3 §3.3.3)" : ""));
  }
  out.push_back(nccl.summary());
  return out;
}

}  // namespace

MemoryEstimate estimate_memory(const Scenario& s, const HbmReserve& reserve) {
  const MemorySizes z = memory_sizes(s);
  const NcclBufferEstimate nccl = estimate_nccl_buffers(s);
  const std::vector<int> layers = layers_per_stage(s);

  MemoryEstimate est;
  est.reserve = reserve;
  est.hbm_bytes = s.cluster.gpu.memory_capacity_bytes();
  est.reserved_bytes =
      reserve.cuda_context_bytes + reserve.allocator_fragmentation_fraction * est.hbm_bytes;
  for (int stage = 0; stage < s.parallelism.pp; ++stage) {
    StageMemory st;
    st.stage = stage;
    st.layers = layers[static_cast<std::size_t>(stage)];
    const StageParameters sp = stage_parameters(s, z, stage, st.layers);
    st.moe_layers = moe_layers_on_stage(s, stage);
    st.parameters = sp.embedding + sp.head + sp.other + sp.experts;
    add_model_states(st, s, z, sp);
    add_expert_states(st, s, z, sp);
    add_activations(st, s, z);
    add_buffers(st, s, z, nccl.bytes());
    est.stages.push_back(st);
  }
  if (s.parallelism.schedule == PipelineSchedule::dualpipe) {
    est.stages = dualpipe_ranks(est.stages, s.micro_batches());
  }
  est.worst_stage = worst_stage(est.stages);
  est.assumptions = memory_assumptions(s, est, z, nccl);
  return est;
}

}  // namespace clustersim::models
