// Programs of one training step: schedules, kernel FLOPs, pipeline messages, gradient buckets,
// ZeRO gathers. Expected values are hand calculations.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "core/errors.hpp"
#include "models/memory.hpp"
#include "models/pipeline.hpp"
#include "models/transformer.hpp"
#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::scenario_json;
using clustersim::test::small_scenario;
using clustersim::test::zero3_scenario;

namespace {

PassSlot F(int mb, int c = 0) {
  return {PassKind::forward, mb, c};
}
PassSlot B(int mb, int c = 0) {
  return {PassKind::backward, mb, c};
}

int count_ops(const StageProgram& prog, OpKind kind) {
  int n = 0;
  for (const auto& op : prog.ops) n += op.kind == kind;
  return n;
}

double dp_bytes(const Workload& w) {
  double total = 0;
  for (const auto& st : w.stages) {
    for (const auto& b : st.buckets) total += b.bytes();
  }
  return total;
}

}  // namespace

TEST_CASE("1F1B runs p - s - 1 warm-up forwards, then alternates, then drains") {
  // p = 4, m = 6. Stage 0: 3 warm-up forwards; stage 3 (last): none.
  const auto s0 = pipeline_order(PipelineSchedule::one_f_one_b, 4, 0, 6, 1);
  const std::vector<PassSlot> want0 = {F(0), F(1), F(2), F(3), B(0), F(4),
                                       B(1), F(5), B(2), B(3), B(4), B(5)};
  CHECK(s0 == want0);
  const auto s3 = pipeline_order(PipelineSchedule::one_f_one_b, 4, 3, 6, 1);
  const std::vector<PassSlot> want3 = {F(0), B(0), F(1), B(1), F(2), B(2),
                                       F(3), B(3), F(4), B(4), F(5), B(5)};
  CHECK(s3 == want3);
}

TEST_CASE("GPipe runs every forward before any backward") {
  const auto s = pipeline_order(PipelineSchedule::gpipe, 2, 1, 3, 1);
  const std::vector<PassSlot> want = {F(0), F(1), F(2), B(0), B(1), B(2)};
  CHECK(s == want);
}

TEST_CASE("Interleaved 1F1B follows Megatron-LM's chunk and micro-batch order") {
  // p = 2, v = 2, m = 4, stage 0: warm-up (2-0-1)*2 + (2-1)*2 = 4 virtual micro-batches;
  // chunk(k) = (k mod 4) / 2, micro-batch(k) = (k / 4) * 2 + k mod 2, backward chunks reversed.
  const auto s = pipeline_order(PipelineSchedule::interleaved, 2, 0, 4, 2);
  const std::vector<PassSlot> want = {F(0, 0), F(1, 0), F(0, 1), F(1, 1),  // warm-up
                                      F(2, 0), B(0, 1), F(3, 0), B(1, 1),  // steady
                                      F(2, 1), B(0, 0), F(3, 1), B(1, 0),
                                      B(2, 1), B(3, 1), B(2, 0), B(3, 0)};  // drain
  CHECK(s == want);
}

TEST_CASE("Every schedule runs each micro-batch's forward and backward once per chunk") {
  const auto [schedule, p, m, v] =
      GENERATE(std::make_tuple(PipelineSchedule::gpipe, 4, 7, 1),
               std::make_tuple(PipelineSchedule::one_f_one_b, 4, 3, 1),
               std::make_tuple(PipelineSchedule::one_f_one_b, 8, 16, 1),
               std::make_tuple(PipelineSchedule::interleaved, 4, 8, 3),
               std::make_tuple(PipelineSchedule::interleaved, 4, 4, 2));
  for (int stage = 0; stage < p; ++stage) {
    std::map<std::tuple<int, int, int>, int> seen;
    std::map<std::pair<int, int>, bool> forwarded;
    for (const auto& slot : pipeline_order(schedule, p, stage, m, v)) {
      ++seen[{static_cast<int>(slot.kind), slot.micro_batch, slot.chunk}];
      if (slot.kind == PassKind::forward) forwarded[{slot.micro_batch, slot.chunk}] = true;
      // A backward never precedes its own forward on the same rank.
      if (slot.kind == PassKind::backward) CHECK(forwarded[{slot.micro_batch, slot.chunk}]);
    }
    CHECK(seen.size() == static_cast<std::size_t>(2 * m * v));
    for (const auto& [key, n] : seen) CHECK(n == 1);
  }
}

TEST_CASE("A layer's forward GEMMs on one TP rank do 1/tp of the model's GEMM FLOPs") {
  // Small model: h = 1024, f = 4096 (GeLU), MHA; T = 1 x 1024 tokens per micro-batch.
  // GEMM FLOPs per token and layer: 2 (4 h^2 + 2 h f) = 2 (4194304 + 8388608) = 25165824.
  const int tp = GENERATE(1, 2, 8);
  nlohmann::json j = small_scenario(8, 8 / tp, tp, 1);
  const Scenario s = load(j);
  const auto compute = test::compute_model(s);
  const LayerCosts c = layer_costs(s, compute);
  CHECK(c.forward_gemm_flops * tp == Approx(25165824.0 * 1024));
  // Attention core: 4 s h per token (Narayanan et al.), halved by the causal mask.
  CHECK(c.forward_attention_flops * tp == Approx(4.0 * 1024 * 1024 * 1024 / 2));
  // And the analytic model agrees on the uncausal figure.
  const auto f = models::forward_flops_per_token(s.model, 1024);
  CHECK(c.forward_gemm_flops * tp ==
        Approx((f.attention_projections_per_layer + f.mlp_per_layer) * 1024));
  // Backward GEMMs: twice the forward (dgrad + wgrad); attention backward 2.5x.
  CHECK(c.backward.flops == Approx(2 * c.forward_gemm_flops + 2.5 * c.forward_attention_flops));
}

