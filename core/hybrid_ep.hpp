// HybridEP (NVIDIA's expert-parallel communication library, the hybrid-ep branch of
// deepseek-ai/DeepEP; Megatron-Core's flex dispatcher with --moe-flex-dispatcher-backend
// hybridep): its dispatch and combine inside one NVLink domain, timed at the algorithm
// bandwidth NVIDIA measured for it (docs/moe.md#hybridep).
#pragma once

#include <optional>

#include "core/scenario.hpp"

namespace clustersim {

// Megatron-Core's --moe-hybridep-num-sms default (transformer_config.py moe_hybridep_num_sms,
// Megatron-LM effebd81): the SMs of each dispatch and combine kernel when the scenario gives
// none (training.moe_comm_sms).
constexpr int kHybridEpDefaultSms = 16;

// Bytes per second one GPU receives in a dispatch and sends in a combine: HybridEP's "algorithm
// bandwidth", the BF16 rows of the tokens a rank receives (each token once per receiving rank)
// over the kernel's time (DeepEP hybrid-ep tests/test_hybrid_ep.py: dispatched_hidden.numel()
// x 2 / t).
struct HybridEpRate {
  double dispatch_Bps = 0;
  double combine_Bps = 0;
  // The measurement was made on another NVLink bandwidth of the same architecture and is
  // scaled by the ratio of the two (UNVERIFIED).
  bool scaled = false;
};

// The rate on `gpu` with `sms` SMs per kernel: NVIDIA's measurement for the GPU's architecture
// (Hopper: DGX H100; Blackwell: GB200 NVL36), linear between its measured SM counts,
// proportional to the SMs below the smallest, the largest's above it, times the GPU's NVLink
// bandwidth over the measured platform's. None for an architecture without a measurement.
std::optional<HybridEpRate> hybrid_ep_rate(const GpuSpec& gpu, int sms);

// Expected number of GPUs of an EP group of `ep` GPUs that one token reaches: its k experts
// drawn without replacement from the `reachable` GPUs' experts (`local` per GPU; uniform
// routing, as forced load balancing and the measurement's random routing both are).
// DeepSeek-V3's group-limited routing narrows `reachable` to the GPUs of groups_per_token of
// the expert groups.
double ranks_per_token(double reachable, double local, double k);

}  // namespace clustersim
