// The campaign with step times from the step simulator (campaign/simulated_step.hpp). Each
// simulation runs in a child process.
#include <catch2/catch.hpp>

#include "campaign/monte_carlo.hpp"
#include "campaign/simulated_step.hpp"
#include "input/input_loader.hpp"
#include "models/transformer.hpp"
#include "tests/workload/fixtures.hpp"
#include "tools/step_inputs.hpp"
#include "topologies/cluster_graph.hpp"

using namespace clustersim;
using namespace clustersim::campaign;

namespace {

// The scenario's campaign model with simulated steps, its fault links checked against the
// cluster graph.
CampaignModel simulated_model(const nlohmann::json& j) {
  LoadOptions options;
  options.link_names = [](const ClusterSpec& cluster, int gpus) {
    const auto graph = topologies::ClusterGraph::build(cluster, gpus);
    std::vector<std::string> names;
    for (const auto& l : graph.links()) names.push_back(l.name);
    return names;
  };
  const InputBundle b = load_input(JsonDocument::parse(j.dump(), "test.json"), options);
  const Scenario& s = b.scenario;
  const StepModel step = simulated_step_model(s, cli::load_step_calibrations(s));
  const StepEstimate baseline = step(StepFaults{});
  check_fault_times(b.faults, fault_free_duration_s(s, baseline.step_time_s));
  const double parameters = models::count_parameters(s.model).total();
  return build_campaign_model(s, b.campaign, b.faults, b.checkpointing.resolved_for(parameters),
                              b.cost, step, baseline, parameters, "node0/nic0-leaf");
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
  const CampaignModel m = simulated_model(j);
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
  const CampaignModel m = simulated_model(j);
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