TEST_CASE("Unfused attention computes the whole score matrix and re-runs Q K^T when selective") {
  // Same small model, tp = 2: per sequence of S = 1024 tokens the attention core is
  // Q K^T + P V = 2 x 2 S^2 h = 4 S^2 h FLOPs with no causal saving, split over the TP ranks.
  const int tp = 2;
  nlohmann::json j = small_scenario(8, 4, tp, 1);
  j["training"]["attention"] = "unfused";
  j["training"]["recompute"] = "selective";
  const Scenario s = load(j);
  const auto compute = test::compute_model(s);
  const LayerCosts c = layer_costs(s, compute);
  const double attention = 4.0 * 1024 * 1024 * 1024 / tp;
  CHECK(c.forward_attention_flops == Approx(attention));
  // Backward: dP, dV, dQ, dK = twice the forward's two score GEMMs.
  CHECK(c.backward.flops == Approx(2 * c.forward_gemm_flops + 2 * attention));
  // Selective recomputation re-runs Q K^T (half the core) plus softmax and dropout; their bytes:
  // (4 + 5) B per score element, S^2 elements per local head (8 / tp heads).
  CHECK(c.recompute.flops == Approx(attention / 2));
  CHECK(c.recompute.bytes > 9.0 * 1024 * 1024 * (8 / tp));
  SECTION("with FlashAttention selective recomputation adds no kernel") {
    j["training"]["attention"] = "flash";
    const Scenario f = load(j);
    CHECK(layer_costs(f, test::compute_model(f)).recompute.time_s == 0);
  }
}

TEST_CASE("FP8 linears read 1-byte operands after a cast-transpose of each BF16 input") {
  // tp = 1, T = 1024 tokens, h = 1024, f = 4096 (GeLU). Per linear [m x k] x [k x n]: the
  // cast-transpose moves 4 B per input element (read 2, write 1 + 1); the GEMM then reads m k + k n
  // bytes fewer than in BF16 and writes the same BF16 output. Forward bytes FP8 - BF16 =
  // sum over QKV, output projection, FFN in, FFN out of (4 m k - m k - k n) = 3 m k - k n.
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  const double T = 1024, h = 1024, f = 4096;
  const double expected =
      (3 * T * h - h * 3 * h) + (3 * T * h - h * h) + (3 * T * h - h * f) + (3 * T * f - f * h);
  const Scenario bf16 = load(j);
  j["training"]["precision"] = "fp8";
  const Scenario fp8 = load(j);
  const LayerCosts a = layer_costs(bf16, test::compute_model(bf16));
  const LayerCosts b = layer_costs(fp8, test::compute_model(fp8));
  CHECK(b.forward.bytes - a.forward.bytes == Approx(expected));
  // Backward: one cast-transpose of each m x n output gradient (4 B) and two FP8 GEMMs that read
  // 1-byte operands: dgrad [m x n] x [n x k] and wgrad [k x m] x [m x n].
  const double backward_expected = (4 * T * 3 * h - (T * 3 * h + 3 * h * h) - (h * T + T * 3 * h)) +
                                   (4 * T * h - (T * h + h * h) - (h * T + T * h)) +
                                   (4 * T * f - (T * f + f * h) - (h * T + T * f)) +
                                   (4 * T * h - (T * h + h * f) - (f * T + T * h));
  CHECK(b.backward.bytes - a.backward.bytes == Approx(backward_expected));
}

TEST_CASE("Squared ReLU runs relu and the square unfused, and autograd's kernels backward") {
  // tp = 1, T = 1024 tokens, f = 4096: over the f-wide tensor in 2-byte elements, GeLU makes 2
  // forward passes (read x, write y) and 3 backward (read x, dy; write dx). relu(x)^2 makes 4
  // forward (relu 2, square 2) and 10 backward (pow_backward: copy r 2, scale 2, multiply by
  // dy 3; threshold_backward 3). Same kernels otherwise, so the difference is only these bytes.
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  const double T = 1024, f = 4096, bytes = 2;
  const Scenario gelu = load(j);
  j["model"]["ffn"] = "squared_relu";
  const Scenario sq = load(j);
  CHECK(sq.model.ffn == FfnKind::squared_relu);
  const LayerCosts a = layer_costs(gelu, test::compute_model(gelu));
  const LayerCosts b = layer_costs(sq, test::compute_model(sq));
  CHECK(b.forward.bytes - a.forward.bytes == Approx((4 - 2) * T * f * bytes));
  CHECK(b.backward.bytes - a.backward.bytes == Approx((10 - 3) * T * f * bytes));
  // Two weight matrices like GeLU: the same GEMM FLOPs.
  CHECK(b.forward_gemm_flops == Approx(a.forward_gemm_flops));
}

