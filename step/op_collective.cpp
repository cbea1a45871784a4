// Collective ops in exact mode (StepOptions::exact): every replica's tensor-/context-parallel
// collectives as flows on the fabric, blocking the stage until all are done.
#include <algorithm>
#include <set>

#include "step/replay.hpp"

namespace clustersim::step {

// An EP group holds ranks of several replicas, so of several class-stages: each joins the
// exchange for the ranks it stands for (keyed by the op's place in the stage program and the
// group), and the exchange starts when every rank has joined.
void Replay::join_expert_exchange(const ClassStage& me, const Op& op,
                                  std::vector<sim::CollectiveHandle>& hs) {
  const auto& c = w_.collectives[static_cast<std::size_t>(op.index)];
  const std::string instance =
      "ep/" + std::to_string(me.stage) + "/" + std::to_string(me.op_index) + "/";
  const auto& mine = classes_[static_cast<std::size_t>(me.cls)].replicas;
  std::set<int> joined;  // ranks this class-stage has joined with
  for (int d : mine) {
    for (int x = 0; x < cp_; ++x) {
      for (int t = 0; t < tp_; ++t) {
        const int rank = rank_of(t, x, d, me.stage);
        if (joined.count(rank)) continue;
        const nccl::CollectiveRequest req = expert_request(c, rank);
        const std::vector<int> ranks =
            topologies::expert_group_of(pl_, rank, s_.parallelism.ep, s_.parallelism.expert_tp());
        const std::string key = instance + std::to_string(req.gpus.front());
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          const int gpu = pl_.gpu_of_rank[static_cast<std::size_t>(ranks[i])];
          const auto member = std::find(req.gpus.begin(), req.gpus.end(), gpu);
          if (member == req.gpus.end()) continue;  // the rail hop: other in-node indices
          const int r = ranks[i];
          if (!std::binary_search(mine.begin(), mine.end(), pl_.coords(r).dp)) continue;
          if (!joined.insert(r).second) continue;
          hs.push_back(sim_.join_collective(key, static_cast<int>(member - req.gpus.begin()), req));
        }
      }
    }
  }
}

bool Replay::on_collective(ClassStage& me, const Op& op) {
  const auto& c = w_.collectives[static_cast<std::size_t>(op.index)];
  const double t0 = sim_.now();
  std::vector<sim::CollectiveHandle> hs;
  std::vector<std::pair<int, int>> pairs;
  if (!opt_.free_communication && c.measured_Bps > 0) {
    sim_.sleep_for(c.bytes / c.measured_Bps);  // a measured rate (HybridEP), no flows
  } else if (!opt_.free_communication && workload::is_expert_group(c.group)) {
    join_expert_exchange(me, op, hs);
  } else if (!opt_.free_communication) {
    for (int d : classes_[static_cast<std::size_t>(me.cls)].replicas) {
      const int groups = c.group == workload::Group::cp ? 1 : cp_;
      for (int x = 0; x < groups; ++x) {
        nccl::CollectiveRequest req = tp_request(c, d, x, me.stage);
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
