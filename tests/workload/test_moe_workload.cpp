// Mixture-of-experts layers in the step programs: the EP all-to-alls, the expert GEMMs and the
// parameters each GPU holds. Expected values are hand calculations from the layer's shapes.
#include <catch2/catch.hpp>
#include <string>

#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

// The small test model (8 layers, h 1024, GeLU FFN 4096) on 64 GPUs of pure data parallelism,
// micro-batch 1 of 1024 tokens, every layer an MoE layer: 16 experts of width 512, top-2, one
// shared expert of width 1024, expert parallelism `ep`.
Scenario moe_scenario(int ep, double imbalance = 1, double capacity = 0) {
  Scenario s = load(small_scenario(64, 64, 1, 1));
  s.training.micro_batch = 1;
  s.training.recompute = Recompute::none;
  s.model.linear_biases = false;
  MoeSpec e;
  e.num_experts = 16;
  e.experts_per_token = 2;
  e.expert_ffn_hidden = 512;
  e.shared_experts = 1;
  e.shared_expert_ffn_hidden = 1024;
  e.routing_imbalance = imbalance;
  e.capacity_factor = capacity;
  s.model.moe = e;
  s.parallelism.ep = ep;
  return s;
}

constexpr double h = 1024, T = 1024, E = 16, k = 2, fe = 512, fs = 1024, f = 4096;

std::vector<const Collective*> ep_collectives(const std::vector<Collective>& all) {
  std::vector<const Collective*> out;
  for (const auto& c : all) {
    if (c.group == Group::ep) out.push_back(&c);
  }
  return out;
}

// The EP collectives among a pass's segments (b's collective table).
int ep_exchanges(const PassBuilder& b, const Segments& segs) {
  int n = 0;
  for (const auto& seg : segs)
    n += seg.is_collective && b.collectives()[seg.collective].group == Group::ep;
  return n;
}

}  // namespace

TEST_CASE("An MoE layer dispatches and combines T k h 16-bit values over the EP group",
          "[workload][moe]") {
  const Scenario s = moe_scenario(8);
  const auto compute = clustersim::test::compute_model(s);
  PassBuilder b(s, compute);
  const Segments fwd = b.moe_layer_forward();
  const Segments bwd = b.moe_layer_backward();
  const auto ep = ep_collectives(b.collectives());
  REQUIRE(ep.size() == 1);  // dispatch and combine have the same size: one costed collective
  CHECK(ep[0]->kind == CollKind::all_to_all);
  CHECK(ep[0]->bytes == Approx(T * k * h * 2));  // 1024 tokens x 2 copies x 1024 x 2 bytes
  CHECK(ep_exchanges(b, fwd) == 2);              // dispatch, combine
  CHECK(ep_exchanges(b, bwd) == 2);              // their conjugates

  // Without expert parallelism the tokens stay on the GPU: no all-to-all.
  const Scenario one = moe_scenario(1);
  PassBuilder b1(one, compute);
  b1.moe_layer_forward();
  b1.moe_layer_backward();
  CHECK(ep_collectives(b1.collectives()).empty());
}

TEST_CASE("An MoE layer's FLOPs are the router, the top-k experts and the shared expert",
          "[workload][moe]") {
  const Scenario s = moe_scenario(8);
  const auto compute = clustersim::test::compute_model(s);
  PassBuilder b(s, compute);
  const double moe = total(b.moe_layer_forward()).flops;
  const double dense = total(b.layer_forward()).flops;
  // Same attention; the dense FFN (2 T h f x 2 GEMMs) is replaced by the router (2 T h E), the
  // routed experts (each token through k experts of 2 GEMMs of h x fe) and the shared expert.
  const double want =
      2 * T * h * E + k * 2 * (2 * T * h * fe) + 2 * (2 * T * h * fs) - 2 * (2 * T * h * f);
  CHECK(moe - dense == Approx(want).epsilon(1e-9));

  // The busiest GPU's experts see `imbalance` times the mean tokens; a capacity factor caps it.
  const Scenario skewed_scenario = moe_scenario(8, 2.0);  // PassBuilder keeps a reference
  PassBuilder skewed(skewed_scenario, compute);
  const double routed = k * 2 * (2 * T * h * fe);
  CHECK(total(skewed.moe_layer_forward()).flops - moe == Approx(routed).epsilon(1e-9));
  const Scenario capped_scenario = moe_scenario(8, 2.0, 1.25);
  PassBuilder capped(capped_scenario, compute);
  CHECK(total(capped.moe_layer_forward()).flops - moe == Approx(0.25 * routed).epsilon(1e-9));
}