TEST_CASE("A TP-overlapped GEMM whose reduce-scatter takes SMs runs on the others") {
  // dp 1 x tp 2, sequence parallel, TP overlap, T = 8 x 1024 tokens, h = 1024, f = 4096 on an
  // H800 (132 SMs). With 24 SMs for the output projection's reduce-scatter and 16 for the second
  // MLP linear's, those two forward GEMMs [T x h/t] x [h/t x h] and [T x f/t] x [f/t x h] run on
  // 108 and 116 SMs: each takes 132/108 and 132/116 of its time; nothing else changes.
  nlohmann::json j = small_scenario(2, 1, 2, 1);
  j["training"]["micro_batch"] = 8;
  j["training"]["tp_comm_overlap"] = true;
  const Scenario plain = load(j);
  j["training"]["tp_comm_overlap_sms"] = {{"proj_fprop", 24}, {"fc2_fprop", 16}};
  const Scenario margin = load(j);
  // The microbenchmark rates alone: the shipped fit's element-wise fraction would make the
  // output projection memory-bound at this size.
  const models::ComputeCostModel model(plain.cluster.gpu, test::nominal_calibration());
  const LayerCosts a = layer_costs(plain, model);
  const LayerCosts b = layer_costs(margin, model);
  const double T = 8 * 1024, h = 1024, f = 4096, t = 2;
  const models::OpCost proj = model.gemm({T, h, h / t}, Dtype::bf16);
  const models::OpCost fc2 = model.gemm({T, h, f / t}, Dtype::bf16);
  REQUIRE_FALSE(proj.memory_bound());
  REQUIRE_FALSE(fc2.memory_bound());
  CHECK(b.forward.time_s - a.forward.time_s ==
        Approx(proj.compute_s * 24 / 108 + fc2.compute_s * 16 / 116));
  CHECK(b.backward.time_s == Approx(a.backward.time_s));
  CHECK(b.forward.flops == Approx(a.forward.flops));
}

TEST_CASE("TP-overlap SMs need TP overlap and must leave the GEMM some SMs") {
  nlohmann::json j = small_scenario(8, 1, 8, 1);
  j["training"]["tp_comm_overlap_sms"] = {{"proj_fprop", 24}};
  CHECK_THROWS_AS(load(j), ConfigError);
  j["training"]["tp_comm_overlap"] = true;
  j["training"]["tp_comm_overlap_sms"] = {{"fc2_fprop", 132}};
  CHECK_THROWS_AS(load(j), ConfigError);
  j["training"]["tp_comm_overlap_sms"] = {{"fc2_fprop", 131}};
  CHECK_NOTHROW(load(j));
}

TEST_CASE("Counting the embedding in the pipeline split takes a layer off the first stage") {
  // 8 layers + the embedding = 9 over pp 3: 3 each, so the first stage builds 2 Transformer
  // layers and the others 3 (without the option pp 3 does not divide 8 and is refused).
  nlohmann::json j = small_scenario(3, 1, 1, 3);
  CHECK_THROWS_AS(load(j), ConfigError);
  j["parallelism"]["account_for_embedding_in_pipeline_split"] = true;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  REQUIRE(w.stages.size() == 3);
  CHECK(w.stages[0].layers == 2);
  CHECK(w.stages[1].layers == 3);
  CHECK(w.stages[2].layers == 3);
  // With the loss counted too, 10 over 3: refused.
  j["parallelism"]["account_for_loss_in_pipeline_split"] = true;
  CHECK_THROWS_AS(load(j), ConfigError);
}

TEST_CASE("A virtual stage may hold only the embedding or only the output layer and loss") {
  // The Llama 3 paper's split (section 3.3.2): with the embedding and the loss counted, 8 layers
  // + 2 over pp 2 x vpp 5 = 10 virtual stages is one each, so virtual stage 0 holds only the
  // embedding and virtual stage 9 only the output layer and loss. Rank 0 holds virtual stages
  // 0, 2, 4, 6, 8 (0 + 1 + 1 + 1 + 1 layers), rank 1 holds 1, 3, 5, 7, 9 (1 + 1 + 1 + 1 + 0).
  nlohmann::json j = small_scenario(2, 1, 1, 2);
  j["parallelism"]["vpp"] = 5;
  j["parallelism"]["schedule"] = "interleaved";
  j["parallelism"]["account_for_embedding_in_pipeline_split"] = true;
  j["parallelism"]["account_for_loss_in_pipeline_split"] = true;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  REQUIRE(w.stages.size() == 2);
  CHECK(w.stages[0].layers == 4);
  CHECK(w.stages[1].layers == 4);
  std::map<int, std::set<ComputeKind>> kinds;  // compute kinds per virtual stage
  std::map<std::tuple<int, int, int>, int> balance;
  for (const auto& st : w.stages) {
    for (const auto& op : st.ops) {
      if (op.kind == OpKind::compute && op.virtual_stage >= 0)
        kinds[op.virtual_stage].insert(op.compute);
      if (op.kind == OpKind::send)
        ++balance[{static_cast<int>(op.pass), op.micro_batch, op.virtual_stage}];
      if (op.kind == OpKind::recv)
        --balance[{static_cast<int>(op.pass), op.micro_batch, op.virtual_stage}];
    }
  }
  CHECK(kinds[0] == std::set<ComputeKind>{ComputeKind::embedding});
  CHECK(kinds[9] == std::set<ComputeKind>{ComputeKind::lm_head});
  for (int vs = 1; vs < 9; ++vs) {
    CHECK(kinds[vs].count(ComputeKind::forward) == 1);
    CHECK(kinds[vs].count(ComputeKind::backward) == 1);
  }
  // The empty virtual stages still pass every message on: forward and backward across the 9
  // boundaries for each of the 8 micro-batches, each sent once and received once.
  CHECK(balance.size() == static_cast<std::size_t>(2 * 8 * 9));
  for (const auto& [key, n] : balance) CHECK(n == 0);
}

