// Rank placement in Megatron order (tp fastest, then cp, dp, pp).
#include <algorithm>
#include <catch2/catch.hpp>

#include "input/scenario_loader.hpp"
#include "topologies/cluster_graph.hpp"
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

TEST_CASE("Expert groups follow Megatron-Core's tp-ep-dp-pp order", "[topologies][moe]") {
  // DeepSeek-V3's layout (technical report §3.3.1): 2048 GPUs, pp 16, ep 64, tp 1 -> dp 128 per
  // stage, edp = 128 / 64 = 2. EP group 0 of stage 0 = ranks 0..63 (8 nodes of 8 GPUs).
  Parallelism par;
  par.dp = 128;
  par.pp = 16;
  const Placement p = place_ranks(par, 2048);
  const ExpertGroups g = place_experts(p, 64, 1);
  CHECK(g.edp == 2);
  REQUIRE(g.ep_groups.size() == 16 * 2);
  REQUIRE(g.edp_groups.size() == 16 * 64);
  CHECK(g.ep_groups[0].front() == 0);
  CHECK(g.ep_groups[0].back() == 63);
  CHECK(g.ep_groups[1].front() == 64);
  CHECK(g.ep_groups[2].front() == 128);  // stage 1 starts at rank 128
  // Expert-data-parallel pairs: rank k and k + 64 hold the same experts.
  CHECK(g.edp_groups[5] == std::vector<int>{5, 69});

  // etp = tp = 2, ep 4 on 16 ranks: EP groups at stride 2, EDP groups at stride 8.
  Parallelism small;
  small.tp = 2;
  small.dp = 8;
  const Placement q = place_ranks(small, 16);
  const ExpertGroups h = place_experts(q, 4, 2);
  CHECK(h.edp == 2);
  CHECK(h.ep_groups[0] == std::vector<int>{0, 2, 4, 6});
  CHECK(h.ep_groups[1] == std::vector<int>{1, 3, 5, 7});
  CHECK(h.ep_groups[2] == std::vector<int>{8, 10, 12, 14});
  CHECK(h.edp_groups[0] == std::vector<int>{0, 8});
  CHECK_THROWS_AS(place_experts(q, 3, 2), std::invalid_argument);
}

TEST_CASE("On an NVL72 rack TP=72 and EP=72 groups stay on NVLink", "[topologies][moe]") {
  // gb200-nvl72-128x72-rail: a node is the rack's 72-GPU NVLink domain. Two layouts on 8 racks
  // (576 GPUs): tp 72 x dp 8, and tp 1 x dp 576 with ep 72 (expert tp 1). Every pair of ranks
  // of a TP or EP group must route over NVLink links only.
  const ClusterSpec spec = load_cluster_preset("gb200-nvl72-128x72-rail");
  REQUIRE(spec.gpus_per_node == 72);
  const ClusterGraph graph = ClusterGraph::build(spec, 576);
  const auto on_nvlink = [&](const Placement& p, const std::vector<int>& group) {
    for (int a : group) {
      for (int b : group) {
        for (const Hop& h : graph.route(p.gpu_of_rank[a], p.gpu_of_rank[b])) {
          if (graph.link(h.link).cls != LinkClass::nvlink) return false;
        }
      }
    }
    return true;
  };
  Parallelism tp72;
  tp72.tp = 72;
  tp72.dp = 8;
  const Placement p = place_ranks(tp72, 576);
  REQUIRE(p.tp_groups.size() == 8);
  for (const auto& group : p.tp_groups) CHECK(on_nvlink(p, group));

  Parallelism ep72;
  ep72.dp = 576;
  const Placement q = place_ranks(ep72, 576);
  const ExpertGroups g = place_experts(q, 72, 1);
  REQUIRE(g.ep_groups.size() == 8);
  for (const auto& group : g.ep_groups) CHECK(on_nvlink(q, group));
  // The expert-data-parallel groups cross racks: rank k of every rack.
  CHECK(g.edp_groups[3].front() == 3);
  CHECK(g.edp_groups[3][1] == 75);
  CHECK_FALSE(on_nvlink(q, g.edp_groups[3]));
}
