// Compute ops (issue_comp): consecutive kernels of one pass, and the TP/CP collectives between
// them that are costed once (Simulation::uncontended_time_s), join one block; the block runs as
// a timed wait when the pass changes or a communication op comes. A slowed GPU stretches the
// kernels (stretch), not the costed collectives; a node lost during the block stops its TP
// group at its next collective.
#include <algorithm>

#include "step/replay.hpp"

namespace clustersim::step {

using workload::ComputeKind;
using workload::PassKind;

std::string pass_name(const workload::Op& op, int chunks) {
  if (op.micro_batch < 0) {
    return op.compute == ComputeKind::optimizer     ? "optimizer"
           : op.compute == ComputeKind::compression ? "1-bit compression"
                                                    : "step";
  }
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on the chained operator+.
  std::string n(op.pass == PassKind::forward ? "F" : op.pass == PassKind::backward ? "B" : "W");
  n += std::to_string(op.micro_batch);
  if (chunks > 1) {
    n += '.';
    n += std::to_string(op.chunk);
  }
  return n;
}

bool Replay::on_compute(ClassStage& me, const Op& op) {
  Block& blk = me.block;
  const std::string name = pass_name(op, w_.chain.chunks());
  if (!blk.empty() && name != blk.name) {
    if (!flush(me)) return false;
  }
  blk.name = name;
  if (op.kind == workload::OpKind::compute) {
    const bool opt = op.compute == ComputeKind::optimizer || op.compute == ComputeKind::compression;
    blk.parts.push_back({false, false, opt, op.time_s, op.host_s, -1, op.flops, false, op.kernels});
  } else {
    const double comm = coll_time_[static_cast<std::size_t>(op.index)];
    if (workload::is_expert_group(w_.collectives[static_cast<std::size_t>(op.index)].group)) {
      blk.parts.push_back({true, true, false, comm * ep_exposed_fraction_, 0, op.index, 0});
    } else if (op.beside && op.overlap_s > 0) {
      // The collective's kernel leaves the GEMM beside it the other SMs (docs/sm-contention.md).
      const double taken = 1 - sm_share(coll_ctas_[static_cast<std::size_t>(op.index)], sm_count_);
      const workload::BesideGemm pair = workload::beside_gemm(comm, op.overlap_s, taken);
      if (pair.gemm_slowdown_s > 0)
        blk.parts.push_back({false, false, false, pair.gemm_slowdown_s, 0, -1, 0, true});
      blk.parts.push_back({true, false, false, pair.exposed_s, 0, op.index, 0});
    } else {
      const double exposed =
          op.overlap_s <= 0 ? comm : workload::exposed_tp_comm_s(comm, op.overlap_s, tp_);
      blk.parts.push_back({true, false, false, exposed, 0, op.index, 0});
    }
  }
  return true;
}

bool Replay::flush(ClassStage& me) {
  Block& blk = me.block;
  if (blk.empty()) return true;
  const ClassInfo& ci = classes_[static_cast<std::size_t>(me.cls)];
  const double start = sim_.now();
  std::vector<double> ends;  // of each part
  double t = lay_out(me, start, ends);
  const bool has_tp =
      std::any_of(blk.parts.begin(), blk.parts.end(), [](const auto& p) { return p.tp; });
  // A lost node stops its TP group at its next collective.
  if (has_tp && !ci.lost.empty()) {
    if (const auto lost = lost_before(ci, me.stage, t)) {
      const double at = std::max(start, lost->second);
      sim_.sleep_until(at);
      HangReport hr;
      hr.cause = "node " + std::to_string(lost->first) + " lost";
      hr.node = lost->first;
      hr.collective =
          "tensor-parallel collective, stage " + std::to_string(me.stage) + " (" + blk.name + ")";
      hr.stage = me.stage;
      hr.start_s = at;
      hr.detected_s = at + s_.comm.nccl.ib_hang_detection_s();
      declare_hang(std::move(hr));
      return false;
    }
  }
  if (sm_count_ > 0) {
    // An NCCL kernel starting or ending on the stage's streams changes the SMs left to the
    // block's kernels: the block's end is laid out again at each change.
    auto& changed = sms_[static_cast<std::size_t>(me.stage)].changed();
    while (changed.wait_until(t)) t = std::max(sim_.now(), lay_out(me, start, ends));
  } else {
    sim_.sleep_until(t);
  }
  std::vector<TraceSlice> inside;  // the block's kernels and collectives, for the trace
  account(me, start, ends, inside);
  if (opt_.record_trace && t > start) {
    // The block, then what it is made of: the viewer nests them (same track, inside its span).
    double flops = 0;
    for (const auto& part : blk.parts) flops += part.flops;
    trace_.push_back({me.cls,
                      me.stage,
                      0,
                      start,
                      t,
                      blk.name,
                      blk.parts.size() == 1 && blk.parts[0].optimizer ? "optimizer" : "compute",
                      {{"FLOPs", flops}}});
    if (inside.size() > 1) trace_.insert(trace_.end(), inside.begin(), inside.end());
  }
  blk.parts.clear();
  return true;
}

double Replay::on_gpu(double t, const Block::Part& part, const std::vector<Slowdown>& slow,
                      const SmLedger* sms) const {
  // The kernels first, stretched by a slowed GPU and by the SMs NCCL holds; the host's part
  // after them at its own speed.
  return stretch(t, part.seconds - part.host_s, slow, sms, sm_count_) + part.host_s;
}

double Replay::lay_out(const ClassStage& me, double start, std::vector<double>& ends) const {
  const ClassInfo& ci = classes_[static_cast<std::size_t>(me.cls)];
  const auto& slow = ci.slow[static_cast<std::size_t>(me.stage)];
  const SmLedger* sms = sm_count_ > 0 ? &sms_[static_cast<std::size_t>(me.stage)] : nullptr;
  ends.clear();
  double t = start;
  for (const auto& part : me.block.parts) {
    t = part.tp ? t + part.seconds : on_gpu(t, part, slow, sms);
    ends.push_back(t);
  }
  return t;
}

void Replay::account(ClassStage& me, double start, const std::vector<double>& ends,
                     std::vector<TraceSlice>& inside) {
  const auto& slow =
      classes_[static_cast<std::size_t>(me.cls)].slow[static_cast<std::size_t>(me.stage)];
  double from = start;
  for (std::size_t i = 0; i < me.block.parts.size(); ++i) {
    const Block::Part& part = me.block.parts[i];
    const double to = ends[i];
    if (part.tp) {
      (part.ep ? me.b.ep_s : me.b.tp_s) += part.seconds;
    } else {
      (part.optimizer ? me.b.optimizer_s : me.b.compute_s) += to - from;
      // The kernels' time at the GPU's speed alone: the rest is the SMs NCCL held.
      if (sm_count_ > 0 && !part.optimizer)
        me.b.nccl_sm_s += to - on_gpu(from, part, slow, nullptr);
      if (part.nccl_sms) me.b.nccl_sm_s += part.seconds;
      if (!part.optimizer) me.b.host_s += part.host_s;
      me.b.kernels += part.kernels;
    }
    if (opt_.record_trace) trace_part(me, part, from, to, inside);
    from = to;
  }
}

void Replay::trace_part(const ClassStage& me, const Block::Part& part, double from, double to,
                        std::vector<TraceSlice>& inside) const {
  if (to <= from) return;
  if (!part.tp) {
    // Consecutive kernels of one kind are one slice: the trace shows where communication
    // interrupts them.
    const char* name = part.optimizer ? "optimizer" : "kernels";
    if (!inside.empty() && inside.back().name == name && inside.back().end_s == from) {
      inside.back().end_s = to;
      inside.back().args["FLOPs"] = inside.back().args["FLOPs"].get<double>() + part.flops;
      return;
    }
    inside.push_back({me.cls,
                      me.stage,
                      0,
                      from,
                      to,
                      name,
                      part.optimizer ? "optimizer" : "compute",
                      {{"FLOPs", part.flops}}});
    return;
  }
  const workload::Collective& c = w_.collectives[static_cast<std::size_t>(part.collective)];
  const std::string group = workload::to_string(c.group);
  inside.push_back({me.cls,
                    me.stage,
                    0,
                    from,
                    to,
                    group + " " + workload::to_string(c.kind),
                    workload::is_expert_group(c.group) ? "ep"
                    : group == "cp"                    ? "cp"
                                                       : "tp",
                    {{"bytes", c.bytes}, {"group", group}, {"collective", c.label}}});
}

void Replay::note_wait(ClassStage& me, double from, double to, double TimeBreakdown::*field,
                       const std::string& name, const char* cat) {
  if (to <= from) return;
  me.b.*field += to - from;
  if (opt_.record_trace) trace_.push_back({me.cls, me.stage, 0, from, to, name, cat});
}

}  // namespace clustersim::step
