// The replay's setup and the class-stage actors' op loop.
#include "step/replay.hpp"

#include <algorithm>

namespace clustersim::step {

using workload::CollKind;
using workload::Group;
using workload::OpKind;

nccl::CollectiveOp nccl_op(CollKind k) {
  switch (k) {
    case CollKind::all_reduce: return nccl::CollectiveOp::all_reduce;
    case CollKind::reduce_scatter: return nccl::CollectiveOp::reduce_scatter;
    case CollKind::all_gather: return nccl::CollectiveOp::all_gather;
    case CollKind::all_to_all: return nccl::CollectiveOp::all_to_all;
  }
  return nccl::CollectiveOp::all_reduce;
}

Replay::Replay(const PreparedStep& prepared, const StepOptions& options, sim::Simulation& sim)
    : s_(*prepared.scenario),
      opt_(options),
      w_(prepared.workload),
      sim_(sim),
      pl_(prepared.placement) {
  p_ = w_.pp;
  tp_ = w_.tp;
  cp_ = w_.cp;
  dp_ = w_.dp;
  build_classes();
  build_groups();
  build_streams();
  if (!opt_.free_communication) sm_count_ = s_.cluster.gpu.sm_count;
  cost_collectives();
  for (int st = 0; st < p_; ++st) sms_.emplace_back();
  cs_.resize(classes_.size() * static_cast<std::size_t>(p_));
  for (std::size_t k = 0; k < classes_.size(); ++k) {
    for (int st = 0; st < p_; ++st) {
      auto& c = cs(static_cast<int>(k), st);
      c.cls = static_cast<int>(k);
      c.stage = st;
    }
  }
}

void Replay::spawn_all() {
  for (std::size_t k = 0; k < classes_.size(); ++k) {
    for (int st = 0; st < p_; ++st) {
      const int gpu = gpu_of(0, 0, classes_[k].replicas.front(), st);
      const int cls = static_cast<int>(k);
      sim_.spawn(gpu, "class" + std::to_string(k) + "-stage" + std::to_string(st),
                 [this, cls, st] { run_class_stage(cls, st); });
    }
  }
}

nccl::CollectiveRequest Replay::tp_request(const workload::Collective& c, int d, int cpi,
                                           int st) const {
  nccl::CollectiveRequest req;
  req.op = nccl_op(c.kind);
  req.bytes = c.bytes;
  req.dtype = c.dtype;
  req.label = c.label;
  if (c.group == Group::cp) {
    for (int x = 0; x < cp_; ++x) req.gpus.push_back(gpu_of(0, x, d, st));
  } else if (workload::is_expert_group(c.group)) {
    return expert_request(c, rank_of(0, cpi, d, st));
  } else {
    for (int t = 0; t < tp_; ++t) req.gpus.push_back(gpu_of(t, cpi, d, st));
  }
  return req;
}

// The exchange of the EP group holding `rank`; its rail part (Group::ep_rail): the members on
// the rank's in-node index, one per node.
nccl::CollectiveRequest Replay::expert_request(const workload::Collective& c, int rank) const {
  nccl::CollectiveRequest req;
  req.op = nccl_op(c.kind);
  req.bytes = c.bytes;
  req.dtype = c.dtype;
  req.label = c.label;
  const int gpn = s_.cluster.gpus_per_node;
  const int local = pl_.gpu_of_rank[static_cast<std::size_t>(rank)] % gpn;
  for (int r :
       topologies::expert_group_of(pl_, rank, s_.parallelism.ep, s_.parallelism.expert_tp())) {
    const int gpu = pl_.gpu_of_rank[static_cast<std::size_t>(r)];
    if (c.group == Group::ep || gpu % gpn == local) req.gpus.push_back(gpu);
  }
  return req;
}

// TP/CP collectives: costed once each on an idle node (or zero with free communication).
void Replay::cost_collectives() {
  coll_time_.assign(w_.collectives.size(), 0.0);
  coll_ctas_.assign(w_.collectives.size(), 0);
  const auto& first = classes_.front();
  for (std::size_t i = 0; i < w_.collectives.size(); ++i) {
    const auto& c = w_.collectives[i];
    if (opt_.free_communication) continue;
    if (c.measured_Bps > 0) {  // timed at its measured rate, not simulated
      coll_time_[i] = c.bytes / c.measured_Bps;
      continue;
    }
    nccl::CollectiveRequest req = tp_request(c, first.replicas.front(), 0, 0);
    req.contention_free = true;
    coll_time_[i] = sim_.uncontended_time_s(req);
    // The SMs a GEMM beside a TP call loses: its channels (tp_async_backward). The
    // context-parallel ring's sends and receives take none here: the all-gather it is costed as
    // does not have their channels.
    if (sm_count_ > 0 && c.group == workload::Group::tp && req.gpus.size() > 1)
      coll_ctas_[i] = sim_.plan(req).channels;
    // NVLink bytes of TP traffic, which no flow carries when costed once: each GPU sends and
    // receives busbw-factor x size (nccl-tests PERFORMANCE.md), per execution.
    const double per_gpu =
        c.bytes * nccl::bus_bandwidth_factor(nccl_op(c.kind), static_cast<int>(req.gpus.size()));
    double executions = 0;
    for (const auto& prog : w_.stages) {
      for (const auto& op : prog.ops) {
        if (op.kind == OpKind::collective && op.index == static_cast<int>(i)) executions += 1;
      }
    }
    const double gpus_per_stage = static_cast<double>(dp_) * cp_ * tp_;
    // EP groups may span nodes: their bytes are not all NVLink, and are left out.
    if (req.gpus.size() > 1 && !workload::is_expert_group(c.group)) {
      tp_nvlink_bytes_ += 2 * per_gpu * executions * gpus_per_stage;
    }
  }
  // training.moe_comm_overlap: the fraction of each EP all-to-all left exposed, max(0, A - C)
  // / A per MoE layer (workload::MoeOverlap).
  const auto& ov = w_.moe_overlap;
  if (ov.on) {
    double a = 0;
    for (int i : ov.a2a) a += coll_time_[static_cast<std::size_t>(i)];
    ep_exposed_fraction_ = a > 0 ? std::max(0.0, a - ov.layer_compute_s) / a : 1.0;
  }
}

// One class-stage's program, op by op; the block of pending compute runs at the end.
void Replay::run_class_stage(int cls, int st) {
  ClassStage& me = cs(cls, st);
  me.op_index = 0;
  const auto& ops = w_.stages[static_cast<std::size_t>(st)].ops;
  if (s_.training.overlap_p2p_comm) {
    for (const Op& op : ops) {
      if (op.kind == OpKind::recv) me.recvs[ClassStage::direction(op)].push_back(op);
    }
  }
  for (const Op& op : ops) {
    if (aborted_) return;
    if (!handle(me, op)) return;
    ++me.op_index;
  }
  if (!flush(me)) return;
  me.end_s = sim_.now();
  me.finished = true;
}

// Compute (and, outside exact mode, TP/CP collectives costed once) joins the current block;
// any other op first runs the block, then goes to its handler.
bool Replay::handle(ClassStage& me, const Op& op) {
  if (op.kind == OpKind::compute || (op.kind == OpKind::collective && !opt_.exact)) {
    return on_compute(me, op);
  }
  if (!flush(me)) return false;
  switch (op.kind) {
    case OpKind::collective: return on_collective(me, op);
    case OpKind::send: return on_send(me, op);
    case OpKind::recv: return on_recv(me, op);
    case OpKind::recv_post: return on_recv_post(me, op);
    case OpKind::grad_ready: return on_grad_ready(me, op);
    case OpKind::grad_wait: return on_grad_wait(me, op);
    case OpKind::gather_issue: return on_gather_issue(me, op);
    case OpKind::gather_wait: return on_gather_wait(me, op);
    case OpKind::compute: break;
  }
  return true;
}

}  // namespace clustersim::step
