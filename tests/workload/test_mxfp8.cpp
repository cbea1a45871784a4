// MXFP8 (training.fp8_recipe "mxfp8"): each GEMM operand quantized both ways with a scale byte per
// 32 elements, each GEMM's operand scales swizzled first, MXFP8 parameters gathered in BF16 and
// quantized after, two scaled copies of every resident weight, and Blackwell only. Expected
// values by hand from the small model's shapes and the byte counts of the formats.
#include <catch2/catch.hpp>
#include <vector>

#include "models/memory.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using test::load;

namespace {

// The small model on 8 B200s of data parallelism, FP8 linears under `recipe`.
nlohmann::json b200_fp8(const char* recipe) {
  nlohmann::json j = test::small_scenario(8, 8, 1, 1);
  j["cluster"] = "hgx-b200-2048x8-rail";
  j["training"]["precision"] = "fp8";
  j["training"]["fp8_recipe"] = recipe;
  return j;
}

nlohmann::json with_fp8_params(nlohmann::json j, int zero_stage) {
  j["parallelism"]["zero_stage"] = zero_stage;
  j["training"]["fp8_param_gather"] = true;
  return j;
}

models::OpCost pass_kernels(const nlohmann::json& j, bool forward) {
  const Scenario s = load(j);
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  return total(forward ? b.layer_forward() : b.layer_backward());
}

// The small model (fixtures.hpp): hidden 1024, GELU FFN of 4096, MHA; seq_len 1024.
constexpr double h = 1024, f = 4096;

}  // namespace

TEST_CASE("MXFP8 casts each operand once both ways and swizzles every GEMM's scales") {
  const nlohmann::json mx = b200_fp8("mxfp8");
  const double tokens = load(mx).training.micro_batch * 1024.0;
  const models::OpCost delayed = pass_kernels(b200_fp8("delayed"), true);
  const models::OpCost mxfp8 = pass_kernels(mx, true);
  // The forward's four GEMMs (QKV, output projection, FFN in and out), [m x k] x [k x n]:
  // inputs T x h, T x h, T x h, T x f; weights h x 3h, h x h, h x f, f x h.
  const double inputs = tokens * (3 * h + f);
  const double weights = h * 3 * h + h * h + h * f + f * h;
  // On Blackwell delayed scaling's cast writes the row-wise FP8 copy only (2 + 1 B per element:
  // the GEMMs take any layout); the MXFP8 cast writes both copies with a scale byte per 32
  // elements each: 1 + 1/16 B more. Each GEMM swizzles its two operands' scales (read and write
  // 1/32 B per element), two kernels.
  CHECK(mxfp8.bytes - delayed.bytes == Approx(inputs * (1 + 1.0 / 16) + (inputs + weights) / 16));
  CHECK(mxfp8.kernels - delayed.kernels == Approx(4 * 2));
  // The backward's eight GEMMs (input and weight gradients of the four) swizzle two operands each.
  CHECK(pass_kernels(mx, false).kernels - pass_kernels(b200_fp8("delayed"), false).kernels ==
        Approx(8 * 2));
  // Current scaling's amax pass (2 B per element) over the inputs that do not come from a
  // Transformer Engine norm (the output projection's, T x h, and the FFN's second, T x f) is
  // gone, and with it the scale kernels of every cast.
  const models::OpCost current = pass_kernels(b200_fp8("current"), true);
  CHECK(current.bytes - mxfp8.bytes ==
        Approx(2 * tokens * (h + f) - inputs * (1 + 1.0 / 16) - (inputs + weights) / 16));
}