TEST_CASE("A split MoE backward leaves the weight-gradient GEMMs to W, the all-to-alls to B",
          "[workload][moe]") {
  const Scenario s = moe_scenario(8);
  const auto compute = clustersim::test::compute_model(s);
  PassBuilder b(s, compute);
  const Segments whole = b.moe_layer_backward();
  const Segments input = b.moe_layer_backward(BackwardPart::input_grad);
  const Segments weight = b.moe_layer_weight_grad();
  // W: one X^T dY per linear layer, the forward's GEMM FLOPs of the router (2 T h E), the
  // routed experts (k copies of 2 GEMMs of h x fe per token), the shared expert and the
  // attention's projections (QKV 2 T h 3h and the output projection 2 T h h here, one head
  // group per head).
  const double attention_gemms = 2 * T * h * (3 * h) + 2 * T * h * h;
  const double want =
      2 * T * h * E + k * 2 * (2 * T * h * fe) + 2 * (2 * T * h * fs) + attention_gemms;
  CHECK(total(weight).flops == Approx(want).epsilon(1e-9));
  // B + W does the unsplit backward's kernels.
  CHECK(total(input).flops + total(weight).flops == Approx(total(whole).flops).epsilon(1e-12));
  CHECK(ep_exchanges(b, input) == 2);
  CHECK(ep_exchanges(b, weight) == 0);
}

TEST_CASE("Experts launched one by one add launches, not GEMM time", "[workload][moe]") {
  // ep 8: El = 16 / 8 = 2 local experts. Per expert instead of grouped, each of the forward's
  // two expert matrices takes El launches instead of one, and so does each FP8 quantization
  // of the experts' inputs (two in the forward). The backward: two dgrad and two wgrad
  // matrices, two quantizations. Each extra launch is one kernel gap.
  Scenario grouped = moe_scenario(8);
  grouped.training.moe_expert_gemm = MoeExpertGemm::grouped;
  Scenario per_expert = grouped;
  per_expert.training.moe_expert_gemm = MoeExpertGemm::per_expert;
  const auto compute = clustersim::test::compute_model(grouped);
  const double gap = compute.kernel_gap_s();
  REQUIRE(gap > 0);
  const double El = 2;
  for (const Dtype precision : {Dtype::bf16, Dtype::fp8}) {
    grouped.training.precision = per_expert.training.precision = precision;
    PassBuilder g(grouped, compute);
    PassBuilder p(per_expert, compute);
    const models::OpCost gf = total(g.moe_layer_forward()), pf = total(p.moe_layer_forward());
    const models::OpCost gb = total(g.moe_layer_backward()), pb = total(p.moe_layer_backward());
    const bool fp8 = precision == Dtype::fp8;
    const double casts = fp8 ? 2 : 0;
    // Under FP8, Megatron-Core's TEGroupedMLP also pads the experts' tokens to multiples of 16
    // and unpads fc2's output: three kernels each way (the probabilities' too), each copy
    // reading and writing the T k routed copies of h 16-bit values.
    const double pads = fp8 ? 3 : 0;
    CHECK(pf.kernels - gf.kernels == Approx((2 + casts) * (El - 1) + pads));
    CHECK(pb.kernels - gb.kernels == Approx((4 + casts) * (El - 1) + pads));
    CHECK(pf.bytes - gf.bytes == Approx(fp8 ? 2 * (2 + 2) * T * k * h : 0.0));
    if (!fp8) CHECK(pf.time_s - gf.time_s == Approx(2 * (El - 1) * gap).epsilon(1e-9));
    CHECK(pf.flops == Approx(gf.flops).epsilon(1e-12));
    CHECK(pf.compute_s == Approx(gf.compute_s).epsilon(1e-12));
  }
  SECTION("under FP8 current scaling each expert's quantization runs its four kernels") {
    // zero_amax, amax, compute_scale_from_amax and the cast, per expert: 4 (El - 1) more
    // kernels per quantization than grouped, two quantizations each way.
    grouped.training.precision = per_expert.training.precision = Dtype::fp8;
    grouped.training.fp8_recipe = per_expert.training.fp8_recipe = Fp8Recipe::current;
    PassBuilder g(grouped, compute);
    PassBuilder p(per_expert, compute);
    CHECK(total(p.moe_layer_forward()).kernels - total(g.moe_layer_forward()).kernels ==
          Approx((2 + 2 * 4) * (El - 1) + 3));
    CHECK(total(p.moe_layer_backward()).kernels - total(g.moe_layer_backward()).kernels ==
          Approx((4 + 2 * 4) * (El - 1) + 3));
  }
}