TEST_CASE("Every pipeline send has exactly one matching receive") {
  const auto [pp, vpp, schedule] =
      GENERATE(std::make_tuple(4, 1, "1f1b"), std::make_tuple(2, 2, "interleaved"),
               std::make_tuple(4, 1, "gpipe"), std::make_tuple(4, 1, "zb-h1"));
  nlohmann::json j = small_scenario(2 * pp, 2, 1, pp);
  j["parallelism"]["vpp"] = vpp;
  j["parallelism"]["schedule"] = schedule;
  j["training"]["global_batch"] = 2 * 8;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  std::map<std::tuple<int, int, int>, int> balance;  // (pass, mb, receiving vstage)
  for (const auto& st : w.stages) {
    for (const auto& op : st.ops) {
      if (op.kind == OpKind::send)
        ++balance[{static_cast<int>(op.pass), op.micro_batch, op.virtual_stage}];
      if (op.kind == OpKind::recv)
        --balance[{static_cast<int>(op.pass), op.micro_batch, op.virtual_stage}];
    }
  }
  // Forward and backward messages across pp*vpp - 1 boundaries for each of 8 micro-batches.
  CHECK(balance.size() == static_cast<std::size_t>(2 * 8 * (pp * vpp - 1)));
  for (const auto& [key, n] : balance) CHECK(n == 0);
}

TEST_CASE("Stage parameters add up to the model's parameter count") {
  nlohmann::json j = small_scenario(4, 1, 1, 4);
  j["training"]["global_batch"] = 8;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  double total = 0;
  for (const auto& st : w.stages) total += st.params;
  // 8 layers x (4 h^2 + 4h biases... ) computed by hand for h = 1024, f = 4096, LayerNorm, no
  // biases: per layer 4h^2 + 2hf + 4h = 4194304 + 8388608 + 4096 = 12587008;
  // embedding and untied head 2 x 32000 x 1024 = 65536000; final norm 2h = 2048.
  CHECK(total == Approx(8 * 12587008.0 + 65536000.0 + 2048.0));
  CHECK(total == Approx(models::count_parameters(s.model).total()));
}

TEST_CASE("Gradient buckets carry every parameter once and never exceed the bucket size") {
  nlohmann::json j = small_scenario(8, 2, 2, 2);
  j["training"]["grad_bucket_MiB"] = 7;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  for (const auto& st : w.stages) {
    double params = 0;
    for (const auto& b : st.buckets) {
      params += b.params;
      CHECK(b.bytes() <= 7 * 1024.0 * 1024.0 * (1 + 1e-9));
    }
    CHECK(params == Approx(st.params));
    // One reduction launch per bucket, on the last micro-batch only (gradient accumulation).
    CHECK(count_ops(st, OpKind::grad_ready) == static_cast<int>(st.buckets.size()));
  }
}

TEST_CASE("Reducing after every micro-batch launches every bucket once per micro-batch") {
  nlohmann::json j = small_scenario(8, 4, 2, 1);
  j["training"]["grad_reduce"] = "per_micro_batch";
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  const auto& st = w.stages.at(0);
  CHECK(count_ops(st, OpKind::grad_ready) == 8 * static_cast<int>(st.buckets.size()));
}

TEST_CASE("FP8 gradients carry half the data-parallel bytes of BF16") {
  nlohmann::json j = small_scenario(8, 4, 2, 1);
  j["comm"]["grad_dtype"] = "bf16";
  const Scenario bf16 = load(j);
  j["comm"]["grad_dtype"] = "fp8";
  const Scenario fp8 = load(j);
  j["comm"]["grad_dtype"] = "fp32";
  const Scenario fp32 = load(j);
  const double b16 = dp_bytes(build_workload(bf16, test::compute_model(bf16)));
  CHECK(dp_bytes(build_workload(fp8, test::compute_model(fp8))) == Approx(b16 / 2));
  CHECK(dp_bytes(build_workload(fp32, test::compute_model(fp32))) == Approx(b16 * 2));
}

TEST_CASE("Embedding and LM head gradients listed as FP32 groups travel at 4 bytes") {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["comm"]["grad_dtype"] = "fp16";
  const Scenario plain = load(j);
  j["comm"]["fp32_layer_groups"] = {"embedding", "lm_head"};
  const Scenario mixed = load(j);
  const double a = dp_bytes(build_workload(plain, test::compute_model(plain)));
  const double b = dp_bytes(build_workload(mixed, test::compute_model(mixed)));
  // Embedding 32000 x 1024 and head (32000 x 1024 + final norm 2048) go from 2 to 4 bytes.
  CHECK(b - a == Approx((2 * 32000.0 * 1024 + 2048) * 2));
}

TEST_CASE("ZeRO-3 gathers each layer's parameters before every forward and backward use") {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["parallelism"]["zero_stage"] = 3;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  const auto& st = w.stages.at(0);
  // Units: 8 layers + embedding + head = 10; 8 micro-batches; forward and backward.
  CHECK(st.gathers.size() == 10);
  CHECK(count_ops(st, OpKind::gather_wait) == 10 * 8 * 2);
  CHECK(count_ops(st, OpKind::gather_issue) == 10 * 8 * 2);
  // Gradients reduce-scattered, not all-reduced, with no device work besides the collective.
  for (const auto& b : st.buckets) {
    CHECK(b.calls.at(0).kind == CollKind::reduce_scatter);
    CHECK(b.stream_work_s == 0);
  }
}

