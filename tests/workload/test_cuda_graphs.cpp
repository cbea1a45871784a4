// A step replayed from a CUDA graph (training.cuda_graphs "full_iteration"): every kernel costs
// the graph's launch, kCudaGraphKernelS = 0.834 us (an H200's replay of tiny kernels), instead of
// the per-kernel gap of kernels issued one by one. Expected values are that difference times the
// kernels counted, by hand where the kernel is one.
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small model on 8 GPUs of data parallelism; 8 micro-batches of one sequence per rank.
nlohmann::json graph_scenario(bool graphs) {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["training"]["micro_batch"] = 1;
  if (graphs) j["training"]["cuda_graphs"] = "full_iteration";
  return j;
}

// Sum of the compute ops' durations of pipeline stage 0, seconds.
double stage_compute_s(const Workload& w) {
  double total = 0;
  for (const Op& op : w.stages.at(0).ops.to_vector()) {
    if (op.kind == OpKind::compute) total += op.time_s;
  }
  return total;
}

}  // namespace

TEST_CASE("a kernel replayed from a CUDA graph pays the graph's launch instead of the gap") {
  const Scenario s = load(graph_scenario(false));
  const models::ComputeCostModel eager = test::compute_model(s);
  const models::ComputeCostModel graph = eager.replayed_from_cuda_graph();
  REQUIRE(eager.kernel_gap_s() > 1e-6);  // the shipped H100 fit's gap, well above the graph's
  CHECK(graph.kernel_gap_s() == Approx(0.834e-6));
  // A 1 GB element-wise kernel: the same bytes at the same rate, one launch of 0.834 us.
  const models::OpCost a = eager.memory_op(1e9);
  const models::OpCost b = graph.memory_op(1e9);
  CHECK(b.memory_s == Approx(a.memory_s));
  CHECK(b.launch_s == Approx(0.834e-6));
  CHECK(a.time_s - b.time_s == Approx(eager.kernel_gap_s() - 0.834e-6));
}

TEST_CASE("training.cuda_graphs full_iteration takes the gap out of every kernel of a layer") {
  const Scenario plain = load(graph_scenario(false));
  const Scenario graphs = load(graph_scenario(true));
  const models::ComputeCostModel compute = test::compute_model(plain);
  const LayerCosts a = layer_costs(plain, compute);
  const LayerCosts b = layer_costs(graphs, compute);
  const double saved = compute.kernel_gap_s() - 0.834e-6;
  REQUIRE(a.forward.kernels > 0);
  CHECK(b.forward.kernels == a.forward.kernels);
  CHECK(b.forward.flops == Approx(a.forward.flops));
  CHECK(b.forward.launch_s == Approx(a.forward.kernels * 0.834e-6));
  CHECK(a.forward.time_s - b.forward.time_s == Approx(a.forward.kernels * saved));
  CHECK(a.backward.time_s - b.backward.time_s == Approx(a.backward.kernels * saved));

  SECTION("the step program gains at least that on every layer of every micro-batch") {
    const Workload wa = build_workload(plain, compute);
    const Workload wb = build_workload(graphs, compute);
    const double layers = 8, micro_batches = 8;
    const double per_layer = (a.forward.kernels + a.backward.kernels) * saved;
    // The embedding, the loss and the optimizer launch kernels too, so the step gains more.
    CHECK(stage_compute_s(wa) - stage_compute_s(wb) >= layers * micro_batches * per_layer * 0.999);
  }
}

TEST_CASE("training.cuda_graphs takes none or full_iteration") {
  nlohmann::json j = graph_scenario(false);
  j["training"]["cuda_graphs"] = "per_layer";
  try {
    load(j);
    FAIL("expected a ConfigError");
  } catch (const ConfigError& e) {
    CHECK(e.pointer() == "/training/cuda_graphs");
  }
}