TEST_CASE("A GPU holds E / ep experts of each MoE layer and reduces their gradients",
          "[workload][moe]") {
  const Scenario dense = [] {
    Scenario s = moe_scenario(8);
    s.model.moe.reset();
    s.parallelism.ep = 1;
    return s;
  }();
  const Scenario s = moe_scenario(8);
  const auto compute = clustersim::test::compute_model(s);
  const Workload wd = build_workload(dense, compute);
  const Workload wm = build_workload(s, compute);
  // Per layer: the dense FFN's 2 h f replaced by the router h E, the shared expert 2 h fs and
  // 16 / 8 = 2 experts of 2 h fe; 8 layers.
  const double per_layer = h * E + 2 * h * fs + (E / 8) * 2 * h * fe - 2 * h * f;
  CHECK(wm.stages[0].params - wd.stages[0].params == Approx(8 * per_layer).epsilon(1e-12));
  // Every MoE layer runs its 4 all-to-alls once per micro-batch.
  int a2a = 0;
  for (const auto& op : wm.stages[0].ops) {
    a2a += op.kind == OpKind::collective && wm.collectives[op.index].group == Group::ep;
  }
  CHECK(a2a == 8 * 4 * wm.micro_batches);
  // check's "EP exchanges" row: 4 exchanges of T k h 16-bit values per layer and micro-batch.
  const ExpertExchange x = expert_exchange(wm, 0);
  CHECK(x.calls == a2a);
  CHECK(x.bytes == Approx(a2a * T * k * h * 2));
}