TEST_CASE("DeepSpeed 2021 ZeRO-3 gathers each weight matrix after a synchronize, unoverlapped") {
  // Small GPT, h = 1024, f = 4096, tp = 1, 8 layers, 8 micro-batches, dp 8, full recompute.
  nlohmann::json j = zero3_scenario("deepspeed-2021");
  j["training"]["recompute"] = "full";
  const Scenario s = load(j);
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  const auto& st = w.stages.at(0);
  // One gather per weight matrix, in forward order: Q/K/V h x 3h, output h x h, FFN h x f and
  // f x h (2 B each); the LayerNorms' weights and biases (h = 1024 elements each) are under
  // DeepSpeed's 1e5-element persistence threshold and stay gathered. Plus the embedding and the
  // head: 8 x 4 + 2 gathers.
  const double h = 1024, f = 4096;
  REQUIRE(st.gathers.size() == 8 * 4 + 2);
  std::vector<double> layer_bytes;
  for (const auto& g : st.gathers) {
    if (g.label.rfind("layer 7 ", 0) == 0) layer_bytes.push_back(g.call.bytes);
  }
  CHECK(layer_bytes == std::vector<double>{2 * h * 3 * h, 2 * h * h, 2 * h * f, 2 * f * h});
  SECTION("linear biases are persistent too") {
    j["model"]["linear_biases"] = true;
    const Scenario b = load(j);
    const Workload wb = build_workload(b, model);
    CHECK(wb.stages.at(0).gathers.size() == 8 * 4 + 2);
  }
  SECTION("a bias of 1e5 elements or more is gathered after its weight") {
    // FFN width 100,000: the FFN-in bias reaches the threshold, the others stay under it.
    j["model"]["linear_biases"] = true;
    j["model"]["ffn_hidden_size"] = 100000;
    const Scenario b = load(j);
    const Workload wb = build_workload(b, model);
    std::vector<double> bytes;
    for (const auto& g : wb.stages.at(0).gathers) {
      if (g.label.rfind("layer 7 ", 0) == 0) bytes.push_back(g.call.bytes);
    }
    CHECK(bytes == std::vector<double>{2 * h * 3 * h, 2 * h * h, 2 * h * 100000, 2 * 100000,
                                       2 * 100000 * h});
    CHECK(wb.stages.at(0).gathers.size() == 8 * 5 + 2);
  }
  // Layers of 12.6 M parameters stay gathered from the recompute forward to the backward (under
  // DeepSpeed's 1e9 live-parameter limit): each gather runs once per pass and micro-batch. Each
  // is: the flat buffer zero-filled, a wait for every reduction, the host building one view per
  // rank and calling all_gather, the gather issued, the host submitting one copy per rank while
  // it runs, the wait, the GPU's copies.
  const int gathers_per_step = (8 * 4 + 2) * 8 * 2;
  CHECK(count_ops(st, OpKind::gather_issue) == gathers_per_step);
  // The cost of each kernel launch in force: the fitted kernel gap where the calibration has one.
  const double launch = model.kernel_gap_s();
  const auto check_sequence = [&](const workload::StageProgram& stage, double ranks) {
    int in_order = 0;
    const std::vector<Op> ops = stage.ops.to_vector();
    for (std::size_t i = 0; i + 6 < ops.size(); ++i) {
      const Op& fill = ops[i];
      const Op& sync = ops[i + 1];
      const Op& call = ops[i + 2];
      const Op& issue = ops[i + 3];
      const Op& submit = ops[i + 4];
      const Op& wait = ops[i + 5];
      const Op& copy = ops[i + 6];
      if (sync.kind != OpKind::grad_wait || issue.kind != OpKind::gather_issue) continue;
      const double bytes = stage.gathers.at(static_cast<std::size_t>(issue.index)).call.bytes;
      REQUIRE(fill.kind == OpKind::compute);
      CHECK(fill.compute == ComputeKind::gather_copy);
      CHECK(fill.time_s == Approx(launch + bytes / model.hbm_Bps(models::KernelSource::pytorch)));
      REQUIRE(call.kind == OpKind::compute);
      CHECK(call.compute == ComputeKind::gather_copy);
      // 250 us measured for the call on 8 ranks, less those ranks' views (1.7 us) and copy-out
      // work (a select 1.21 us, copy_'s dispatch 0.65 us, a cudaMemcpyAsync 6 us), plus one
      // view per rank of this group.
      CHECK(call.time_s == Approx(250e-6 - 8 * (1.7e-6 + 7.86e-6) + ranks * 1.7e-6));
      REQUIRE(submit.kind == OpKind::compute);
      CHECK(submit.compute == ComputeKind::gather_copy);
      // One select, copy_ dispatch and cudaMemcpyAsync per rank, 7.86 us, submitted while the
      // all-gather runs; no per-kernel gap enters.
      CHECK(submit.time_s == Approx(ranks * 7.86e-6));
      CHECK(wait.kind == OpKind::gather_wait);
      CHECK(wait.index == issue.index);
      REQUIRE(copy.kind == OpKind::compute);
      CHECK(copy.compute == ComputeKind::gather_copy);
      // The gathered bytes read and written once.
      CHECK(copy.time_s == Approx(2 * bytes / model.hbm_Bps(models::KernelSource::pytorch)));
      ++in_order;
    }
    return in_order;
  };
  CHECK(check_sequence(st, 8) == gathers_per_step);
  SECTION("the host's work per rank grows with the data-parallel group") {
    nlohmann::json j64 = j;
    j64["gpus"] = 64;
    j64["parallelism"]["dp"] = 64;
    j64["training"]["global_batch"] = 64 * 8 * s.training.micro_batch;
    const Scenario s64 = load(j64);
    const Workload w64 = build_workload(s64, model);
    CHECK(check_sequence(w64.stages.at(0), 64) == gathers_per_step);
  }
  // Gradients all-reduced in buckets, not reduce-scattered; the reduction stream flattens,
  // divides and copies back each bucket: 6 B of HBM traffic per gradient byte, one kernel.
  for (const auto& b : st.buckets) {
    CHECK(b.calls.at(0).kind == CollKind::all_reduce);
    CHECK(b.stream_work_s ==
          Approx(launch + 6 * b.bytes() / model.hbm_Bps(models::KernelSource::pytorch)));
  }
}

