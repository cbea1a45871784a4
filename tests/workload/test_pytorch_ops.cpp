// PyTorch's ways of running a block as torchtitan uses them: op-level selective checkpointing
// (recompute "selective_op") and eager or compiled element-wise kernels (kernel_fusion). Expected
// values are hand counts from torchtitan 9dec370's code (workload/kernel_traffic.hpp).
#include <catch2/catch.hpp>

#include "core/errors.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::error_pointer;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// T = 1024 tokens per micro-batch; h = 1024, 8 query heads and 2 K/V heads of 128, SwiGLU of
// 3584, RMSNorm, RoPE; V = 32000.
nlohmann::json llama_scenario() {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["model"]["num_kv_heads"] = 2;
  j["model"]["ffn_hidden_size"] = 3584;
  j["model"]["ffn"] = "swiglu";
  j["model"]["norm"] = "rmsnorm";
  j["training"]["micro_batch"] = 1;
  j["training"]["dropout"] = false;
  return j;
}

constexpr double T = 1024, h = 1024, q = 1024, kv = 256, f = 3584, V = 32000;

LayerCosts costs_of(const nlohmann::json& j) {
  const Scenario s = load(j);
  return layer_costs(s, test::compute_model(s));
}

}  // namespace

TEST_CASE("op-level checkpointing re-runs the dropped matmuls and the block's element-wise work") {
  nlohmann::json j = llama_scenario();
  const LayerCosts a = costs_of(j);
  j["training"]["recompute"] = "selective_op";
  const LayerCosts b = costs_of(j);
  // wk, wo and w3: 2 T (h kv + q h + h f) FLOPs; attention is not recomputed.
  CHECK(b.recompute.flops == Approx(2 * T * (h * kv + q * h + h * f)));
  CHECK(b.backward.flops == Approx(a.backward.flops));
  // Fused kernels: two norms (2 + 2 B each per element of T h), RoPE on Q and K (4 B), SwiGLU
  // (6 B per element of T f), two residual adds (6 B), and the three GEMMs' operands and
  // outputs (BF16: (m k + k n + m n) 2 B).
  const double gemm_bytes =
      2 * ((T * h + h * kv + T * kv) + (T * q + q * h + T * h) + (T * h + h * f + T * f));
  const double elementwise = 2 * 4 * T * h + 4 * T * (q + kv) + 6 * T * f + 2 * 6 * T * h;
  CHECK(b.recompute.bytes == Approx(gemm_bytes + elementwise));
  SECTION("in FP8 the same matmuls are recomputed") {
    // torchao's Float8Linear calls torch.mm on Float8Tensors: the policy sees aten.mm.
    j["training"]["precision"] = "fp8";
    CHECK(costs_of(j).recompute.flops == Approx(2 * T * (h * kv + q * h + h * f)));
  }
}

TEST_CASE("eager kernels move the bytes of torchtitan's RMSNorm, RoPE and SwiGLU op by op") {
  nlohmann::json j = llama_scenario();
  const LayerCosts a = costs_of(j);
  j["training"]["kernel_fusion"] = "eager";
  const LayerCosts b = costs_of(j);
  // Forward, eager minus fused, bytes per element: RMSNorm 36 against 4 (twice), RoPE 20
  // against 4 over Q and K, SwiGLU 10 against 6, the attention output's contiguous copy 4.
  CHECK(b.forward.bytes - a.forward.bytes ==
        Approx(T * (2 * 32 * h + 16 * (q + kv) + 4 * f + 4 * q)));
  // Backward: RMSNorm 84 against 6, RoPE 20 against 4, SwiGLU 18 against 10.
  CHECK(b.backward.bytes - a.backward.bytes == Approx(T * (2 * 78 * h + 16 * (q + kv) + 8 * f)));
  // Kernels: each norm 6 + 2 per-row instead of 1, RoPE 3 for Q and 3 for K instead of 1,
  // SwiGLU 2 instead of 1, and the copy.
  CHECK(b.forward.kernels - a.forward.kernels == 2 * 7 + 5 + 1 + 1);
  CHECK(b.forward.flops == Approx(a.forward.flops));
}

TEST_CASE("compiled blocks leave only the final norm and the loss eager") {
  nlohmann::json j = llama_scenario();
  const Scenario fused = load(j);
  j["training"]["kernel_fusion"] = "compiled_blocks";
  const Scenario compiled = load(j);
  const auto cf = test::compute_model(fused);
  const auto cc = test::compute_model(compiled);
  CHECK(layer_costs(compiled, cc).forward.bytes == Approx(layer_costs(fused, cf).forward.bytes));
  PassBuilder pf(fused, cf);
  PassBuilder pc(compiled, cc);
  // Loss per logit: cast and log_softmax (6 + 8) against the fused 8; the final norm 36
  // against 4 per element of T h.
  CHECK(total(pc.head_forward()).bytes - total(pf.head_forward()).bytes ==
        Approx(T * (6 * V + 32 * h)));
  // Backward: NLL, log_softmax and the cast back (4 + 12 + 6) against 6; the norm 84 against 6.
  CHECK(total(pc.head_backward()).bytes - total(pf.head_backward()).bytes ==
        Approx(T * (16 * V + 78 * h)));
}

TEST_CASE("op-level checkpointing and eager kernels are refused where they are not modelled") {
  nlohmann::json j = llama_scenario();
  j["training"]["recompute"] = "selective_op";
  nlohmann::json unfused = j;
  unfused["training"]["attention"] = "unfused";
  CHECK(error_pointer(unfused) == "/training/attention");
  nlohmann::json modules = j;
  modules["training"]["recompute_modules"] = {"layernorm"};
  CHECK(error_pointer(modules) == "/training/recompute_modules");
  // Eager kernels are torchtitan's Llama's: not a GPT block with LayerNorm and GeLU.
  nlohmann::json gpt = small_scenario(8, 8, 1, 1);
  gpt["training"]["kernel_fusion"] = "eager";
  CHECK(error_pointer(gpt) == "/training/kernel_fusion");
  gpt["training"]["kernel_fusion"] = "compiled";
  CHECK(error_pointer(gpt) == "/training/kernel_fusion");
}

TEST_CASE("after PyTorch's own norm an FP8 current-scaling cast takes its amax pass too") {
  // Only Transformer Engine's norm kernels take the amax as they write. Under torch.compile
  // (torchtitan's RMSNorm) all four casts of a layer's forward add zero_amax, the amax kernel
  // (2 B per element read) and compute_scale_from_amax: QKV and FFN-in over T h, the output
  // projection's over T q, FFN-out's over T f.
  nlohmann::json j = llama_scenario();
  j["training"]["precision"] = "fp8";
  j["training"]["kernel_fusion"] = "compiled_blocks";
  const LayerCosts delayed = costs_of(j);
  j["training"]["fp8_recipe"] = "current";
  const LayerCosts current = costs_of(j);
  CHECK(current.forward.kernels - delayed.forward.kernels == 4 * 3);
  CHECK(current.forward.bytes - delayed.forward.bytes == Approx(2 * T * (h + q + h + f)));
}
