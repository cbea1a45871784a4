#include "workload/op_builder.hpp"

namespace clustersim::workload {

Op& OpBuilder::push(OpKind kind, const OpSite& at) {
  Op op;
  op.kind = kind;
  op.pass = at.pass;
  op.micro_batch = at.micro_batch;
  op.chunk = at.chunk;
  op.virtual_stage = at.virtual_stage;
  op.layer = at.layer;
  program_.ops.push_back(op);
  return program_.ops.back();
}

void OpBuilder::compute(ComputeKind kind, const models::OpCost& cost, const OpSite& at) {
  Op& op = push(OpKind::compute, at);
  op.compute = kind;
  op.time_s = cost.time_s;
  op.host_s = cost.host_s;
  op.flops = cost.flops;
  op.kernels = cost.kernels;
  program_.compute_s += op.time_s;
  program_.executed_flops += op.flops;
}

void OpBuilder::tp_collective(int collective, double overlap_s, const OpSite& at, bool beside) {
  Op& op = push(OpKind::collective, at);
  op.index = collective;
  op.overlap_s = overlap_s;
  op.beside = beside;
}

void OpBuilder::pass(const Segments& segments, ComputeKind kind, const OpSite& at) {
  for (const auto& seg : segments) {
    if (seg.is_collective) {
      tp_collective(seg.collective, seg.overlap_s, at, seg.beside);
    } else {
      compute(kind, seg.cost, at);
    }
  }
}

void OpBuilder::recv(double bytes, const OpSite& at) {
  push(OpKind::recv, at).bytes = bytes;
}

void OpBuilder::recv_post(PassKind direction) {
  push(OpKind::recv_post, OpSite{direction});
}

void OpBuilder::send(double bytes, const OpSite& at) {
  Op& op = push(OpKind::send, at);
  op.virtual_stage = at.virtual_stage + (at.pass == PassKind::forward ? 1 : -1);
  op.bytes = bytes;
}

void OpBuilder::grad_ready(int bucket, const OpSite& at) {
  push(OpKind::grad_ready, at).index = bucket;
}

void OpBuilder::grad_wait(const OpSite& at) {
  push(OpKind::grad_wait, at);
}

void OpBuilder::gather_issue(int gather, const OpSite& at) {
  push(OpKind::gather_issue, at).index = gather;
}

void OpBuilder::gather_wait(int gather, const OpSite& at) {
  push(OpKind::gather_wait, at).index = gather;
}

}  // namespace clustersim::workload
