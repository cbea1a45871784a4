// training.grad_accumulation: the kernels that add each micro-batch's weight gradients into the
// step's. Expected values are hand calculations over the small GPT of fixtures.hpp.
#include <catch2/catch.hpp>

#include "models/transformer.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;
using clustersim::test::zero3_scenario;

namespace {

// The small model's layer: h = 1024, f = 4096, no linear biases, LayerNorm. Q/K/V 3h^2, output
// h^2, FFN h f and f h, two LayerNorms of 2h: 12,587,008 parameters in 8 tensors.
constexpr double kH = 1024, kF = 4096;
constexpr double kLayerParams = 4 * kH * kH + 2 * kH * kF + 2 * 2 * kH;
constexpr int kLayerTensors = 4 + 2 * 2;

// One GPU, 8 layers, 4 micro-batches of one sequence.
nlohmann::json one_gpu(const char* precision, const char* accumulation) {
  nlohmann::json j = small_scenario(1, 1, 1, 1);
  j["training"]["global_batch"] = 4;
  j["training"]["micro_batch"] = 1;
  j["training"]["precision"] = precision;
  if (accumulation) j["training"]["grad_accumulation"] = accumulation;
  return j;
}

// The accumulation ops of the layers, in program order.
std::vector<Op> layer_accumulations(const Scenario& s) {
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  std::vector<Op> out;
  for (const auto& op : w.stages.at(0).ops) {
    if (op.kind == OpKind::compute && op.compute == ComputeKind::grad_accumulation &&
        op.layer >= 0) {
      out.push_back(op);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("A layer's parameter tensors: four matrices, their biases, two norms") {
  ModelSpec m = load(small_scenario(1, 1, 1, 1)).model;
  CHECK(models::layer_param_tensors(m) == kLayerTensors);
  m.linear_biases = true;
  CHECK(models::layer_param_tensors(m) == 12);  // GPT-3: 4 weights, 4 biases, 2 x (gain, bias)
  m.norm = "rmsnorm";
  m.linear_biases = false;
  CHECK(models::layer_param_tensors(m) == 6);  // Llama: 4 weights, 2 gains
}

TEST_CASE("Fused gradient accumulation adds no kernel") {
  const Scenario s = load(one_gpu("bf16", nullptr));
  CHECK(s.training.grad_accumulation == GradAccumulation::fused);
  CHECK(layer_accumulations(s).empty());
}

TEST_CASE("Autograd adds every micro-batch's gradient after the first into .grad") {
  const Scenario s = load(one_gpu("fp16", "autograd"));
  const auto model = test::compute_model(s);
  const std::vector<Op> ops = layer_accumulations(s);
  // 8 layers x micro-batches 1, 2, 3 (the first one's gradient becomes .grad as it is).
  REQUIRE(ops.size() == 8 * 3);
  for (const Op& op : ops) {
    CHECK(op.micro_batch >= 1);
    CHECK(op.pass == PassKind::backward);
    // grad += new: read both FP16 gradients, write one (6 B), one kernel per tensor.
    CHECK(op.time_s == Approx(6 * kLayerParams / model.hbm_Bps(models::KernelSource::pytorch) +
                              kLayerTensors * model.kernel_gap_s()));
  }
}

TEST_CASE("DeepSpeed's BF16_Optimizer casts and adds every micro-batch's gradient into FP32") {
  const Scenario s = load(one_gpu("bf16", "deepspeed-bf16"));
  const auto model = test::compute_model(s);
  const std::vector<Op> ops = layer_accumulations(s);
  REQUIRE(ops.size() == 8 * 4);
  for (const Op& op : ops) {
    // The cast reads 2 B and writes 4, the add reads 4 + 4 and writes 4: 18 B per parameter;
    // two kernels per tensor.
    CHECK(op.time_s == Approx(18 * kLayerParams / model.hbm_Bps(models::KernelSource::pytorch) +
                              2 * kLayerTensors * model.kernel_gap_s()));
  }
}

TEST_CASE("DeepSpeed's BF16_Optimizer accumulation needs BF16 training") {
  CHECK_THROWS_WITH(load(one_gpu("fp16", "deepspeed-bf16")),
                    Catch::Contains("/training/grad_accumulation") && Catch::Contains("bf16"));
}

TEST_CASE(
    "FSDP2 copies each gathered unit out and each unit's gradients in, on the compute stream") {
  // 8 GPUs of data parallelism, ZeRO-3 as PyTorch's FSDP2, BF16 parameters, gradients reduced in
  // FP32; 8 micro-batches, reduced once per step.
  nlohmann::json j = zero3_scenario("fsdp2");
  j["training"]["precision"] = "bf16";
  j["training"]["micro_batch"] = 1;
  j["comm"]["grad_dtype"] = "fp32";
  const Scenario s = load(j);
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  const std::vector<Op> ops = w.stages.at(0).ops.to_vector();
  const double gap = model.kernel_gap_s();
  int copy_outs = 0, layer_copy_ins = 0;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::gather_wait) {
      // The wait is followed by the copy-out: the gathered BF16 bytes read and written once.
      const Op& copy = ops[i + 1];
      REQUIRE(copy.kind == OpKind::compute);
      REQUIRE(copy.compute == ComputeKind::gather_copy);
      if (copy.layer >= 0) {
        CHECK(copy.time_s ==
              Approx(2 * 2 * kLayerParams / model.hbm_Bps(models::KernelSource::pytorch) + gap));
      }
      ++copy_outs;
    } else if (op.kind == OpKind::compute && op.compute == ComputeKind::gather_copy &&
               op.pass == PassKind::backward && op.layer >= 0 &&
               ops[i - 1].kind != OpKind::gather_wait) {
      // The copy-in: each BF16 gradient read, written in FP32 into the reduce-scatter input.
      CHECK(op.time_s ==
            Approx((2 + 4) * kLayerParams / model.hbm_Bps(models::KernelSource::pytorch) + gap));
      CHECK(op.micro_batch == 7);  // reduced once per step, after the last micro-batch
      ++layer_copy_ins;
    }
  }
  // One gather per unit (8 layers, the embedding, the head) before every forward and backward
  // use: 10 x 2 x 8 micro-batches.
  CHECK(copy_outs == 10 * 2 * 8);
  CHECK(layer_copy_ins == 8);
  SECTION("FSDP (flat parameters) makes neither copy") {
    j["parallelism"]["zero3_implementation"] = "fsdp";
    const Workload flat = build_workload(load(j), model);
    for (const auto& op : flat.stages.at(0).ops) CHECK(op.compute != ComputeKind::gather_copy);
  }
}

TEST_CASE(
    "FSDP2 under pipeline parallelism gathers once a step and reduces after the last backward") {
  // 16 GPUs: dp 8 x pp 2, FSDP2, 8 micro-batches a step. PyTorch's pipeline stage keeps the
  // parameters gathered from a unit's first forward and runs every post-backward after the last
  // backward (torchtitan with pp: reshard_after_forward off).
  nlohmann::json j = small_scenario(16, 8, 1, 2);
  j["parallelism"]["zero_stage"] = 3;
  j["parallelism"]["zero3_implementation"] = "fsdp2";
  j["training"]["micro_batch"] = 1;
  const Scenario s = load(j);
  REQUIRE(s.micro_batches() == 8);
  REQUIRE(s.parallelism.fsdp2_keeps_gathered());
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  const std::vector<Op> ops = w.stages.at(0).ops.to_vector();
  int waits = 0;
  std::size_t last_backward = 0, first_ready = ops.size();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::gather_wait) {
      ++waits;
      CHECK(op.pass == PassKind::forward);
      CHECK(op.micro_batch == 0);
    }
    if (op.kind == OpKind::compute && op.compute == ComputeKind::backward) last_backward = i;
    if (op.kind == OpKind::grad_ready) first_ready = std::min(first_ready, i);
  }
  // Stage 0 holds 4 of the 8 layers and the embedding: 5 units, each gathered once.
  CHECK(waits == 5);
  CHECK(first_ready > last_backward);
  // Without pipeline parallelism every forward and backward gathers (the case above).
  CHECK_FALSE(load(zero3_scenario("fsdp2")).parallelism.fsdp2_keeps_gathered());
}
