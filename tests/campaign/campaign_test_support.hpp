// Shared helpers for the campaign tests: a 1024-GPU scenario built in code, sections given as
// JSON text, and the campaign model resolved with a given step time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "campaign/monte_carlo.hpp"
#include "campaign/step_model.hpp"
#include "core/input_bundle.hpp"
#include "core/json_reader.hpp"
#include "core/scenario.hpp"
#include "input/faults_section.hpp"
#include "input/run_sections.hpp"

namespace clustersim::campaign::testing {

constexpr double kTokensTotal = 3.5e12;           // the seed's 3.5T tokens
constexpr double kTokensPerStep = 1024.0 * 4096;  // global batch 1024 x 4096 tokens
constexpr double kParameters = 70e9;

// A section's JSON text, as the scenario file would hold it under its key.
struct SectionText {
  std::string json;
};

inline SectionText section(const std::string& /*key*/, const std::string& json) {
  return {json};
}

// The toy scenario with the run sections a test gives, loaded by the input/ parsers as if they
// came from scenarios/toy.json.
struct ToyRun : Scenario {
  SectionText faults, checkpointing, cost, campaign;
};

// 128 nodes x 8 GPUs, 8 NICs of 400 Gb/s per node (the seed's cluster as NVIDIA builds it).
inline ToyRun toy_scenario() {
  ToyRun s;
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

// The sections of `s` parsed, checkpoint resolved for kParameters.
inline InputBundle sections_of(const ToyRun& s) {
  nlohmann::json doc = nlohmann::json::object();
  const std::pair<const char*, const SectionText*> sections[] = {
      {"faults", &s.faults},
      {"checkpointing", &s.checkpointing},
      {"cost", &s.cost},
      {"campaign", &s.campaign}};
  for (const auto& [key, text] : sections) {
    if (!text->json.empty()) doc[key] = nlohmann::json::parse(text->json);
  }
  const JsonDocument parsed = JsonDocument::parse(doc.dump(), s.file);
  const JsonNode root = parsed.root();
  InputBundle b;
  b.scenario = s;
  if (const auto n = root.find("campaign")) b.campaign = input::parse_campaign_settings(*n);
  if (const auto n = root.find("faults")) b.faults = input::parse_faults(*n, s);
  if (const auto n = root.find("checkpointing")) b.checkpointing = input::parse_checkpointing(*n);
  if (const auto n = root.find("cost")) b.cost = input::parse_cost(*n);
  input::check_fault_links(
      b.faults, {"node0/nic0-leaf", "node0/nic1-leaf", "node3/nic5-leaf", "leaf0-spine0"});
  b.checkpointing = b.checkpointing.resolved_for(kParameters);
  return b;
}

inline CampaignModel make_model(const ToyRun& s, double step_time_s, double mfu = 0.4,
                                double exposed_comm_share = 0) {
  const InputBundle b = sections_of(s);
  const StepModel step = fixed_step_model(s, step_time_s, mfu, exposed_comm_share);
  const StepEstimate baseline = step(StepFaults{});
  check_fault_times(b.faults, fault_free_duration_s(s, baseline.step_time_s));
  return build_campaign_model(s, b.campaign, b.faults, b.checkpointing, b.cost, step, baseline,
                              kParameters, "node0/nic0-leaf");
}

}  // namespace clustersim::campaign::testing