TEST_CASE("DeepSpeed 2021 ZeRO-3 gathers the persistent parameters once after the optimizer") {
  // Small GPT, h = 1024, 8 layers, dp 8: each layer's two LayerNorms hold a weight and a bias of
  // 1024 elements, under the 1e5-element persistence threshold: 32 persistent tensors.
  nlohmann::json j = zero3_scenario("deepspeed-2021");
  const Scenario s = load(j);
  const auto model = test::compute_model(s);
  const Workload w = build_workload(s, model);
  const std::vector<Op> ops = w.stages.at(0).ops.to_vector();
  std::size_t opt = ops.size();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::compute && ops[i].compute == ComputeKind::optimizer) opt = i;
  }
  REQUIRE(opt < ops.size());
  double after = 0;
  for (std::size_t i = opt + 1; i < ops.size(); ++i) {
    REQUIRE(ops[i].kind == OpKind::compute);
    CHECK(ops[i].compute == ComputeKind::gather_copy);
    after += ops[i].time_s;
  }
  // The all_gather call with its 8 views and 8 copy submissions (250 us on 8 ranks, as
  // measured), then the Python copy of each tensor from each of the 8 ranks holding 128 of its
  // elements: 32 x 8 iterations of 4 us plus a 6 us cudaMemcpyAsync. The GPU copies the 64 KiB
  // gathered twice (read and write each time).
  const double bytes = 32 * 1024 * 2;
  CHECK(after == Approx(250e-6 + 32 * 8 * (4e-6 + 6e-6) +
                        2 * 2 * bytes / model.hbm_Bps(models::KernelSource::pytorch)));
}

TEST_CASE("A ZeRO-3 implementation is refused without ZeRO-3") {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["parallelism"]["zero_stage"] = 2;
  j["parallelism"]["zero3_implementation"] = "deepspeed-2021";
  CHECK_THROWS_AS(load(j), ConfigError);
  j["parallelism"]["zero_stage"] = 3;
  j["parallelism"]["zero3_implementation"] = "deepspeed";
  CHECK_THROWS_AS(load(j), ConfigError);
}

TEST_CASE("DeepSpeed 2021 ZeRO-3 gathers a layer above 1e9 parameters again for its backward") {
  // GPT 174.6B: 12 h^2 = 1.8e9 parameters per layer > stage3_max_live_parameters (1e9): the
  // recompute forward gathers the layer's four weight matrices (its biases and LayerNorms, at
  // most 4h = 49152 elements, are persistent), the backward gathers them once more. 96 layers,
  // pp 12 -> 8 layers per stage; dp 2, one micro-batch.
  nlohmann::json j = scenario_json("scenarios/seed-optimized-1024.json");
  j["model"] = "gpt-174.6b-sc21";
  j["gpus"] = 24;
  j["parallelism"] = {{"dp", 2},
                      {"tp", 1},
                      {"pp", 12},
                      {"zero_stage", 3},
                      {"zero3_implementation", "deepspeed-2021"}};
  j["training"] = {{"global_batch", 2},
                   {"micro_batch", 1},
                   {"seq_len", 2048},
                   {"recompute", "full"},
                   {"attention", "unfused"}};
  j["comm"]["fp32_layer_groups"] = nlohmann::json::array();
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  const auto& middle = w.stages.at(5);  // no embedding or head
  CHECK(middle.gathers.size() == 8 * 4);
  CHECK(count_ops(middle, OpKind::gather_issue) == 8 * 4 * 3);
}

TEST_CASE("ZeRO-1 gathers the updated parameters of every bucket once per step") {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["parallelism"]["zero_stage"] = 1;
  const Scenario s = load(j);
  const Workload w = build_workload(s, test::compute_model(s));
  const auto& st = w.stages.at(0);
  CHECK(st.gathers.size() == st.buckets.size());
  CHECK(count_ops(st, OpKind::gather_issue) == static_cast<int>(st.gathers.size()));
  CHECK(count_ops(st, OpKind::gather_wait) == static_cast<int>(st.gathers.size()));
}

TEST_CASE(
    "A TP collective pipelined with its GEMM exposes one chunk plus what the GEMM cannot hide") {
  // tp = 4 chunks. Communication-bound: comm 4 s, GEMM 1 s -> 4/4 + (4 - 1) x 3/4 = 3.25 s.
  CHECK(exposed_tp_comm_s(4.0, 1.0, 4) == Approx(3.25));
  // Compute-bound: only the first chunk's transfer shows: 1/4.
  CHECK(exposed_tp_comm_s(1.0, 4.0, 4) == Approx(0.25));
  // No GEMM to hide behind, or no TP: the whole collective.
  CHECK(exposed_tp_comm_s(2.0, 0.0, 8) == Approx(2.0));
  CHECK(exposed_tp_comm_s(2.0, 5.0, 1) == Approx(2.0));
}

