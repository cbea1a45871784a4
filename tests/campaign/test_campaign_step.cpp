// The campaign with step times from the step simulator (campaign/simulated_step.hpp). Each
// simulation runs in a child process.
#include <catch2/catch.hpp>

#include "campaign/campaign_config.hpp"
#include "campaign/monte_carlo.hpp"
#include "campaign/simulated_step.hpp"
#include "models/transformer.hpp"
#include "tests/workload/fixtures.hpp"
#include "tools/step_inputs.hpp"
#include "topologies/cluster_graph.hpp"

using namespace clustersim;
using namespace clustersim::campaign;

namespace {

// The scenario's campaign model with simulated steps.
CampaignModel simulated_model(const Scenario& s) {
  const StepModel step = simulated_step_model(s, cli::load_step_calibrations(s));
  const StepEstimate baseline = step(StepFaults{});
  FaultContext context;
  const auto graph = topologies::ClusterGraph::build(s.cluster, s.gpus);
  for (const auto& l : graph.links()) {
    context.link_names.push_back(l.name);
  }
  context.run_end_s = fault_free_duration_s(s, baseline.step_time_s);
  const double parameters = models::count_parameters(s.model).total();
  return build_campaign_model(s, parse_campaign_settings(s), parse_faults(s, context),
                              parse_checkpointing(s, parameters), parse_cost(s), step, baseline,
                              parameters, "node0/nic0-leaf");
}

}  // namespace

TEST_CASE(
    "one GPU at half speed makes a synchronous data-parallel step about 2x slower and "
    "is named") {
  // Pure data parallelism over two nodes; a model whose kernels dominate the step.
  nlohmann::json j = test::small_scenario(16, 16, 1, 1);
  j["model"]["hidden_size"] = 4096;
  j["model"]["num_attention_heads"] = 32;
  j["model"]["num_kv_heads"] = 32;
  j["model"]["ffn_hidden_size"] = 16384;
  j["training"]["global_batch"] = 16 * 32;  // 32 micro-batches per rank, one reduction
  j["faults"] = nlohmann::json::parse(R"({"events": [{"kind": "gpu_slowdown", "rank": 5,
      "speed_factor": 0.5, "from_s": 0, "cause": "ECC down-clocking"}]})");
  const Scenario s = test::load(j);
  const CampaignModel m = simulated_model(s);
  REQUIRE(m.scripted.size() == 1);
  const auto& f = m.scripted[0];
  CHECK(f.step.model == "step simulator");
  // Every rank waits for the slow one at the gradient reduction: the step takes up to twice
  // as long, the overlapped communication making it a little less.
  CHECK(f.slowdown > 1.9);
  CHECK(f.slowdown <= 2.0 * (1 + 1e-9));
  CHECK_THAT(f.step.slowest, Catch::Contains("rank 5"));
  CHECK(f.step.mfu == Approx(m.baseline.mfu / f.slowdown).epsilon(1e-6));
}

TEST_CASE("a down link in the simulated step crashes the campaign's job after NCCL's timeout") {
  nlohmann::json j = test::small_scenario(32, 4, 8, 1);
  j["faults"] = nlohmann::json::parse(R"({"events": [{"kind": "link_down",
      "link": "node1/nic0-leaf", "from_h": 1}]})");
  const Scenario s = test::load(j);
  const CampaignModel m = simulated_model(s);
  REQUIRE(m.scripted.size() == 1);
  const auto& f = m.scripted[0];
  CHECK(f.step.hang);
  CHECK_THAT(f.step.hang_on, Catch::Contains("node1/nic0-leaf"));
  CHECK(f.crashes);
  // NCCL_IB_TIMEOUT=22 and NCCL_IB_RETRY_CNT=12 (capped at 7) in the seed's settings.
  CHECK(f.detection_s == Approx(4.096e-6 * 4194304.0 * 8));
  TrialTrace trace;
  const TrialResult r = run_trial(m, 1, &trace);
  CHECK(r.interruptions == 1);
  double hung = 0;
  for (const auto& seg : trace.segments) {
    if (seg.phase == Phase::hung) hung += seg.t1 - seg.t0;
  }
  CHECK(hung == Approx(4.096e-6 * 4194304.0 * 8));
}
