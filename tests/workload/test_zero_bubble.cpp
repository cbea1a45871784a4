// The zero-bubble schedules ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR,
// section 3.1) and DualPipe (DeepSeek-V3 technical report, section 3.2.1): their pass orders,
// the split of a layer's backward into input-gradient (B) and weight-gradient (W) passes, and
// where the gradient send and the reductions sit. Expected values are hand calculations and the
// papers' closed forms.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>
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
  return {PassKind::backward, mb, 0, true};
}
PassSlot W(int mb) {
  return {PassKind::weight_grad, mb, 0};
}

// The step time of a schedule on p ranks of identical per-pass times with free communication,
// evaluated from the pass orders alone: a forward waits for the forward of its micro-batch on the
// previous virtual stage of its chain, a backward for the backward on the next one (at the end of
// the chain: its own forward, which precedes it in the order), a weight-gradient pass for its own
// backward (which precedes it). A backward takes t_b, plus t_w unless its weight gradient is
// deferred to a W pass. A paired forward and the backward after it wait for both inputs, run one
// after the other, and hand both outputs on at the end.
class ScheduleClock {
 public:
  ScheduleClock(PipelineSchedule schedule, int p, int m, double t_f, double t_b, double t_w)
      : chain_(StageChain::of(schedule, p, 1)), t_f_(t_f), t_b_(t_b), t_w_(t_w) {
    for (int s = 0; s < p; ++s) order_.push_back(pipeline_order(schedule, p, s, m, 1));
    next_.assign(static_cast<std::size_t>(p), 0);
    clock_.assign(static_cast<std::size_t>(p), 0.0);
  }

  double step_time() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < chain_.p; ++s) {
        while (run_next(s)) progress = true;
      }
    }
    for (int s = 0; s < chain_.p; ++s)
      REQUIRE(next_[static_cast<std::size_t>(s)] == order_[s].size());
    return *std::max_element(clock_.begin(), clock_.end());
  }

 private:
  using Key = std::tuple<int, int, int>;  // (kind, micro-batch, virtual stage)

  // Runs rank s's next pass (or pair) if its inputs are there.
  bool run_next(int s) {
    const auto su = static_cast<std::size_t>(s);
    const auto& order = order_[su];
    if (next_[su] >= order.size()) return false;
    const std::size_t n = order[next_[su]].paired ? 2 : 1;
    double start = clock_[su];
    for (std::size_t i = next_[su]; i < next_[su] + n; ++i) {
      const auto dep = input_of(s, order[i]);
      if (!dep) continue;
      const auto it = done_.find(*dep);
      if (it == done_.end()) return false;
      start = std::max(start, it->second);
    }
    double t = start;
    for (std::size_t i = next_[su]; i < next_[su] + n; ++i) t += duration(order[i]);
    for (std::size_t i = next_[su]; i < next_[su] + n; ++i) {
      const PassSlot& slot = order[i];
      done_[{static_cast<int>(slot.kind), slot.micro_batch, chain_.virtual_stage(s, slot.chunk)}] =
          t;
    }
    clock_[su] = t;
    next_[su] += n;
    return true;
  }

  std::optional<Key> input_of(int s, const PassSlot& slot) const {
    const int vs = chain_.virtual_stage(s, slot.chunk);
    if (slot.kind == PassKind::forward && !chain_.chain_start(vs))
      return Key{0, slot.micro_batch, vs - 1};
    if (slot.kind == PassKind::backward && !chain_.chain_end(vs))
      return Key{1, slot.micro_batch, vs + 1};
    return std::nullopt;
  }

  double duration(const PassSlot& slot) const {
    if (slot.kind == PassKind::forward) return t_f_;
    if (slot.kind == PassKind::weight_grad) return t_w_;
    return slot.weight_deferred ? t_b_ : t_b_ + t_w_;
  }

  const StageChain chain_;
  const double t_f_, t_b_, t_w_;
  std::vector<std::vector<PassSlot>> order_;
  std::vector<std::size_t> next_;
  std::vector<double> clock_;
  std::map<Key, double> done_;  // when each pass's output is handed on
};