TEST_CASE("Recompute modules add the MLA up-projection GEMMs to the backward and kernels only",
          "[workload][moe]") {
  // MLA on the small model: 8 heads, query latent 256, key/value latent 128, head widths 64 +
  // 32 (RoPE) and 64 for values.
  Scenario s = moe_scenario(8);
  MlaSpec l;
  l.q_lora_rank = 256;
  l.kv_lora_rank = 128;
  l.qk_nope_head_dim = 64;
  l.qk_rope_head_dim = 32;
  l.v_head_dim = 64;
  s.model.mla = l;
  const auto compute = clustersim::test::compute_model(s);
  const Scenario base = s;
  PassBuilder b(base, compute);
  const models::OpCost plain = total(b.moe_layer_backward());
  CHECK(b.module_recompute(true).time_s == 0);

  // The query up-projection (256 -> 8 x 96) and the key/value one (128 -> 8 x (64 + 64)) run
  // again: 2 T (256 x 768 + 128 x 1024) FLOPs.
  Scenario up = s;
  up.training.recompute_mla_up_proj = true;
  PassBuilder bu(up, compute);
  const double gemms = 2 * T * (256.0 * 768 + 128.0 * 1024);
  CHECK(total(bu.moe_layer_backward()).flops - plain.flops == Approx(gemms).epsilon(1e-9));
  CHECK(bu.module_recompute(true).flops == Approx(gemms).epsilon(1e-9));

  // The norms and the experts' SwiGLU are element-wise: time, no FLOPs.
  Scenario kernels = s;
  kernels.training.recompute_norms = true;
  kernels.training.recompute_moe_act = true;
  PassBuilder bk(kernels, compute);
  const models::OpCost more = total(bk.moe_layer_backward());
  CHECK(more.flops == Approx(plain.flops).epsilon(1e-12));
  CHECK(more.time_s > plain.time_s);
  // A dense layer has no experts' activation to recompute, only its norms.
  CHECK(bk.module_recompute(false).time_s < bk.module_recompute(true).time_s);
}

TEST_CASE("The mlp and shared_experts modules re-run their forward where their layer has them",
          "[workload][moe]") {
  // Megatron-Core's recompute_modules "mlp" checkpoints a dense layer's whole MLP (its norm, both
  // linears and their collectives) and not an MoE layer's. The small model's GeLU MLP: two GEMMs
  // of 2 T h f FLOPs each.
  Scenario s = moe_scenario(8);
  const auto compute = clustersim::test::compute_model(s);
  const Scenario base = s;
  PassBuilder b(base, compute);
  Scenario mlp = s;
  mlp.training.recompute_mlp = true;
  PassBuilder bm(mlp, compute);
  const double gemms = 2 * (2 * T * h * f);
  CHECK(total(bm.layer_backward()).flops - total(b.layer_backward()).flops ==
        Approx(gemms).epsilon(1e-9));
  CHECK(total(bm.moe_layer_backward()).flops ==
        Approx(total(b.moe_layer_backward()).flops).epsilon(1e-12));

  // With tensor parallelism (tp 2, sequence parallelism) the recomputed MLP gathers its input
  // and reduce-scatters its output again: two more TP collectives in a dense layer's backward.
  const Scenario tp = load(small_scenario(16, 8, 2, 1));
  Scenario tp_mlp = tp;
  tp_mlp.training.recompute_mlp = true;
  const auto tp_compute = clustersim::test::compute_model(tp);
  PassBuilder bt(tp, tp_compute);
  PassBuilder btm(tp_mlp, tp_compute);
  const auto tp_collectives = [](const PassBuilder& builder, const Segments& segs) {
    int n = 0;
    for (const auto& seg : segs)
      n += seg.is_collective && builder.collectives()[seg.collective].group == Group::tp;
    return n;
  };
  // "shared_experts" re-runs the shared expert of an MoE layer (GeLU, width fs: 2 GEMMs of
  // 2 T h fs FLOPs) and leaves a dense layer alone.
  Scenario shared = s;
  shared.training.recompute_shared_experts = true;
  PassBuilder bs(shared, compute);
  CHECK(total(bs.moe_layer_backward()).flops - total(b.moe_layer_backward()).flops ==
        Approx(2 * (2 * T * h * fs)).epsilon(1e-9));
  CHECK(total(bs.layer_backward()).flops == Approx(total(b.layer_backward()).flops).epsilon(1e-12));

  const Segments plain_backward = bt.layer_backward();
  const Segments mlp_backward = btm.layer_backward();
  CHECK(tp_collectives(btm, mlp_backward) == tp_collectives(bt, plain_backward) + 2);
}

