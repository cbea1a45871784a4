// The execution sections of a scenario ("parallelism", "training", "comm"): phase one only,
// types, ranges and enum names; the rules that tie them to the model and the cluster are in
// input/scenario_rules.hpp.
#pragma once

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::input {

Parallelism parse_parallelism(const JsonNode& node);
// `model_dropout`: the model preset's "dropout", the default of "training.dropout".
Training parse_training(const JsonNode& node, bool model_dropout);
// The reduced gradients' dtype when "comm.grad_dtype" is not given: FP16 for FP16 training and
// FP32 otherwise. Megatron-LM keeps and reduces the main gradients in FP32 with --bf16
// (accumulate_allreduce_grads_in_fp32, unless --grad-reduce-in-bf16) and in FP16 with --fp16;
// NeMo 2 and Megatron-Core's DistributedDataParallelConfig reduce in FP32 (grad_reduce_in_fp32)
// for BF16 and FP8 training (README.md, "Input files": the defaults table).
Dtype default_grad_dtype(Dtype precision);
CommSpec parse_comm(const JsonNode& node, Dtype precision);

// Megatron-Core's default gradient bucket when "grad_bucket_MiB" is not given: max(40M,
// 1M x dp x cp) parameters (DistributedDataParallelConfig.bucket_size: "larger DP sizes need
// larger buckets to ensure collectives do not become latency-bound"), in bytes of the reduced
// gradient dtype. That rule is Megatron-Core's DDP and distributed optimizer's (ZeRO 0-2); with
// ZeRO-3 the bucket stays at the 40M floor, as it was before the rule.
inline constexpr double kMegatronBucketMinParams = 40e6;
inline constexpr double kMegatronBucketParamsPerDpRank = 1e6;
double default_grad_bucket_bytes(const Scenario& s);

}  // namespace clustersim::input
