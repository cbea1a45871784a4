// The execution sections of a scenario ("parallelism", "training", "comm"): phase one only,
// types, ranges and enum names; the rules that tie them to the model and the cluster are in
// input/scenario_rules.hpp.
#pragma once

#include "core/json_reader.hpp"
#include "core/scenario.hpp"

namespace clustersim::input {

Parallelism parse_parallelism(const JsonNode& node);
Training parse_training(const JsonNode& node);
CommSpec parse_comm(const JsonNode& node);

// Megatron-Core's default gradient bucket when "grad_bucket_MiB" is not given: max(40M,
// 1M x dp x cp) parameters (DistributedDataParallelConfig.bucket_size: "larger DP sizes need
// larger buckets to ensure collectives do not become latency-bound"), in bytes of the reduced
// gradient dtype. That rule is Megatron-Core's DDP and distributed optimizer's (ZeRO 0-2); with
// ZeRO-3 the bucket stays at the 40M floor, as it was before the rule.
inline constexpr double kMegatronBucketMinParams = 40e6;
inline constexpr double kMegatronBucketParamsPerDpRank = 1e6;
double default_grad_bucket_bytes(const Scenario& s);

}  // namespace clustersim::input
