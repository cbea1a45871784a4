#include "models/memory.hpp"

#include <algorithm>
#include <cmath>

#include "core/units.hpp"
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
// UNVERIFIED: one extra byte per parameter, no transposed copy counted.
constexpr double kFp8WeightCacheBytes = 1.0;
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
// NCCL per-connection buffers (NVIDIA/nccl src/init.cc, v2.18+): Simple NCCL_BUFFSIZE (4 MiB
// default), LL128 = 120 elems x 640 threads x 8 steps x 8 B = 4,915,200 B,
// LL = 8 lines x 512 threads x 8 steps x 16 B = 524,288 B.
constexpr double kNcclLl128BufferBytes = 120.0 * 640 * 8 * 8;
constexpr double kNcclLlBufferBytes = 8.0 * 512 * 8 * 16;
// Receive-buffer sets per channel: a ring receives from one peer; a tree channel from up to
// three (parent and two children of NCCL's double binary tree).
constexpr double kRingPeersPerChannel = 1.0;
constexpr double kTreePeersPerChannel = 3.0;
// Channels when NCCL_MIN/MAX_NCHANNELS are unset. UNVERIFIED: NCCL chooses per topology; we take
// its maximum (MAXCHANNELS, core/nccl_settings.hpp), an upper bound for the fit verdict.
constexpr int kNcclChannelsAssumed = kNcclMaxChannels;
// Point-to-point (pipeline) connections: channels per peer, Simple protocol only.
// UNVERIFIED: NCCL_NCHANNELS_PER_NET_PEER default 2 assumed for every peer.
constexpr double kNcclP2pChannelsPerPeer = 2.0;
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

// NCCL buffers of one collective communicator (ring, and tree unless NCCL_ALGO excludes it).
double collective_buffers(const NcclSettings& nccl, int channels) {
  const bool any_proto = nccl.protos.empty();
  auto has_proto = [&](NcclProto p) {
    return any_proto || std::find(nccl.protos.begin(), nccl.protos.end(), p) != nccl.protos.end();
  };
  double per_connection = 0;
  if (has_proto(NcclProto::simple)) per_connection += nccl.buffsize_bytes;
  if (has_proto(NcclProto::ll128)) per_connection += kNcclLl128BufferBytes;
  if (has_proto(NcclProto::ll)) per_connection += kNcclLlBufferBytes;
  const bool tree = nccl.algos.empty() || std::find(nccl.algos.begin(), nccl.algos.end(),
                                                    NcclAlgo::tree) != nccl.algos.end();
  const double peers = kRingPeersPerChannel + (tree ? kTreePeersPerChannel : 0.0);
  return channels * peers * per_connection;
}

}  // namespace

double adam_state_bytes_per_param(Dtype state_dtype) {
  return kAdamStateTensors * bytes_per_element(state_dtype);
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
  if (attention == AttentionKernel::flash) {
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
  }
  return out;
}

