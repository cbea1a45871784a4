// Shared helpers for the campaign tests: a 1024-GPU scenario built in code, sections given as
// JSON text, and the campaign model resolved with a given step time.
#pragma once

#include <string>

#include "campaign/campaign_config.hpp"
#include "campaign/monte_carlo.hpp"
#include "campaign/step_model.hpp"
#include "core/scenario.hpp"

namespace clustersim::campaign::testing {

constexpr double kTokensTotal = 3.5e12;           // the seed's 3.5T tokens
constexpr double kTokensPerStep = 1024.0 * 4096;  // global batch 1024 x 4096 tokens
constexpr double kParameters = 70e9;

// 128 nodes x 8 GPUs, 8 NICs of 400 Gb/s per node (the seed's cluster as NVIDIA builds it).
inline Scenario toy_scenario() {
  Scenario s;
  s.file = "scenarios/toy.json";
  s.name = "toy";
  s.gpus = 1024;
  s.cluster.nodes = 128;
  s.cluster.gpus_per_node = 8;
  s.cluster.nics_per_node = 8;
  s.cluster.nic_Bps = 50e9;
  s.cluster.nvlink_Bps = 200e9;
  s.training.global_batch = 1024;
  s.training.seq_len = 4096;
  s.training.tokens_total = kTokensTotal;
  return s;
}

inline RawSection section(const std::string& key, const std::string& json) {
  return RawSection{"scenarios/toy.json", "/" + key, json};
}

inline CampaignModel make_model(const Scenario& s, double step_time_s, double mfu = 0.4,
                                double exposed_comm_share = 0) {
  const CampaignSettings settings = parse_campaign_settings(s);
  const StepModel step = fixed_step_model(s, step_time_s, mfu, exposed_comm_share);
  const StepEstimate baseline = step(StepFaults{});
  FaultContext context;
  context.link_names = {"node0/nic0-leaf", "node0/nic1-leaf", "node3/nic5-leaf", "leaf0-spine0"};
  context.run_end_s = fault_free_duration_s(s, baseline.step_time_s);
  const FaultsConfig faults = parse_faults(s, context);
  const CheckpointConfig checkpoint = parse_checkpointing(s, kParameters);
  const CostConfig cost = parse_cost(s);
  return build_campaign_model(s, settings, faults, checkpoint, cost, step, baseline, kParameters,
                              "node0/nic0-leaf");
}

}  // namespace clustersim::campaign::testing
