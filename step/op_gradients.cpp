// Gradient ops: grad_ready launches a bucket's reduction on its stage's stream (the embedding's
// tied gradients on the embedding stream) once every class-stage launched it; grad_wait blocks
// until every reduction the class-stage launched is done (data-parallel time).
#include "step/replay.hpp"

namespace clustersim::step {

using workload::Group;

bool Replay::on_grad_ready(ClassStage& me, const Op& op) {
  const auto& bkt =
      w_.stages[static_cast<std::size_t>(me.stage)].buckets[static_cast<std::size_t>(op.index)];
  Stream& stream =
      bkt.group == Group::embedding ? embedding_ : reduce_[static_cast<std::size_t>(me.stage)];
  const int id = bkt.group == Group::embedding ? 0 : op.index;
  Instance& inst =
      instance(stream, id, op.micro_batch, 0, bkt.calls, bkt.group, bkt.label, bkt.stream_work_s);
  me.outstanding.push_back(&inst);
  launch(stream, inst);
  return true;
}

bool Replay::on_grad_wait(ClassStage& me, const Op&) {
  const double t0 = sim_.now();
  for (Instance* in : me.outstanding) {
    in->done.wait();
    if (aborted_) return false;
  }
  me.outstanding.clear();
  note_wait(me, t0, sim_.now(), &TimeBreakdown::dp_s, "wait gradients", "dp");
  return true;
}

}  // namespace clustersim::step