TEST_CASE("1-bit Adam's compressed phase sends one bit per element plus a scale per chunk") {
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["comm"]["compression"] = {{"kind", "onebit_adam"}, {"warmup_fraction", 0.15}};
  const Scenario s = load(j);
  const auto compute = test::compute_model(s);
  const Workload warm = build_workload(s, compute);
  const Workload comp = build_workload(s, compute, {.compressed_phase = true});
  const auto& st = comp.stages.at(0);
  // One reduction per chunk after the backward: all-to-all then all-gather of the sign bits.
  REQUIRE(st.buckets.size() == 1);
  const double params = st.params;
  CHECK(st.buckets[0].calls.at(0).kind == CollKind::all_to_all);
  CHECK(st.buckets[0].bytes() == Approx(2 * (params / 8 + 4 * 8)));
  // Error feedback is extra compute the warm-up phase does not have.
  CHECK(st.compute_s > warm.stages.at(0).compute_s);
}

TEST_CASE("Full recomputation of the first N layers of each chunk recomputes only those") {
  // 8 layers on pp 2 x vpp 2: 4 chunks of 2 layers. recompute_layers 1 recomputes one layer of
  // each chunk: 4 of 8 layers, half the recomputed forward work of recomputing them all.
  nlohmann::json j = small_scenario(4, 2, 1, 2);
  j["parallelism"]["vpp"] = 2;
  j["parallelism"]["schedule"] = "interleaved";
  j["training"]["recompute"] = "full";
  const Scenario all = load(j);
  j["training"]["recompute_layers"] = 1;
  const Scenario some = load(j);
  CHECK(models::recomputed_layers(all) == 8);
  CHECK(models::recomputed_layers(some) == 4);
  CHECK(models::recomputed_layers_on_stage(some, 1) == 2);

  auto recompute_s = [](const Workload& w, int stage) {
    double t = 0;
    for (const auto& op : w.stages[static_cast<std::size_t>(stage)].ops) {
      if (op.kind == OpKind::compute && op.compute == ComputeKind::recompute) t += op.time_s;
    }
    return t;
  };
  const Workload wa = build_workload(all, test::compute_model(all));
  const Workload ws = build_workload(some, test::compute_model(some));
  for (int st = 0; st < 2; ++st) {
    CHECK(recompute_s(wa, st) > 0);
    CHECK(recompute_s(ws, st) == Approx(recompute_s(wa, st) / 2));
  }

  // Hardware FLOPs: the recomputed forward is 4/8 of the layers' forward.
  const auto fa = models::flops_per_step(all, models::FlopConvention::megatron);
  const auto fs = models::flops_per_step(some, models::FlopConvention::megatron);
  CHECK(fs.per_token.recompute == Approx(fa.per_token.recompute / 2));
  CHECK(fs.per_token.model() == Approx(fa.per_token.model()));

  // Memory: a stage's 4 layers, 2 recomputed (input only), 2 keeping every activation.
  const auto full = models::layer_activation_bytes(all.model, 1024, 1, 1, false, Recompute::full,
                                                   AttentionKernel::flash);
  const auto none = models::layer_activation_bytes(all.model, 1024, 1, 1, false, Recompute::none,
                                                   AttentionKernel::flash);
  const auto ma = models::estimate_memory(all);
  const auto ms = models::estimate_memory(some);
  CHECK(ms.stages[1].activation_per_micro_batch_bytes -
            ma.stages[1].activation_per_micro_batch_bytes ==
        Approx(2 * (none.stored - full.stored)));

  SECTION("more layers than a chunk holds recompute them all") {
    j["training"]["recompute_layers"] = 5;
    CHECK(models::recomputed_layers(load(j)) == 8);
  }
}

TEST_CASE("A stage program stores the same ops at 16 and at 1024 micro-batches") {
  // 1F1B without ZeRO, one gradient reduction per step: each stage runs m forwards, all alike,
  // m backwards, all alike but the last (which launches the reductions), then the tail (the
  // wait for the reductions and the optimizer). So 4 distinct passes and 2m + 1 passes in all,
  // whatever m is.
  auto at = [](int m) {
    nlohmann::json j = small_scenario(16, 2, 4, 2);
    j["training"]["global_batch"] = 2 * m;
    const Scenario s = load(j);
    return build_workload(s, test::compute_model(s));
  };
  const Workload few = at(16);
  const Workload more = at(32);
  const Workload many = at(1024);
  for (std::size_t st = 0; st < 2; ++st) {
    const OpSequence& a = few.stages[st].ops;
    const OpSequence& b = many.stages[st].ops;
    CHECK(a.shapes() == 4);
    CHECK(b.shapes() == 4);
    CHECK(a.passes() == 2 * 16 + 1);
    CHECK(b.passes() == 2 * 1024 + 1);
    CHECK(b.stored_ops() == a.stored_ops());
    // Each further micro-batch adds one forward and one backward, the same ops each time.
    const OpSequence& c = more.stages[st].ops;
    CHECK(c.stored_ops() == a.stored_ops());
    CHECK((b.size() - a.size()) * (32 - 16) == (c.size() - a.size()) * (1024 - 16));
  }
}

TEST_CASE("FP8 current scaling adds an amax pass and scale kernels to every cast") {
  // tp = 1, T = 1024 tokens, h = 1024, f = 4096 (GeLU). Against delayed scaling, each cast of a
  // tensor not written by a norm adds zero_amax, an amax kernel reading it (2 B per element)
  // and compute_scale_from_amax; a cast after a TE norm (the QKV and first MLP inputs) adds
  // compute_scale_from_amax only.
  nlohmann::json j = small_scenario(8, 8, 1, 1);
  j["training"]["precision"] = "fp8";
  const auto costs = [](const Scenario& s) { return layer_costs(s, test::compute_model(s)); };
  const LayerCosts a = costs(load(j));
  j["training"]["fp8_recipe"] = "current";
  const LayerCosts b = costs(load(j));
  const double T = 1024, h = 1024, f = 4096;
  // Forward: QKV and FFN-in after norms (+1 kernel each); out-projection and FFN-out inputs
  // (+3 kernels each, +2 B over T h and T f).
  CHECK(b.forward.kernels - a.forward.kernels == 1 + 3 + 1 + 3);
  CHECK(b.forward.bytes - a.forward.bytes == Approx(2 * T * (h + f)));
  // Backward: the four output gradients (T x 3h, T x h, T x f, T x h), each cast standalone.
  CHECK(b.backward.kernels - a.backward.kernels == 4 * 3);
  CHECK(b.backward.bytes - a.backward.bytes == Approx(2 * T * (3 * h + h + f + h)));
  SECTION("a recipe without FP8 is refused") {
    j["training"]["precision"] = "bf16";
    CHECK_THROWS_AS(load(j), ConfigError);
  }
}

