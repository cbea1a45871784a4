// The zero-bubble schedule ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR,
// section 3.1): its pass order, the split of a layer's backward into input-gradient (B) and
// weight-gradient (W) passes, and where the gradient send and the reductions sit. Expected
// values are hand calculations and the paper's closed forms.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <tuple>
#include <vector>

#include "tests/workload/fixtures.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

using namespace clustersim;
using namespace clustersim::workload;
using clustersim::test::load;
using clustersim::test::small_scenario;

namespace {

PassSlot F(int mb) {
  return {PassKind::forward, mb, 0};
}
PassSlot B(int mb) {
  return {PassKind::backward, mb, 0};
}
PassSlot W(int mb) {
  return {PassKind::weight_grad, mb, 0};
}

// The step time of a schedule on p stages of identical per-pass times with free communication,
// evaluated from the pass orders alone: a forward waits for the previous stage's forward of its
// micro-batch, a backward for the next stage's backward (the last stage: its own forward), a
// weight-gradient pass for its own backward (it follows it in the order). Without a split
// backward, each backward slot takes t_b + t_w.
double step_time(PipelineSchedule schedule, int p, int m, double t_f, double t_b, double t_w) {
  const bool split = split_backward(schedule);
  std::vector<std::vector<PassSlot>> order;
  for (int s = 0; s < p; ++s) order.push_back(pipeline_order(schedule, p, s, m, 1));
  std::map<std::tuple<int, int, int>, double> end;  // (kind, micro-batch, stage)
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> clock(static_cast<std::size_t>(p), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const auto su = static_cast<std::size_t>(s);
      while (next[su] < order[su].size()) {
        const PassSlot& slot = order[su][next[su]];
        std::tuple<int, int, int> dep{-1, 0, 0};
        double took = t_f;
        if (slot.kind == PassKind::forward && s > 0) dep = {0, slot.micro_batch, s - 1};
        if (slot.kind == PassKind::backward) {
          dep = s < p - 1 ? std::make_tuple(1, slot.micro_batch, s + 1)
                          : std::make_tuple(0, slot.micro_batch, s);
          took = split ? t_b : t_b + t_w;
        }
        if (slot.kind == PassKind::weight_grad) took = t_w;
        double start = clock[su];
        if (std::get<0>(dep) >= 0) {
          const auto it = end.find(dep);
          if (it == end.end()) break;  // not ready yet: run the other stages
          start = std::max(start, it->second);
        }
        clock[su] = start + took;
        end[{static_cast<int>(slot.kind), slot.micro_batch, s}] = clock[su];
        ++next[su];
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) REQUIRE(next[static_cast<std::size_t>(s)] == order[s].size());
  return *std::max_element(clock.begin(), clock.end());
}

}  // namespace

TEST_CASE("ZB-H1 defers stage s's weight-gradient passes by s micro-batches") {
  // p = 4, m = 6. Stage 0: 1F1B's 3 warm-up forwards, then F B W (no deferral), cool-down B W.
  const auto s0 = pipeline_order(PipelineSchedule::zb_h1, 4, 0, 6, 1);
  const std::vector<PassSlot> want0 = {F(0), F(1), F(2), F(3), B(0), W(0), F(4), B(1), W(1),
                                       F(5), B(2), W(2), B(3), W(3), B(4), W(4), B(5), W(5)};
  CHECK(s0 == want0);
  // Stage 3 (last): no warm-up; W of micro-batch i after B of i + 3; the last 3 Ws at the end.
  const auto s3 = pipeline_order(PipelineSchedule::zb_h1, 4, 3, 6, 1);
  const std::vector<PassSlot> want3 = {F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), W(0),
                                       F(4), B(4), W(1), F(5), B(5), W(2), W(3), W(4), W(5)};
  CHECK(s3 == want3);
}

TEST_CASE("ZB-H1 runs F before B before W once each and holds at most p micro-batches") {
  const auto [p, m] = GENERATE(std::make_tuple(4, 8), std::make_tuple(4, 3), std::make_tuple(8, 16),
                               std::make_tuple(2, 5));
  for (int stage = 0; stage < p; ++stage) {
    std::map<std::pair<int, int>, int> done;  // (kind, micro-batch) -> times run
    int in_flight = 0, peak = 0;              // forwarded, weight gradient not yet computed
    for (const auto& slot : pipeline_order(PipelineSchedule::zb_h1, p, stage, m, 1)) {
      const int mb = slot.micro_batch;
      if (slot.kind == PassKind::backward) CHECK(done[{0, mb}] == 1);
      if (slot.kind == PassKind::weight_grad) CHECK(done[{1, mb}] == 1);
      ++done[{static_cast<int>(slot.kind), mb}];
      in_flight += slot.kind == PassKind::forward ? 1 : 0;
      in_flight -= slot.kind == PassKind::weight_grad ? 1 : 0;
      peak = std::max(peak, in_flight);
    }
    CHECK(done.size() == static_cast<std::size_t>(3 * m));
    for (const auto& [key, n] : done) CHECK(n == 1);
    // 1F1B's first stage holds min(p, m); ZB-H1 lets every stage hold as many, no more.
    CHECK(peak == std::min(p, m));
  }
}

