// ZeRO parameter gathers: gather_issue launches a gather on its stage's gather stream (the
// prefetch), gather_wait blocks until that gather is done (data-parallel time).
#include "step/replay.hpp"

namespace clustersim::step {

bool Replay::on_gather_issue(ClassStage& me, const Op& op) {
  const auto& g =
      w_.stages[static_cast<std::size_t>(me.stage)].gathers[static_cast<std::size_t>(op.index)];
  Stream& stream = gather_[static_cast<std::size_t>(me.stage)];
  Instance& inst = instance(stream, op.index, op.micro_batch, static_cast<int>(op.pass), {g.call},
                            g.group, g.label);
  launch(stream, inst);
  return true;
}

bool Replay::on_gather_wait(ClassStage& me, const Op& op) {
  const auto& g =
      w_.stages[static_cast<std::size_t>(me.stage)].gathers[static_cast<std::size_t>(op.index)];
  Instance& inst = instance(gather_[static_cast<std::size_t>(me.stage)], op.index, op.micro_batch,
                            static_cast<int>(op.pass), {g.call}, g.group, g.label);
  const double t0 = sim_.now();
  inst.done.wait();
  if (aborted_) return false;
  note_wait(me, t0, sim_.now(), &TimeBreakdown::dp_s, "wait " + g.label, "dp");
  return true;
}

}  // namespace clustersim::step
