// The prepare stage of a step, called directly: no engine, no child process, no file read
// beyond the scenario. Expected values follow from the scenario's layout.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "step/prepare.hpp"
#include "tests/step/fixtures.hpp"

using namespace clustersim;
using clustersim::test::load;
using clustersim::test::small_scenario;

TEST_CASE("prepare_step builds the graph, the placement and one program per stage",
          "[step][prepare]") {
  // 16 GPUs on nodes of 8: DP 2 x TP 4 x PP 2.
  const Scenario s = load(small_scenario(16, 2, 4, 2));
  const step::PreparedStep p = step::prepare_step(s, test::step_calibrations(), {}, false);
  CHECK(p.scenario == &s);
  CHECK(p.graph.num_gpus() == 16);
  CHECK(p.placement.num_ranks() == 16);
  CHECK(p.workload.pp == 2);
  CHECK(p.workload.tp == 4);
  CHECK(p.workload.dp == 2);
  CHECK(p.workload.stages.size() == 2);
  CHECK(p.network.empty());  // no network calibration given: NCCL's cost model alone
  // A step's tokens: global batch (DP x 8 sequences) x 1024 tokens, in both conventions.
  CHECK(p.flops_megatron.tokens == 2 * 8 * 1024);
  CHECK(p.flops_palm.tokens == 2 * 8 * 1024);
}

TEST_CASE("prepare_step rejects faults the cluster cannot have, at their JSON path",
          "[step][prepare]") {
  const Scenario s = load(small_scenario(8, 1, 8, 1));
  StepFaults faults;
  LinkFault f;
  f.link = "node0/nic0-leef";
  faults.links.push_back(f);
  try {
    step::prepare_step(s, test::step_calibrations(), faults, false);
    FAIL("no exception");
  } catch (const ConfigError& e) {
    CHECK(e.pointer() == "/faults/links/0/link");
    CHECK_THAT(e.message(), Catch::Contains("node0/nic0-leef"));
  }
  StepFaults slow;
  slow.slow_gpus.push_back({8, 0.5});  // ranks are 0..7
  CHECK_THROWS_AS(step::prepare_step(s, test::step_calibrations(), slow, false), ConfigError);
}