TEST_CASE("ZB-H1's step time is m (F + B + W) + (p - 1)(F + B - W) on uniform stages") {
  // Qi et al. 2024 section 3.1: bubble (p - 1)(T_F + T_B - T_W) against 1F1B's
  // (p - 1)(T_F + T_B + T_W); m >= p and T_W <= T_F.
  // T = 1, 1, 1; p = 4, m = 8: 8 x 3 + 3 x 1 = 27 (bubble 3 / 27 = 1/9); 1F1B 24 + 3 x 3 = 33.
  CHECK(step_time(PipelineSchedule::zb_h1, 4, 8, 1, 1, 1) == Approx(27));
  CHECK(step_time(PipelineSchedule::one_f_one_b, 4, 8, 1, 1, 1) == Approx(33));
  // p = 8, m = 16: 48 + 7 = 55; 1F1B 48 + 21 = 69.
  CHECK(step_time(PipelineSchedule::zb_h1, 8, 16, 1, 1, 1) == Approx(55));
  CHECK(step_time(PipelineSchedule::one_f_one_b, 8, 16, 1, 1, 1) == Approx(69));
  // p = m = 4: 12 + 3 = 15.
  CHECK(step_time(PipelineSchedule::zb_h1, 4, 4, 1, 1, 1) == Approx(15));
  // T_F = 2, T_B = 1.5, T_W = 1; p = 4, m = 8: 8 x 4.5 + 3 x 2.5 = 43.5; 1F1B 36 + 3 x 4.5 = 49.5.
  CHECK(step_time(PipelineSchedule::zb_h1, 4, 8, 2, 1.5, 1) == Approx(43.5));
  CHECK(step_time(PipelineSchedule::one_f_one_b, 4, 8, 2, 1.5, 1) == Approx(49.5));
  // p = 2, m = 16, T_W = 0.5: 16 x 2.5 + 1 x 1.5 = 41.5.
  CHECK(step_time(PipelineSchedule::zb_h1, 2, 16, 1, 1, 0.5) == Approx(41.5));
}

TEST_CASE("A split backward does the forward's GEMM FLOPs in each of B and W") {
  // Qi et al. 2024 section 2 (table 1): per layer F = 24 b s h^2 + 4 b s^2 h, B = 24 b s h^2 +
  // 8 b s^2 h, W = 24 b s h^2: the input gradient and the weight gradient each repeat the
  // forward's GEMM FLOPs; the attention core's backward (here FlashAttention's 2.5x the forward)
  // belongs to B. Small model: h = 1024, f = 4096 (GeLU), T = 1024 tokens, tp = 2.
  nlohmann::json j = small_scenario(8, 4, 2, 1);
  j["training"]["recompute"] = "none";
  const Scenario s = load(j);
  const auto compute = test::compute_model(s);
  PassBuilder b(s, compute);
  const double gemm = 25165824.0 * 1024 / 2;  // 2 (4 h^2 + 2 h f) per token, over 2 ranks
  const double attention = 4.0 * 1024 * 1024 * 1024 / 2 / 2;  // 4 s h per token, causal, tp 2
  CHECK(total(b.layer_weight_grad()).flops == Approx(gemm));
  CHECK(total(b.layer_backward(BackwardPart::input_grad)).flops == Approx(gemm + 2.5 * attention));
  CHECK(total(b.layer_backward()).flops == Approx(2 * gemm + 2.5 * attention));
  // The LM head: logits T x (V / tp) x h, 2 T V h / tp FLOPs each for dgrad and wgrad.
  const double logits = 2.0 * 1024 * 32000 / 2 * 1024;
  CHECK(total(b.head_weight_grad()).flops == Approx(logits));
  CHECK(total(b.head_backward()).flops - total(b.head_backward(BackwardPart::input_grad)).flops ==
        Approx(logits));
}

TEST_CASE("ZB-H1 sends the gradient after B and readies the buckets after W") {
  nlohmann::json j = small_scenario(4, 1, 1, 4);
  j["parallelism"]["schedule"] = "zb-h1";
  j["training"]["global_batch"] = 8;
  const Scenario s = load(j);
  REQUIRE(s.training.overlap_grad_reduce);
  const Workload zb = build_workload(s, test::compute_model(s));
  j["parallelism"]["schedule"] = "1f1b";
  const Scenario one = load(j);
  const Workload base = build_workload(one, test::compute_model(one));
  for (std::size_t st = 0; st < zb.stages.size(); ++st) {
    const StageProgram& prog = zb.stages[st];
    std::map<int, std::size_t> sent, first_w;  // micro-batch -> op index
    int w_passes = 0;
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (op.kind == OpKind::send && op.pass == PassKind::backward) sent[op.micro_batch] = i;
      if (op.kind == OpKind::compute && op.pass == PassKind::weight_grad) {
        first_w.emplace(op.micro_batch, i);
        w_passes += op.compute == ComputeKind::backward;
      }
      if (op.kind == OpKind::grad_ready) CHECK(op.pass == PassKind::weight_grad);
    }
    // Stages after the first send each micro-batch's input gradient before its W starts.
    CHECK(first_w.size() == 8);
    CHECK(sent.size() == (st > 0 ? 8u : 0u));
    for (const auto& [mb, i] : sent) CHECK(i < first_w.at(mb));
    // Two layers per stage, 8 micro-batches: one W kernel run per layer and micro-batch.
    CHECK(w_passes == 2 * 8);
    // The same work as 1F1B, reordered: equal FLOPs and kernel time.
    CHECK(prog.executed_flops == Approx(base.stages[st].executed_flops));
    CHECK(prog.compute_s == Approx(base.stages[st].compute_s).epsilon(1e-9));
    CHECK(prog.buckets.size() == base.stages[st].buckets.size());
  }
}
