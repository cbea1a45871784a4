// What context parallelism moves and adds to a layer, by implementation: the all-gather model
// and PyTorch's context_parallel (training.repeat_kv, parallelism.cp_implementation).
// Expected values are hand calculations from the tensors' shapes.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small model (h = 1024, 8 heads of d = 128) with 2 K/V heads, cp = 2 over 8 GPUs, one
// sequence of S = 1024 tokens per micro-batch: T = 512 local tokens.
nlohmann::json gqa_cp2() {
  nlohmann::json j = small_scenario(8, 4, 1, 1);
  j["model"]["num_kv_heads"] = 2;
  j["parallelism"]["cp"] = 2;
  j["training"]["micro_batch"] = 1;
  j["training"]["global_batch"] = 4;
  return j;
}

// The CP collectives of a layer's forward and backward pass, in order.
std::vector<Collective> cp_collectives(const Scenario& s) {
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  std::vector<Collective> out;
  for (const Segments& pass : {b.layer_forward(), b.layer_backward()}) {
    for (const Segment& seg : pass) {
      if (seg.is_collective && b.collectives().at(seg.collective).group == Group::cp)
        out.push_back(b.collectives().at(seg.collective));
    }
  }
  return out;
}

models::OpCost pass_kernels(const Scenario& s, bool forward) {
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  return total(forward ? b.layer_forward() : b.layer_backward());
}

constexpr double S = 1024, T = 512, d = 128, heads = 8, kv_heads = 2;

}  // namespace

TEST_CASE("The all-gather model gathers grouped K/V once and reduce-scatters dK/dV in BF16") {
  const std::vector<Collective> c = cp_collectives(load(gqa_cp2()));
  REQUIRE(c.size() == 2);
  // K and V of the whole sequence: 2 x S x 2 heads x 128 x 2 B = 1 MiB.
  CHECK(c[0].kind == CollKind::all_gather);
  CHECK(c[0].bytes == 2 * S * kv_heads * d * 2);
  CHECK(c[1].kind == CollKind::reduce_scatter);
  CHECK(c[1].bytes == 2 * S * kv_heads * d * 2);
  CHECK(c[1].dtype == Dtype::bf16);
}

TEST_CASE("repeat_kv makes context parallelism move query-head-wide K/V and adds its copy") {
  nlohmann::json j = gqa_cp2();
  const Scenario grouped = load(j);
  j["training"]["repeat_kv"] = true;
  const Scenario repeated = load(j);
  const std::vector<Collective> c = cp_collectives(repeated);
  REQUIRE(c.size() == 2);
  CHECK(c[0].bytes == 2 * S * heads * d * 2);  // 4x the grouped heads' bytes
  CHECK(c[1].bytes == 2 * S * heads * d * 2);
  // The forward adds the repeat copy (read 2 grouped, write 8 repeated head-rows of K and V,
  // 2 B each) and the attention kernel's read of repeated K/V (2 x S x (8 - 2) x 128 x 2 B).
  const double copy = 2 * T * (kv_heads + heads) * d * 2;
  const double kernel = 2 * S * (heads - kv_heads) * d * 2;
  CHECK(pass_kernels(repeated, true).bytes - pass_kernels(grouped, true).bytes ==
        Approx(copy + kernel));
  SECTION("with as many K/V heads as query heads it changes nothing") {
    j["model"]["num_kv_heads"] = 8;
    const Scenario mha = load(j);
    j["training"]["repeat_kv"] = false;
    CHECK(pass_kernels(mha, true).bytes == Approx(pass_kernels(load(j), true).bytes));
  }
}

TEST_CASE("PyTorch's context parallelism gathers K/V again and rings FP32 dK/dV") {
  nlohmann::json j = gqa_cp2();
  const Scenario gather = load(j);
  const int cp = GENERATE(2, 4);
  j["parallelism"]["cp"] = cp;
  j["parallelism"]["dp"] = 8 / cp;
  j["parallelism"]["cp_implementation"] = "torch";
  const Scenario torch = load(j);
  const std::vector<Collective> c = cp_collectives(torch);
  REQUIRE(c.size() == 3);
  const double kv = 2 * S * kv_heads * d * 2;  // the whole sequence's K and V in BF16
  CHECK((c[0].kind == CollKind::all_gather && c[0].bytes == kv));
  CHECK((c[1].kind == CollKind::all_gather && c[1].bytes == kv));  // again, for the backward
  // cp ring steps each pass one rank's chunk (1/cp of K and V) in FP32: the whole K/V at 4 B
  // per element leaves every rank, which a ring reduce-scatter of cp / (cp - 1) times it sends.
  CHECK(c[2].kind == CollKind::reduce_scatter);
  CHECK(c[2].dtype == Dtype::fp32);
  CHECK(c[2].bytes * (cp - 1) / cp == Approx(kv * 2));
  // Forward: the FP32 merge of cp - 1 steps (38 B per output element each) and the casts to
  // and from FP32 (12 B) over the local output, T x 8 heads x 128; T = S / cp.
  const double out = S / cp * heads * d;
  const Scenario torch_all_gather = [&] {
    j["parallelism"]["cp_implementation"] = "all_gather";
    return load(j);
  }();
  CHECK(pass_kernels(torch, true).bytes - pass_kernels(torch_all_gather, true).bytes ==
        Approx(out * (38 * (cp - 1) + 12)));
  // Backward: every one of the cp steps adds dQ (the local queries) and dK/dV (one chunk,
  // 2 x S / cp x 2 heads x 128) into FP32 (10 B per element).
  const double accumulated = (out + 2 * S / cp * kv_heads * d) * 10 * cp;
  CHECK(pass_kernels(torch, false).bytes - pass_kernels(torch_all_gather, false).bytes ==
        Approx(accumulated));
  CHECK(gather.parallelism.cp_implementation == CpImplementation::all_gather);
}

TEST_CASE("A context-parallel implementation the loader does not know is refused at its path") {
  nlohmann::json j = gqa_cp2();
  j["parallelism"]["cp_implementation"] = "ring";
  CHECK_THROWS_WITH(load(j),
                    Catch::Contains("/parallelism/cp_implementation") && Catch::Contains("torch"));
}
