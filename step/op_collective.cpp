// Collective ops in exact mode (StepOptions::exact): every replica's tensor-/context-parallel
// collectives as flows on the fabric, blocking the stage until all are done.
#include <set>

#include "step/replay.hpp"

namespace clustersim::step {

bool Replay::on_collective(ClassStage& me, const Op& op) {
  const auto& c = w_.collectives[static_cast<std::size_t>(op.index)];
  const double t0 = sim_.now();
  std::vector<sim::CollectiveHandle> hs;
  std::vector<std::pair<int, int>> pairs;
  if (!opt_.free_communication) {
    std::set<std::vector<int>> started;  // EP groups hold several replicas: start each once
    for (int d : classes_[static_cast<std::size_t>(me.cls)].replicas) {
      const int groups = c.group == workload::Group::cp ? 1 : cp_;
      for (int x = 0; x < groups; ++x) {
        nccl::CollectiveRequest req = tp_request(c, d, x, me.stage);
        if (workload::is_expert_group(c.group) && !started.insert(req.gpus).second) continue;
        hs.push_back(sim_.start_collective(req));
        if (faults_can_hang()) {
          const auto rp = ring_pairs(req.gpus);
          pairs.insert(pairs.end(), rp.begin(), rp.end());
        }
      }
    }
  }
  if (!wait_all(hs, pairs, t0, c.label, me.stage)) return false;
  (workload::is_expert_group(c.group) ? me.b.ep_s : me.b.tp_s) += sim_.now() - t0;
  return true;
}

}  // namespace clustersim::step
