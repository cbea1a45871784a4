// Gradient ops: grad_ready launches a bucket's reduction on its stage's stream (the embedding's
// tied gradients on the embedding stream) once every class-stage launched it; grad_wait blocks
// until every reduction the class-stage launched is done (data-parallel time).
#include <vector>

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
  forget_finished(me);
  me.outstanding.push_back({&stream, &inst});
  launch(stream, inst);
  return true;
}

// A bucket's reduction of one micro-batch is launched once by each class-stage that reduces it
// and awaited once by each: after the last wait nothing refers to it again, and the stream keeps
// only the reductions in flight.
void Replay::release(Stream& stream, Instance& inst) {
  if (++inst.released == stream.needed && inst.ready == stream.needed) {
    stream.instances.erase({inst.id, inst.micro_batch, inst.pass});
  }
}

// The reductions of `me` already done: grad_wait would pass them without waiting (Event::wait
// returns at once on a fired event), so they are released now, not at the end of the step.
void Replay::forget_finished(ClassStage& me) {
  std::erase_if(me.outstanding, [this](const std::pair<Stream*, Instance*>& o) {
    if (!o.second->done.fired()) return false;
    release(*o.first, *o.second);
    return true;
  });
}

bool Replay::on_grad_wait(ClassStage& me, const Op&) {
  const double t0 = sim_.now();
  for (const auto& [stream, in] : me.outstanding) {
    in->done.wait();
    if (aborted_) return false;
  }
  for (const auto& [stream, in] : me.outstanding) release(*stream, *in);
  me.outstanding.clear();
  note_wait(me, t0, sim_.now(), &TimeBreakdown::dp_s, "wait gradients", "dp");
  return true;
}

}  // namespace clustersim::step
