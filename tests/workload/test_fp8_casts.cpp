// FP8 casts by GPU and layout: where the GEMMs need a transposed copy (Hopper) and where they do
// not (Blackwell), and an operand that sequence parallelism all-gathers in FP8, quantized on its
// shard (Transformer Engine's _all_gather_fp8). Expected bytes by hand from the shapes.
#include <catch2/catch.hpp>

#include "tests/workload/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using test::load;

TEST_CASE("An FP8 output gradient gathered by sequence parallelism is cast on its shard") {
  // tp = 2 with sequence parallelism: T = 1024 tokens, h = 1024; the output gradients of the
  // output projection and the second FFN GEMM are T x h each once gathered. Gathered in BF16
  // (fp8_gradient_gather off) each is cast whole after the gather: cast-transpose, 4 B per
  // element on Hopper. Gathered in FP8, Transformer Engine casts this rank's half row-wise
  // (3 B per element of T h / 2) and transposes the gathered one (2 B per element of T h), a
  // kernel more. On Blackwell no transpose is written at all: 3 B per element cast, whole or
  // on the shard.
  const double T = 1024, h = 1024;
  nlohmann::json j = test::small_scenario(8, 4, 2, 1);
  j["training"]["precision"] = "fp8";
  const auto backward = [](const nlohmann::json& k) {
    const Scenario s = load(k);
    return layer_costs(s, test::compute_model(s)).backward;
  };
  j["training"]["fp8_gradient_gather"] = false;
  const models::OpCost bf16_gather = backward(j);
  j["training"]["fp8_gradient_gather"] = true;
  const models::OpCost fp8_gather = backward(j);
  CHECK(fp8_gather.bytes - bf16_gather.bytes == Approx(2 * ((3.0 / 2 + 2) - 4) * T * h));
  CHECK(fp8_gather.kernels - bf16_gather.kernels == 2);
  j["cluster"] = "hgx-b200-2048x8-rail";
  const models::OpCost blackwell_fp8 = backward(j);
  j["training"]["fp8_gradient_gather"] = false;
  const models::OpCost blackwell_bf16 = backward(j);
  CHECK(blackwell_fp8.bytes - blackwell_bf16.bytes == Approx(2 * (3.0 / 2 - 3) * T * h));
  CHECK(blackwell_fp8.kernels == blackwell_bf16.kernels);
}