MemoryEstimate estimate_memory(const Scenario& s, const HbmReserve& reserve) {
  const ModelSpec& m = s.model;
  const Parallelism& par = s.parallelism;
  const Training& tr = s.training;
  const ParameterCounts params = count_parameters(m);
  const int tp = par.tp;
  const int pp = par.pp;
  const int dp = par.dp;
  const int cp = par.cp;
  const std::vector<int> layers = layers_per_stage(s);
  const std::int64_t micro_batches = s.micro_batches();
  const double layer_params = layer_parameters_per_tp_rank(m, tp);

  MemoryEstimate est;
  est.reserve = reserve;
  est.hbm_bytes = s.cluster.gpu.hbm_bytes;
  est.reserved_bytes =
      reserve.cuda_context_bytes + reserve.allocator_fragmentation_fraction * est.hbm_bytes;

  const double weight_bytes =
      kWeightBytes + (tr.precision == Dtype::fp8 ? kFp8WeightCacheBytes : 0.0);
  const double grad_bytes =
      std::max(kMinGradAccumulationBytes, bytes_per_element(s.comm.grad_dtype));
  const double embedding_grad_bytes = in_fp32_groups(s, "embedding") ? kFp32Bytes : grad_bytes;
  const double head_grad_bytes = in_fp32_groups(s, "lm_head") ? kFp32Bytes : grad_bytes;
  // Context parallelism splits each sequence over cp ranks: activations per GPU shrink by cp
  // (the loader requires FlashAttention with cp > 1, so no score tensor depends on s).
  const int seq_per_gpu = std::max(1, tr.seq_len / cp);

  const bool fp8_linears = tr.precision == Dtype::fp8;
  const LayerActivations act =
      layer_activation_bytes(m, seq_per_gpu, tr.micro_batch, tp, par.sequence_parallel,
                             tr.recompute, tr.attention, tr.dropout, fp8_linears);
  // Layers left out of a partial full recomputation (training.recompute_layers) keep theirs.
  const LayerActivations kept =
      layer_activation_bytes(m, seq_per_gpu, tr.micro_batch, tp, par.sequence_parallel,
                             Recompute::none, tr.attention, tr.dropout, fp8_linears);

  // NCCL channels for collectives.
  const NcclSettings& nccl = s.comm.nccl;
  int channels = kNcclChannelsAssumed;
  if (nccl.min_channels > 0) channels = nccl.min_channels;
  if (nccl.max_channels > 0) channels = std::min(std::max(channels, 1), nccl.max_channels);
  channels = std::min(channels, kNcclMaxChannels);
  double nccl_bytes = 0;
  int collective_comms = 0;
  for (int size : {dp, tp, cp}) {
    if (size > 1) {
      nccl_bytes += collective_buffers(nccl, channels);
      ++collective_comms;
    }
  }
  if (pp > 1) nccl_bytes += 2 * kNcclP2pChannelsPerPeer * nccl.buffsize_bytes;

  for (int stage = 0; stage < pp; ++stage) {
    StageMemory st;
    st.stage = stage;
    st.layers = layers[static_cast<std::size_t>(stage)];
    const bool first = stage == 0;
    const bool last = stage == pp - 1;

    // Parameters on this GPU: layers split by tp; the vocab-parallel embedding (and learned
    // positions, replicated) on the first stage; final norm and the output layer on the last.
    // With tied embeddings and pp > 1 Megatron keeps a copy of the word embeddings on the last
    // stage and all-reduces their gradients (Shoeybi et al. 2019; megatron/core/models/common/
    // language_module.py).
    double embedding_params = 0;
    double head_params = 0;
    double other_params = st.layers * layer_params;
    if (first) {
      embedding_params = params.embedding / tp;
      other_params += params.position_embedding;
    }
    if (last) {
      other_params += params.final_norm;
      if (params.lm_head > 0) {
        head_params = params.lm_head / tp;
      } else if (pp > 1) {
        head_params = params.embedding / tp;
      }
    }
    st.parameters = embedding_params + head_params + other_params;

    // Model states under ZeRO (Rajbhandari et al. 2020 §5): stage 1 shards the optimizer
    // states, stage 2 also the gradients, stage 3 also the weights, each over the ranks that
    // reduce the gradients: dp x cp, since context-parallel ranks hold the same weights
    // (Megatron-Core's distributed optimizer and NeMo's distributed Adam both take
    // get_data_parallel_group(with_context_parallel=True); NeMo v2.0.0rc0
    // nemo/core/optim/distributed_adam.py).
    const double shard_ranks = static_cast<double>(dp) * cp;
    const double weight_shard = par.zero_stage >= 3 ? shard_ranks : 1.0;
    const double grad_shard = par.zero_stage >= 2 ? shard_ranks : 1.0;
    const double opt_shard = par.zero_stage >= 1 ? shard_ranks : 1.0;
    st.weights_bytes = st.parameters * weight_bytes / weight_shard;
    st.gradients_bytes = (embedding_params * embedding_grad_bytes + head_params * head_grad_bytes +
                          other_params * grad_bytes) /
                         grad_shard;
    st.optimizer_bytes =
        st.parameters * adam_state_bytes_per_param(tr.optimizer_state_dtype) / opt_shard;
    if (par.zero_stage >= 3 && par.zero3_implementation == Zero3Implementation::deepspeed_2021) {
      // DeepSpeed 2021 gathers one weight matrix at a time and waits for it (no prefetch in
      // flight; workload/workload.cpp), and each gradient lives until it is copied into the
      // reduction bucket (counted with the DP buckets).
      const std::vector<double> matrices = layer_weight_matrices_per_tp_rank(m, tp);
      const double unit = std::max({*std::max_element(matrices.begin(), matrices.end()),
                                    first ? embedding_params : 0.0, last ? head_params : 0.0});
      st.zero3_gathered_bytes = unit * (weight_bytes + grad_bytes);
    } else if (par.zero_stage >= 3) {
      const double unit =
          std::max({layer_params, first ? embedding_params : 0.0, last ? head_params : 0.0});
      st.zero3_gathered_bytes =
          unit * (kZero3GatheredUnits * weight_bytes + kZero3UnshardedGradUnits * grad_bytes);
    }

    // Activations.
    st.micro_batches_in_flight =
        micro_batches_in_flight(stage, pp, par.vpp, micro_batches, par.schedule);
    const double tokens = static_cast<double>(seq_per_gpu) * static_cast<double>(tr.micro_batch);
    const double sp_div = par.sequence_parallel ? tp : 1.0;
    // Layers whose activations follow tr.recompute; with partial full recomputation only the
    // recomputed ones, the others keep everything.
    const int act_layers =
        tr.recompute == Recompute::full ? recomputed_layers_on_stage(s, stage) : st.layers;
    double per_micro_batch = act.stored * act_layers + kept.stored * (st.layers - act_layers);
    // Korthikanti et al. §4.3: the embedding dropout mask on the first stage; the final norm's
    // and output layer's inputs (2 bytes each per element) and the FP32 logits (split by the
    // vocab-parallel output layer) on the last.
    if (first && tr.dropout) per_micro_batch += tokens * kMaskBytes * m.hidden / sp_div;
    if (last) {
      per_micro_batch += tokens * 2 * kActivationBytes * m.hidden / sp_div;
      per_micro_batch += tokens * kLogitBytes * m.vocab / tp;
    }
    st.activation_per_micro_batch_bytes = per_micro_batch;
    st.activation_transient_bytes = act_layers > 0 ? act.transient : 0.0;
    st.activations_bytes =
        per_micro_batch * st.micro_batches_in_flight + st.activation_transient_bytes;

    st.nccl_buffers_bytes = nccl_bytes;
    if (shard_ranks > 1 && par.zero_stage >= 2)
      st.dp_bucket_bytes = kZeroReduceBuckets * tr.grad_bucket_bytes;

    if (s.comm.compression.kind == Compression::onebit_adam && shard_ranks > 1) {
      st.onebit_adam_bytes = st.parameters * kOnebitErrorBytes                  // worker error
                             + st.parameters * kOnebitErrorBytes / shard_ranks  // server error
                             + st.parameters * kOnebitSignBytes * kOnebitSignBuffers;
    }
    est.stages.push_back(st);
  }
  for (std::size_t i = 1; i < est.stages.size(); ++i) {
    if (est.stages[i].total_bytes() >
        est.stages[static_cast<std::size_t>(est.worst_stage)].total_bytes()) {
      est.worst_stage = static_cast<int>(i);
    }
  }

  est.assumptions.push_back("usable HBM = " + fmt(gib(est.hbm_bytes), 1) + " GiB - CUDA context " +
                            fmt(gib(reserve.cuda_context_bytes), 2) + " GiB - " +
                            fmt(100 * reserve.allocator_fragmentation_fraction, 0) +
                            "% allocator fragmentation reserve (UNVERIFIED) = " +
                            fmt(gib(est.usable_bytes()), 1) + " GiB");
  est.assumptions.push_back(
      "weights " + fmt(weight_bytes, 0) + " B/param, gradients " + fmt(grad_bytes, 0) +
      " B/param (comm.grad_dtype " + to_string(s.comm.grad_dtype) + ")" +
      (s.comm.fp32_layer_groups.empty() ? std::string()
                                        : ", FP32 (4 B) for the FP32 layer groups") +
      ", Adam states " + fmt(adam_state_bytes_per_param(tr.optimizer_state_dtype), 0) +
      " B/param (master copy, momentum, variance in " + to_string(tr.optimizer_state_dtype) +
      "; ZeRO paper K = 12 for FP32)");
  est.assumptions.push_back(
      std::string("activations per Korthikanti et al. 2022 (") +
      (tr.dropout ? "with dropout masks" : "no dropout: no masks") +
      (tr.attention == AttentionKernel::flash
           ? ", FlashAttention: no score tensors, FP32 softmax statistics), "
           : ", unfused attention: score tensors stored), ") +
      std::string(to_string(tr.recompute)) + " recomputation" +
      (tr.recompute == Recompute::full && tr.recompute_layers > 0
           ? " of the first " + std::to_string(tr.recompute_layers) + " layer(s) of each chunk"
           : std::string()) +
      ", " + fmt(est.stages.front().micro_batches_in_flight, 2) +
      " micro-batch(es) in flight on stage 0");
  est.assumptions.push_back("NCCL buffers: " + std::to_string(collective_comms) +
                            " collective communicator(s) x " + std::to_string(channels) +
                            " channels" + (pp > 1 ? " + pipeline p2p" : ""));
  return est;
}

}  // namespace clustersim::models