double step_time(PipelineSchedule schedule, int p, int m, double t_f, double t_b, double t_w) {
  return ScheduleClock(schedule, p, m, t_f, t_b, t_w).step_time();
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
    const std::vector<Op> ops = prog.ops.to_vector();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == OpKind::send && op.pass == PassKind::backward) sent[op.micro_batch] = i;
      if (op.kind == OpKind::compute && op.pass == PassKind::weight_grad) {
        first_w.emplace(op.micro_batch, i);
        // (a pass of this small model ends with the host's dispatch, an op of no FLOPs)
        w_passes += op.compute == ComputeKind::backward && op.flops > 0;
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

TEST_CASE("DualPipe's chains: rank s holds stages s and p - 1 - s, the upward chain reversed") {
  const StageChain c = StageChain::of(PipelineSchedule::dualpipe, 4, 1);
  CHECK(c.chunks() == 2);
  CHECK(c.virtual_stages() == 8);
  CHECK(c.model_stages() == 4);
  // Rank 0: stage 0 going down, stage 3 going up (virtual stage 7, the upward chain's end).
  CHECK(c.virtual_stage(0, 0) == 0);
  CHECK(c.virtual_stage(0, 1) == 7);
  CHECK(c.model_stage(7) == 3);
  CHECK(c.chain_end(7));
  // The upward chain starts on rank 3 (virtual stage 4, model stage 0) and steps down by one.
  CHECK(c.rank_of(4) == 3);
  CHECK(c.chain_start(4));
  CHECK(c.rank_of(5) == 2);
  CHECK(c.rank_of(3) == 3);
  CHECK(c.chain_end(3));
  for (int vs = 0; vs < 8; ++vs) {
    const int r = c.rank_of(vs);
    CHECK(c.virtual_stage(r, vs < 4 ? 0 : 1) == vs);
  }
  // Other schedules: one chain, chunk c of rank s at c p + s.
  const StageChain v = StageChain::of(PipelineSchedule::interleaved, 4, 2);
  CHECK(v.virtual_stage(1, 1) == 5);
  CHECK(v.rank_of(5) == 1);
  CHECK(v.chain_end(7));
  CHECK_FALSE(v.chain_end(3));
}

TEST_CASE("DualPipe runs each micro-batch once per rank, F before B before W, p + 1 in flight") {
  const auto [p, m] = GENERATE(std::make_tuple(4, 8), std::make_tuple(4, 10),
                               std::make_tuple(8, 20), std::make_tuple(2, 4));
  for (int stage = 0; stage < p; ++stage) {
    std::map<std::pair<int, int>, int> done;  // (kind, micro-batch) -> times run
    std::vector<int> deferred;                // micro-batches owing a W, in order
    std::size_t next_w = 0;
    int in_flight = 0, peak = 0;  // forwarded, weight gradient not yet computed
    for (const auto& slot : pipeline_order(PipelineSchedule::dualpipe, p, stage, m, 1)) {
      const int mb = slot.micro_batch;
      // The first half goes down (chunk 0), the second half up (chunk 1).
      CHECK(slot.chunk == (mb < m / 2 ? 0 : 1));
      if (slot.kind == PassKind::backward) CHECK(done[{0, mb}] == 1);
      if (slot.kind == PassKind::backward && slot.weight_deferred) deferred.push_back(mb);
      if (slot.kind == PassKind::weight_grad) {
        REQUIRE(next_w < deferred.size());
        CHECK(mb == deferred[next_w++]);  // first in, first out
      }
      ++done[{static_cast<int>(slot.kind), mb}];
      in_flight += slot.kind == PassKind::forward ? 1 : 0;
      const bool completes = slot.kind == PassKind::weight_grad ||
                             (slot.kind == PassKind::backward && !slot.weight_deferred);
      in_flight -= completes ? 1 : 0;
      peak = std::max(peak, in_flight);
    }
    CHECK(next_w == deferred.size());
    for (int mb = 0; mb < m; ++mb) {
      CHECK(done[{0, mb}] == 1);
      CHECK(done[{1, mb}] == 1);
    }
    // DeepSeek-V3 report table 2: activations of PP + 1 micro-batches per device.
    CHECK(peak == p + 1);
  }
}

TEST_CASE("DualPipe's step time is m (F + B + W) + (p/2 - 1)(F&B + B - 3W) on uniform stages") {
  // DeepSeek-V3 report table 2, B the full backward (here t_b + t_w) and F&B the forward-backward
  // pair, whose kernels run one after the other: F&B = t_f + t_b + t_w. So the bubble is
  // (p/2 - 1)(t_f + 2 t_b - t_w). It holds while the forward is no longer than the input
  // gradient (t_f <= t_b), as in the report's figure 5 (F = 1 cell, full B = 2).
  // T = 1, 1, 1; p = 4, m = 8: 8 x 3 + 1 x 2 = 26 (ZB-H1 27, 1F1B 33).
  CHECK(step_time(PipelineSchedule::dualpipe, 4, 8, 1, 1, 1) == Approx(26));
  // p = 8, m = 20 (the report's figure 5): 60 + 3 x 2 = 66.
  CHECK(step_time(PipelineSchedule::dualpipe, 8, 20, 1, 1, 1) == Approx(66));
  // p = 6, m = 14: 42 + 2 x 2 = 46.
  CHECK(step_time(PipelineSchedule::dualpipe, 6, 14, 1, 1, 1) == Approx(46));
  // p = 16, m = 120: 360 + 7 x 2 = 374.
  CHECK(step_time(PipelineSchedule::dualpipe, 16, 120, 1, 1, 1) == Approx(374));
  // T_W = 0.5; p = 8, m = 20: 20 x 2.5 + 3 x (1 + 2 - 0.5) = 57.5.
  CHECK(step_time(PipelineSchedule::dualpipe, 8, 20, 1, 1, 0.5) == Approx(57.5));
  // T_B = 1.5; p = 4, m = 8: 8 x 3.5 + 1 x (1 + 3 - 1) = 31.
  CHECK(step_time(PipelineSchedule::dualpipe, 4, 8, 1, 1.5, 1) == Approx(31));
  // p = 2: no bubble term, m (F + B + W) = 4 x 3 = 12.
  CHECK(step_time(PipelineSchedule::dualpipe, 2, 4, 1, 1, 1) == Approx(12));
}
