#include <catch2/catch.hpp>

#include "input/scenario_loader.hpp"

using namespace clustersim;

TEST_CASE("the default scenario loads with the seed's optimized layout") {
  const Scenario s =
      load_scenario(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed-optimized-1024.json");
  CHECK(s.gpus == 1024);
  CHECK(s.parallelism.dp == 64);
  CHECK(s.parallelism.tp == 8);
  CHECK(s.parallelism.pp == 2);
  CHECK(s.model.num_layers == 80);
  CHECK(s.cluster.total_gpus() == 1024);
}
