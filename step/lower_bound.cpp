#include "step/lower_bound.hpp"

#include <algorithm>
#include <vector>

#include "models/compute_cost.hpp"

namespace clustersim::step {

namespace {

using workload::Op;
using workload::OpKind;
using workload::PassKind;

// What one pipeline rank's program contributes to the chains (lower_bound.hpp).
struct RankTerms {
  double compute_s = 0;           // C
  bool starts_at_recv = false;    // no compute before the first recv
  bool head_ok = false;           // first recv and first send are the first micro-batch's forward
  double head_s = 0;              // F: compute between the first recv (or the start) and first send
  bool tail_send = false;         // the last micro-batch's input-gradient send found (s > 0)
  bool tail_ok = false;           // its gradient recv found, and the send after it (s > 0)
  double before_tail_send_s = 0;  // P: compute before the gradient send
  double tail_s = 0;              // A: compute after the gradient recv, up to the send (or the end)
};

bool is_op(const Op& op, OpKind kind, PassKind pass, int micro_batch, int virtual_stage) {
  return op.kind == kind && op.pass == pass && op.micro_batch == micro_batch &&
         op.virtual_stage == virtual_stage;
}

RankTerms rank_terms(const workload::StageProgram& program, int s, int m) {
  RankTerms t;
  bool seen_recv = false, seen_send = false;  // first recv, first send
  bool in_tail = false, tail_sent = false;    // gradient recv seen, gradient send seen
  bool sent_after_recv = false;
  bool recv_first_ok = false, send_first_ok = false;
  bool compute_before_recv = false;
  for (const Op& op : program.ops) {
    if (op.kind == OpKind::compute) {
      t.compute_s += op.time_s;
      if (!seen_recv) compute_before_recv = true;
      if ((seen_recv || s == 0) && !seen_send) t.head_s += op.time_s;
      if (!tail_sent) t.before_tail_send_s += op.time_s;
      if (in_tail && !tail_sent) t.tail_s += op.time_s;
    } else if (op.kind == OpKind::recv) {
      if (!seen_recv) recv_first_ok = is_op(op, OpKind::recv, PassKind::forward, 0, s);
      seen_recv = true;
      if (is_op(op, OpKind::recv, PassKind::backward, m - 1, s)) in_tail = true;
    } else if (op.kind == OpKind::send) {
      if (!seen_send) send_first_ok = is_op(op, OpKind::send, PassKind::forward, 0, s + 1);
      seen_send = true;
      if (!tail_sent && is_op(op, OpKind::send, PassKind::backward, m - 1, s - 1)) {
        tail_sent = true;
        sent_after_recv = in_tail;
      }
    }
  }
  t.starts_at_recv = s == 0 || (seen_recv && !compute_before_recv);
  t.head_ok = (s == 0 || recv_first_ok) && send_first_ok;
  // Rank 0 sends no gradient: its tail runs to the end of its program.
  t.tail_send = s > 0 && tail_sent;
  t.tail_ok = in_tail && (s == 0 || sent_after_recv);
  return t;
}

}  // namespace

StepBound step_time_lower_bound(const workload::Workload& w, PipelineSchedule schedule) {
  const int p = static_cast<int>(w.stages.size());
  std::vector<RankTerms> terms;
  terms.reserve(w.stages.size());
  for (int s = 0; s < p; ++s) {
    terms.push_back(rank_terms(w.stages[static_cast<std::size_t>(s)], s, w.micro_batches));
  }
  const bool chains = schedule != PipelineSchedule::dualpipe && p > 1;
  StepBound best;
  double head = 0, tail = 0;  // H_s and A_0 + ... + A_{s-1}
  bool head_valid = chains, tail_valid = chains;
  for (int s = 0; s < p; ++s) {
    const RankTerms& t = terms[static_cast<std::size_t>(s)];
    double bound = t.compute_s;
    double bubble = 0;
    if (head_valid && t.starts_at_recv) {
      bubble = head;
      if (tail_valid && t.tail_send) {
        bubble = std::max(bubble, head + t.before_tail_send_s + tail - t.compute_s);
      }
      bound += bubble;
    }
    if (bound > best.step_time_s) best = {bound, t.compute_s, bubble, s};
    head_valid = head_valid && t.head_ok;
    head += t.head_s;
    tail_valid = tail_valid && t.tail_ok;
    tail += t.tail_s;
  }
  return best;
}

StepBound step_time_lower_bound(const Scenario& scenario, const StepCalibrations& calibrations) {
  if (scenario.comm.compression.kind != Compression::none) return {};
  const models::ComputeCostModel compute(scenario.cluster.gpu, calibrations.compute);
  return step_time_lower_bound(workload::build_workload(scenario, compute),
                               scenario.parallelism.schedule);
}

}  // namespace clustersim::step
