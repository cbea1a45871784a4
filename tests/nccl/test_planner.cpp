// The planner's caches: a group is looked up by its exact member list (checked once, when first
// seen), every request is still validated, and decompositions are shared only between requests
// that agree on the group and every planned field. No SimGrid engine needed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <stdexcept>
#include <vector>

#include "nccl/planner.hpp"
#include "nccl/transport.hpp"
#include "tests/nccl/collective_requests.hpp"
#include "tests/test_clusters.hpp"
#include "topologies/cluster_graph.hpp"

using namespace clustersim;
using namespace clustersim::nccl;
using clustersim::test::allreduce;

namespace {

// 4 nodes x 8 GPUs, a NIC per GPU, rail-optimized, one leaf.
topologies::ClusterGraph four_nodes() {
  return topologies::ClusterGraph::build(test::test_cluster({.nodes = 4,
                                                             .gpus_per_node = 8,
                                                             .nics_per_node = 8,
                                                             .rail_optimized = true,
                                                             .gpudirect_rdma = true}),
                                         32);
}

}  // namespace

TEST_CASE("Decompositions are shared only by requests with the same members and fields",
          "[nccl][planner]") {
  const auto graph = four_nodes();
  const Planner planner(graph, NcclSettings{}, GpuArch::hopper, CpuVendor::intel,
                        choose_transport(graph.spec(), NcclSettings{}));
  const auto a = planner.decompose(allreduce(test::gpu_range(0, 8), 1 << 20), Granularity::bulk);
  // The same members in a vector of its own: the cached decomposition.
  CHECK(planner.decompose(allreduce(test::gpu_range(0, 8), 1 << 20), Granularity::bulk) == a);
  CHECK(a->plan.n_nodes == 1);
  // One member moved to the next node: another group, a two-node plan.
  std::vector<int> moved = test::gpu_range(0, 8);
  moved.back() = 8;
  const auto b = planner.decompose(allreduce(moved, 1 << 20), Granularity::bulk);
  CHECK(b != a);
  CHECK(b->plan.n_nodes == 2);
  // Same group, another size or granularity: planned again.
  CHECK(planner.decompose(allreduce(test::gpu_range(0, 8), 2 << 20), Granularity::bulk) != a);
  CHECK(planner.decompose(allreduce(test::gpu_range(0, 8), 1 << 20), Granularity::step) != a);
  // The same members in another rank order are another communicator.
  std::vector<int> reversed = test::gpu_range(0, 8);
  std::reverse(reversed.begin(), reversed.end());
  CHECK(planner.decompose(allreduce(reversed, 1 << 20), Granularity::bulk) != a);
}

TEST_CASE("Every request is validated, whether or not its group was seen before",
          "[nccl][planner]") {
  const auto graph = four_nodes();
  const Planner planner(graph, NcclSettings{}, GpuArch::hopper, CpuVendor::intel,
                        choose_transport(graph.spec(), NcclSettings{}));
  const std::vector<int> twice = {0, 1, 1};
  for (int call = 0; call < 2; ++call) {
    CHECK_THROWS_AS(planner.decompose(allreduce(twice, 1024), Granularity::bulk),
                    std::invalid_argument);
    CHECK_THROWS_AS(planner.decompose(allreduce({0, 32}, 1024), Granularity::bulk),
                    std::invalid_argument);
  }
  CHECK_NOTHROW(planner.decompose(allreduce(test::gpu_range(0, 4), 1024), Granularity::bulk));
  CollectiveRequest bad_root = allreduce(test::gpu_range(0, 4), 1024);
  bad_root.root = 4;
  CHECK_THROWS_AS(planner.decompose(bad_root, Granularity::bulk), std::invalid_argument);
  CHECK_THROWS_AS(planner.decompose(allreduce(test::gpu_range(0, 4), -1), Granularity::bulk),
                  std::invalid_argument);
}

TEST_CASE("Groups placed alike on their nodes share a shape key", "[nccl][planner]") {
  const auto graph = four_nodes();
  const Planner planner(graph, NcclSettings{}, GpuArch::hopper, CpuVendor::intel,
                        choose_transport(graph.spec(), NcclSettings{}));
  // GPU 3 of every node (a rail) and GPU 5 of every node: different local indices.
  const auto rail3 = allreduce(test::gpu_range(3, 4, 8), 1 << 20);
  const auto rail5 = allreduce(test::gpu_range(5, 4, 8), 1 << 20);
  const auto node0 = allreduce(test::gpu_range(0, 8), 1 << 20);
  const auto node2 = allreduce(test::gpu_range(16, 8), 1 << 20);
  CHECK(planner.shape_key(node0) == planner.shape_key(node2));
  CHECK(planner.shape_key(rail3) != planner.shape_key(rail5));
  CHECK(planner.shape_key(node0) != planner.shape_key(rail3));
  CHECK(planner.shape_key(node0) != planner.shape_key(allreduce(test::gpu_range(0, 8), 2 << 20)));
}
