// Rank placement in Megatron order (tp fastest, then cp, dp, pp).
#include <algorithm>
#include <catch2/catch.hpp>

#include "topologies/placement.hpp"

using namespace clustersim;
using namespace clustersim::topologies;

TEST_CASE("The seed's optimized layout keeps TP groups inside nodes", "[topologies]") {
  Parallelism par;
  par.dp = 64;
  par.tp = 8;
  par.pp = 2;
  const Placement p = place_ranks(par, 1024);
  REQUIRE(p.num_ranks() == 1024);
  CHECK(p.tp_groups.size() == 128);
  CHECK(p.dp_groups.size() == 16);
  CHECK(p.pp_groups.size() == 512);
  CHECK(p.cp_groups.size() == 1024);

  // TP group k = ranks 8k..8k+7 = the GPUs of node k.
  CHECK(p.tp_groups[5] == std::vector<int>{40, 41, 42, 43, 44, 45, 46, 47});
  for (const auto& g : p.tp_groups) {
    for (int r : g)
      CHECK(p.gpu_of_rank[static_cast<std::size_t>(r)] / 8 ==
            p.gpu_of_rank[static_cast<std::size_t>(g.front())] / 8);
  }
  // DP group of tp rank 3, stage 0: 3, 11, 19, ... (stride 8), 64 members.
  const auto& dp3 = p.dp_groups[3];
  REQUIRE(dp3.size() == 64);
  CHECK(dp3[0] == 3);
  CHECK(dp3[1] == 11);
  CHECK(dp3[63] == 3 + 8 * 63);
  // Stage 1 starts at rank 512: PP pairs (r, r + 512).
  CHECK(p.pp_groups[0] == std::vector<int>{0, 512});
  CHECK(p.pp_groups[511] == std::vector<int>{511, 1023});

  const RankCoords c = p.coords(8 * 10 + 3 + 512);
  CHECK(c.tp == 3);
  CHECK(c.dp == 10);
  CHECK(c.pp == 1);
  CHECK(c.cp == 0);
  CHECK(p.rank_of(c) == 8 * 10 + 3 + 512);
  CHECK(p.tp_group_of(8 * 10 + 3 + 512) == 74);  // dp 10 + 64 * pp 1
  CHECK(p.dp_group_of(3) == 3);
  CHECK(p.pp_group_of(515) == 3);
}

TEST_CASE("Context parallel ranks sit between TP and DP", "[topologies]") {
  Parallelism par;
  par.tp = 2;
  par.cp = 2;
  par.dp = 2;
  par.pp = 2;
  const Placement p = place_ranks(par, 16);
  // rank = tp + 2 * (cp + 2 * (dp + 2 * pp))
  CHECK(p.cp_groups[0] == std::vector<int>{0, 2});
  CHECK(p.dp_groups[0] == std::vector<int>{0, 4});
  CHECK(p.pp_groups[0] == std::vector<int>{0, 8});
  CHECK(p.tp_groups[3] == std::vector<int>{6, 7});
  for (int r = 0; r < 16; ++r) {
    const auto& tg = p.tp_groups[static_cast<std::size_t>(p.tp_group_of(r))];
    CHECK(std::find(tg.begin(), tg.end(), r) != tg.end());
    const auto& cg = p.cp_groups[static_cast<std::size_t>(p.cp_group_of(r))];
    CHECK(std::find(cg.begin(), cg.end(), r) != cg.end());
    const auto& dg = p.dp_groups[static_cast<std::size_t>(p.dp_group_of(r))];
    CHECK(std::find(dg.begin(), dg.end(), r) != dg.end());
    const auto& pg = p.pp_groups[static_cast<std::size_t>(p.pp_group_of(r))];
    CHECK(std::find(pg.begin(), pg.end(), r) != pg.end());
  }
}

TEST_CASE("A layout that does not multiply to the GPU count is rejected", "[topologies]") {
  Parallelism par;
  par.dp = 3;
  par.tp = 8;
  CHECK_THROWS_WITH(place_ranks(par, 32), Catch::Contains("dp*tp*cp*pp = 24"));
  par.dp = 0;
  CHECK_THROWS_WITH(place_ranks(par, 0), Catch::Contains("parallelism.dp"));
}