TEST_CASE("Under PyTorch's async TP an MoE layer's input-gradient reduce-scatters run alone",
          "[workload][moe]") {
  // The MoE block's input feeds the router, the routed experts and the shared expert, and the
  // attention's feeds Q, K and V: each input gradient is a sum, so PyTorch's micro-pipelined TP
  // cannot fuse its reduce-scatter with one matmul (docs/tensor-parallel-overlap.md#torch);
  // userbuffers pipeline each with its input-gradient GEMM.
  auto reduce_scatter_overlaps = [](TpOverlapImplementation impl) {
    Scenario s = moe_scenario(1);
    s.parallelism.tp = 2;
    s.parallelism.dp = 32;
    s.parallelism.sequence_parallel = true;
    s.training.tp_comm_overlap = true;
    s.training.tp_comm_overlap_implementation = impl;
    const auto compute = clustersim::test::compute_model(s);
    PassBuilder b(s, compute);
    std::vector<double> overlaps;
    for (const Segment& seg : b.moe_layer_backward()) {
      if (!seg.is_collective) continue;
      const Collective& c = b.collectives().at(seg.collective);
      // The experts' own expert-TP reduction is never pipelined; the rest are input gradients.
      if (c.group == Group::tp && c.kind == CollKind::reduce_scatter &&
          c.label != "MoE expert-TP reduce-scatter") {
        overlaps.push_back(seg.overlap_s);
      }
    }
    return overlaps;
  };
  // The shared expert's and the attention's.
  const std::vector<double> ub = reduce_scatter_overlaps(TpOverlapImplementation::userbuffers);
  const std::vector<double> torch = reduce_scatter_overlaps(TpOverlapImplementation::torch);
  REQUIRE(ub.size() == 2);
  REQUIRE(torch.size() == 2);
  for (double o : ub) CHECK(o > 0);
  for (double o : torch) CHECK(o == 0);
}

TEST_CASE("The host waits for the token counts at the dispatch of an MoE forward, not after",
          "[workload][moe]") {
  for (const char* dispatcher : {"alltoall", "deepep"}) {
    Scenario s = moe_scenario(8);
    s.training.moe_dispatcher =
        std::string(dispatcher) == "deepep" ? MoeDispatcher::deepep : MoeDispatcher::alltoall;
    const auto compute = clustersim::test::compute_model(s);
    PassBuilder b(s, compute);
    const Segments fwd = b.moe_layer_forward();
    int syncs = 0;
    for (const auto& seg : fwd) {
      if (!seg.host_sync) continue;
      ++syncs;
      // The first exchange over the EP group: the dispatch.
      CHECK(seg.is_collective);
    }
    CHECK(syncs == 1);
    for (const auto& seg : b.moe_layer_backward()) CHECK_FALSE(seg.host_sync);
    for (const auto& seg : b.layer_forward()) CHECK_FALSE(seg.host_sync);
  }
}

namespace {

// The optimizer op's time less its one kernel gap: proportional to the bytes Adam moves.
double optimizer_time(const Workload& w, const models::ComputeCostModel& compute) {
  double t = -1;
  for (const auto& op : w.stages.at(0).ops) {
    if (op.kind != OpKind::compute || op.compute != ComputeKind::optimizer) continue;
    REQUIRE(t < 0);
    t = op.time_s - compute.kernel_gap_s();
  }
  REQUIRE(t > 0);
  return t;
}

}  // namespace