TEST_CASE("Megatron-LM's unfused cross entropy passes over the FP32 logits op by op") {
  // tp = 2: T = 1024 tokens, V / t = 16000 logits per token on a rank. Per logit the fused
  // kernel reads the logits and writes the softmax (8 B), and backward reads it and writes the
  // 16-bit gradient (6 B). Unfused: cast 6, max 4, subtract 8, exp 8, sum 4, divide 8 = 38 B in
  // 6 kernels and 12 per-token ones; backward multiply 8 and cast back 6 = 14 B in 2 and 5.
  nlohmann::json j = small_scenario(8, 4, 2, 1);
  const Scenario fused = load(j);
  j["training"]["cross_entropy"] = "unfused";
  const Scenario unfused = load(j);
  const auto cf = test::compute_model(fused);
  const auto cu = test::compute_model(unfused);
  PassBuilder pf(fused, cf);
  PassBuilder pu(unfused, cu);
  const double logits = 1024.0 * 32000 / 2;
  const models::OpCost f0 = total(pf.head_forward()), f1 = total(pu.head_forward());
  const models::OpCost b0 = total(pf.head_backward()), b1 = total(pu.head_backward());
  CHECK(f1.bytes - f0.bytes == Approx((38 - 8) * logits));
  CHECK(f1.kernels - f0.kernels == 6 + 12 - 1);
  CHECK(b1.bytes - b0.bytes == Approx((14 - 6) * logits));
  CHECK(b1.kernels - b0.kernels == 2 + 5 - 1);
  // The layers are untouched.
  CHECK(layer_costs(unfused, cu).forward.bytes == Approx(layer_costs(fused, cf).forward.bytes));
}

namespace {

// The pipeline ops of a stage's program pass by pass: "F" or "B" opens a pass, then "r" for a
// receive, "s" for a send and "pf" / "pb" for a posted forward / backward receive.
std::string pipeline_ops(const StageProgram& prog) {
  std::string out;
  int pass_mb = -2;
  PassKind pass_kind = PassKind::forward;
  for (const auto& op : prog.ops) {
    if (op.micro_batch >= 0 && (op.micro_batch != pass_mb || op.pass != pass_kind)) {
      pass_mb = op.micro_batch;
      pass_kind = op.pass;
      out += op.pass == PassKind::forward ? " F" : " B";
    }
    if (op.kind == OpKind::recv) out += "r";
    if (op.kind == OpKind::send) out += "s";
    if (op.kind == OpKind::recv_post) out += op.pass == PassKind::forward ? "pf" : "pb";
  }
  return out;
}

}  // namespace

TEST_CASE("overlap_p2p_comm posts each receive when the pass before it in its direction ends") {
  // p = 2, v = 2, m = 4 on rank 0 (virtual stages 0 and 2 of 0..3). Megatron-Core's interleaved
  // order: four warm-up forwards (chunks 0 0 1 1), F B pairs, four cool-down backwards.
  // Chunk 0's forwards start the chain (nothing to receive), chunk 0's backwards end it on the
  // way back (nothing to send). By hand from forward_backward_pipelining_with_interleaving:
  // a forward posts the next forward's receive when that one is chunk 1's, a backward the next
  // backward's; the last warm-up forward posts the first backward's.
  nlohmann::json j = small_scenario(2, 1, 1, 2);
  j["parallelism"]["vpp"] = 2;
  j["parallelism"]["schedule"] = "interleaved";
  j["training"]["global_batch"] = 4;
  SECTION("on") {
    j["training"]["overlap_p2p_comm"] = true;
    const Scenario s = load(j);
    const Workload w = build_workload(s, test::compute_model(s));
    // F0 F1 F2 F3 | F4 B0 F5 B1 F6 B2 F7 B3 | B4 B5 B6 B7 (chunks: F 0 0 1 1 0 . 0 . 1 . 1;
    // B 1 1 0 0 1 1 0 0).
    CHECK(pipeline_ops(w.stages[0]) ==
          " Fs Fspf Frspf Frspb Fs Brspb Fspf Brspb Frspf Brpb Frs Brpb Brspb Brspb Brpb Br");
  }
  SECTION("off: every receive where its pass starts") {
    const Scenario s = load(j);
    const Workload w = build_workload(s, test::compute_model(s));
    CHECK(pipeline_ops(w.stages[0]) == " Fs Fs Frs Frs Fs Brs Fs Brs Frs Br Frs Br Brs Brs Br Br");
  }
}

TEST_CASE("overlap_p2p_comm needs the interleaved schedule") {
  nlohmann::json j = small_scenario(2, 1, 1, 2);
  j["training"]["overlap_p2p_comm"] = true;
  CHECK_THROWS_WITH(
      load(j), Catch::Contains("/training/overlap_p2p_comm") && Catch::Contains("interleaved"));
}
