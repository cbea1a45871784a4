// Named factories for the ops of a stage program (workload/workload.hpp Op): each says what
// the op is and fills exactly the fields its kind uses; the position of an op in the step is
// one OpSite instead of positional arguments.
#pragma once

#include "models/compute_cost.hpp"
#include "workload/pass_builder.hpp"
#include "workload/workload.hpp"

namespace clustersim::workload {

// Where an op sits in the step: the pass it belongs to and, where it is tied to one, the
// micro-batch, model chunk, virtual stage and global layer (-1: not tied to one).
struct OpSite {
  PassKind pass = PassKind::forward;
  int micro_batch = -1;
  int chunk = -1;
  int virtual_stage = -1;
  int layer = -1;

  OpSite at_layer(int l) const {
    OpSite s = *this;
    s.layer = l;
    return s;
  }
};

// Appends ops to one stage's program and keeps its compute totals (compute_s, executed_flops)
// in step with them.
class OpBuilder {
 public:
  explicit OpBuilder(StageProgram& program) : program_(program) {}

  // Kernels busy the GPU for cost.time_s (healthy GPU) and execute cost.flops.
  void compute(ComputeKind kind, const models::OpCost& cost, const OpSite& at);
  // Blocking TP/CP collective `collective` (index into Workload::collectives); `overlap_s`:
  // healthy-GPU time of the GEMM it is pipelined with (tp_comm_overlap), 0 = none.
  // `beside`: the GEMM runs beside it as a whole (tp_async_backward) rather than pipelined.
  void tp_collective(int collective, double overlap_s, const OpSite& at, bool beside = false);
  // A costed pass: each kernel run becomes a compute op of `kind`, each collective a
  // tp_collective, in order.
  void pass(const Segments& segments, ComputeKind kind, const OpSite& at);
  // Waits for the pipeline message of `at`'s pass into `at.virtual_stage`: `bytes` per TP rank.
  void recv(double bytes, const OpSite& at);
  // Posts the receive of the next recv op in `direction` (forward: an activation, backward: an
  // input gradient) of this program ahead of it (overlap_p2p_comm): its transfer may start when
  // the sender has posted, and the recv op then only waits for it. Tied to no micro-batch.
  void recv_post(PassKind direction);
  // Hands the message of `at`'s pass to the virtual stage that consumes it: the next one for a
  // forward's activation, the previous one for a backward's input gradient. `bytes` per TP rank.
  void send(double bytes, const OpSite& at);
  // Gradient bucket `bucket` of this stage is complete: its reduction may start.
  void grad_ready(int bucket, const OpSite& at);
  // Waits until every reduction this stage started is complete.
  void grad_wait(const OpSite& at);
  // Starts ZeRO parameter all-gather `gather` of this stage; gather_wait waits for it.
  void gather_issue(int gather, const OpSite& at);
  void gather_wait(int gather, const OpSite& at);

 private:
  Op& push(OpKind kind, const OpSite& at);

  StageProgram& program_;
};

}  // namespace clustersim::workload