TEST_CASE(
    "The routed experts' gradients are reduced and sharded over the expert-data-parallel "
    "group",
    "[workload][moe]") {
  // 64 GPUs of data parallelism, ep 8: the expert-data-parallel group has 64 / 8 = 8 ranks.
  Scenario s = moe_scenario(8);
  s.parallelism.zero_stage = 1;
  REQUIRE(s.parallelism.expert_dp() == 8);
  const auto compute = clustersim::test::compute_model(s);
  const Workload w = build_workload(s, compute);
  const StageProgram& st = w.stages.at(0);
  // 8 layers of 16 / 8 = 2 local experts of 2 h fe (GeLU, no biases).
  const double experts = 8 * (E / 8) * 2 * h * fe;
  CHECK(st.expert_params == Approx(experts).epsilon(1e-12));
  double in_dp = 0, in_edp = 0;
  for (const auto& b : st.buckets) {
    (b.group == Group::expert_dp ? in_edp : in_dp) += b.params;
    if (b.group == Group::expert_dp) CHECK(b.calls.at(0).kind == CollKind::reduce_scatter);
  }
  CHECK(in_edp == Approx(experts).epsilon(1e-12));
  CHECK(in_dp == Approx(st.params - experts).epsilon(1e-12));
  // ZeRO-1: each bucket's parameters are gathered over the bucket's own group.
  REQUIRE(st.gathers.size() == st.buckets.size());
  for (std::size_t i = 0; i < st.gathers.size(); ++i) {
    CHECK(st.gathers[i].group == st.buckets[i].group);
    CHECK(st.gathers[i].params == st.buckets[i].params);
  }

  SECTION("Adam updates 1/64 of the rest and 1/8 of the experts") {
    Scenario dense = s;
    dense.model.moe.reset();
    dense.parallelism.ep = 1;
    const Workload wd = build_workload(dense, compute);
    CHECK(wd.stages.at(0).expert_params == 0);
    CHECK(optimizer_time(w, compute) / optimizer_time(wd, compute) ==
          Approx(((st.params - experts) / 64 + experts / 8) / (wd.stages.at(0).params / 64))
              .epsilon(1e-9));
  }
  SECTION("ep 64 leaves each GPU the only holder of its experts") {
    Scenario all = s;
    all.model.moe->num_experts = 64;
    all.parallelism.ep = 64;
    REQUIRE(all.parallelism.expert_dp() == 1);
    const Workload wa = build_workload(all, compute);
    double edp_params = 0;
    for (const auto& b : wa.stages.at(0).buckets) {
      if (b.group == Group::expert_dp) edp_params += b.params;
    }
    // 64 / 64: one expert of 2 h fe per layer and GPU.
    CHECK(edp_params == Approx(8 * 2 * h * fe).epsilon(1e-12));
    bool noted = false;
    for (const auto& n : wa.notes) noted = noted || n.find("group of 1 rank") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("HybridEP sends each token once to each GPU holding its experts, at measured rates",
          "[workload][moe]") {
  Scenario s = moe_scenario(8);
  s.training.moe_dispatcher = MoeDispatcher::hybridep;
  s.training.moe_comm_sms = 16;
  s.cluster.gpu.architecture = GpuArch::hopper;
  s.cluster.gpu.nvlink_Bps = 450e9;  // DGX H100's, as measured: 368.9 / 368.87 GB/s at 16 SMs
  const auto compute = clustersim::test::compute_model(s);
  PassBuilder b(s, compute);
  const Segments fwd = b.moe_layer_forward();
  const Segments bwd = b.moe_layer_backward();
  // 16 experts over 8 GPUs, 2 each, top-2: a GPU misses both with (14/16)(13/15).
  const double ranks = 8 * (1 - (14.0 / 16) * (13.0 / 15));
  std::vector<double> rates;
  for (const Segments* pass : {&fwd, &bwd}) {
    for (const auto& seg : *pass) {
      if (!seg.is_collective || b.collectives()[seg.collective].group != Group::ep) continue;
      const Collective& c = b.collectives()[seg.collective];
      CHECK(c.bytes == Approx(T * ranks * h * 2));
      CHECK(c.dtype == Dtype::bf16);
      rates.push_back(c.measured_Bps);
    }
  }
  // Forward: dispatch, combine; backward: combine's (towards the experts), dispatch's.
  CHECK(rates == std::vector<double>{368.9e9, 368.87e9, 368.9e9, 368.87e9});
}