TEST_CASE("MXFP8 GEMMs take the block-scaled kernels' measured time over per-tensor FP8's") {
  const nlohmann::json mx = b200_fp8("mxfp8");
  const Scenario s = load(mx);
  const double tokens = s.training.micro_batch * 1024.0;
  const auto compute = test::compute_model(s);
  // The forward's four GEMMs, {m, n, k}: QKV, output projection, FFN in and out.
  double fp8_gemm_s = 0;
  for (const models::GemmShape& g :
       {models::GemmShape{tokens, 3 * h, h}, {tokens, h, h}, {tokens, f, h}, {tokens, h, f}}) {
    fp8_gemm_s += compute.gemm(g, Dtype::fp8).compute_s;
  }
  // Transformer Engine's GEMM profiling guide, pre-quantized, B300: 7.161 ms per layer with
  // MXFP8 against 6.812 ms with per-tensor FP8.
  const double stretch = 7.161 / 6.812 - 1;
  const models::OpCost delayed = pass_kernels(b200_fp8("delayed"), true);
  CHECK(pass_kernels(mx, true).compute_s - delayed.compute_s ==
        Approx(stretch * fp8_gemm_s).epsilon(1e-9));
}

TEST_CASE("MXFP8 parameters are gathered in BF16, then quantized into both scaled copies") {
  const Scenario s = load(with_fp8_params(b200_fp8("mxfp8"), 1));
  const Workload w = build_workload(s, test::compute_model(s));
  const auto& stage = w.stages.at(0);
  REQUIRE_FALSE(stage.gathers.empty());
  for (const ParamGather& g : stage.gathers) {
    CHECK(g.call.dtype == Dtype::bf16);
    CHECK(g.call.bytes == Approx(2 * g.params));
  }
  // After each bucket's gather, one quantization kernel reading 2 B and writing 2 x (1 + 1/32) B
  // per parameter of the bucket.
  const auto compute = test::compute_model(s);
  int quantizations = 0;
  const std::vector<Op> ops = stage.ops.to_vector();
  for (std::size_t i = 1; i < ops.size(); ++i) {
    if (ops[i].kind != OpKind::compute || ops[i].compute != ComputeKind::gather_copy) continue;
    REQUIRE(ops[i - 1].kind == OpKind::gather_wait);
    const double params = stage.gathers.at(static_cast<std::size_t>(ops[i - 1].index)).params;
    CHECK(ops[i].time_s == Approx(compute.memory_op((2 + 2 * (1 + 1.0 / 32)) * params).time_s));
    ++quantizations;
  }
  CHECK(quantizations == static_cast<int>(stage.gathers.size()));
  // Per-tensor FP8 parameters are gathered in FP8 and need no quantization after.
  const Scenario cs = load(with_fp8_params(b200_fp8("current"), 1));
  const Workload wc = build_workload(cs, test::compute_model(cs));
  for (const ParamGather& g : wc.stages.at(0).gathers) CHECK(g.call.dtype == Dtype::fp8);
  for (const Op& op : wc.stages.at(0).ops.to_vector()) {
    CHECK_FALSE((op.kind == OpKind::compute && op.compute == ComputeKind::gather_copy));
  }
}

TEST_CASE("An MXFP8 weight is resident row-wise and column-wise, each with its scales") {
  const double scaled_copy = 1 + 1.0 / 32;
  const models::StageMemory params =
      models::estimate_memory(load(with_fp8_params(b200_fp8("mxfp8"), 1))).worst();
  CHECK(params.weights_bytes / params.parameters == Approx(2 * scaled_copy));
  // Without FP8 parameters the BF16 weight stays beside its MXFP8 copies.
  const models::StageMemory bf16 = models::estimate_memory(load(b200_fp8("mxfp8"))).worst();
  CHECK(bf16.weights_bytes / bf16.parameters == Approx(2 + 2 * scaled_copy));
}

TEST_CASE("MXFP8 needs a Blackwell GPU, and its parameters the distributed optimizer") {
  nlohmann::json hopper = b200_fp8("mxfp8");
  hopper["cluster"] = "h100-2048x8-rail";
  CHECK(test::error_pointer(hopper) == "/training/fp8_recipe");
  CHECK(test::error_pointer(b200_fp8("mxfp8")).empty());
  CHECK(test::error_pointer(with_fp8_params(b200_fp8("mxfp8"), 3)) == "/training/fp8_param_gather");
  CHECK(test::error_pointer(with_fp8_params(b200_fp8("mxfp8"), 2)).empty());
}
