// Hangs: a collective across a down link (or a lost node) never completes; the replay watches
// the links on its path and declares the hang when NCCL would detect it (NCCL_IB_TIMEOUT and
// its retries, NcclSettings::ib_hang_detection_s), then ends the simulation.
#include <algorithm>

#include "step/replay.hpp"

namespace clustersim::step {

bool Replay::faults_can_hang() const {
  for (const auto& l : opt_.faults.links) {
    if (l.down) return true;
  }
  return !opt_.faults.lost_nodes.empty();
}

// A down link on the route of any (src, dst) pair, or -1.
int Replay::down_link_on(const std::vector<std::pair<int, int>>& pairs) const {
  const auto& g = sim_.graph();
  for (const auto& [a, b] : pairs) {
    if (a == b) continue;
    for (const auto& hop : g.route(a, b)) {
      if (sim_.platform().link_is_down(hop.link)) return hop.link;
    }
  }
  return -1;
}

std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& gpus) {
  std::vector<std::pair<int, int>> pairs;
  const std::size_t n = gpus.size();
  for (std::size_t i = 0; i < n && n > 1; ++i) {
    pairs.push_back({gpus[i], gpus[(i + 1) % n]});
    pairs.push_back({gpus[(i + 1) % n], gpus[i]});
  }
  return pairs;
}

std::string Replay::describe_link_cause(int link, int* node_out) const {
  const auto& g = sim_.graph();
  const std::string name = g.link(link).name;
  for (const auto& n : opt_.faults.lost_nodes) {
    if (name.rfind("node" + std::to_string(n.node) + "/", 0) == 0) {
      *node_out = n.node;
      return "node " + std::to_string(n.node) + " lost";
    }
  }
  *node_out = -1;
  return "link " + name + " down";
}

double Replay::down_since(int link) const {
  const std::string& name = sim_.graph().link(link).name;
  double since = 0;
  bool found = false;
  for (const auto& l : opt_.faults.links) {
    if (l.down && l.link == name && l.from_s <= sim_.now()) {
      since = found ? std::min(since, l.from_s) : l.from_s;
      found = true;
    }
  }
  for (const auto& n : opt_.faults.lost_nodes) {
    if (name.rfind("node" + std::to_string(n.node) + "/", 0) == 0 && n.at_s <= sim_.now()) {
      since = found ? std::min(since, n.at_s) : n.at_s;
      found = true;
    }
  }
  return since;
}

// Records the hang and ends the simulation (kills every other actor).
void Replay::declare_hang(HangReport h) {
  if (hang_) return;
  hang_ = std::move(h);
  aborted_ = true;
  sim_.kill_other_actors();
}

// Waits for every handle; with faults that can hang, watches for a down link on the path and
// declares a hang once NCCL would detect it. Returns false when the step hung.
bool Replay::wait_all(std::vector<sim::CollectiveHandle>& handles,
                      const std::vector<std::pair<int, int>>& pairs, double started,
                      const std::string& what, int stage) {
  if (!faults_can_hang()) {
    for (auto& h : handles) sim_.wait(h);
    return true;
  }
  const double detection = s_.comm.nccl.ib_hang_detection_s();
  for (auto& h : handles) {
    for (;;) {
      // Wake up now and then to look for a down link on the path.
      const double check = std::max(1e-3, 2 * h.result().plan.model_time_s);
      if (sim_.wait_for(h, check)) break;
      if (aborted_) return false;
      const int link = down_link_on(pairs);
      if (link < 0) continue;
      const double start = std::max(started, down_since(link));
      const double detect = start + detection;
      if (sim_.now() < detect) {
        if (sim_.wait_for(h, detect - sim_.now())) break;
      }
      if (down_link_on(pairs) < 0) continue;  // the link came back: NCCL's retries succeed
      HangReport hr;
      hr.cause = describe_link_cause(link, &hr.node);
      hr.link = hr.node >= 0 ? "" : sim_.graph().link(link).name;
      hr.collective = what;
      hr.stage = stage;
      hr.start_s = start;
      hr.detected_s = detect;
      declare_hang(std::move(hr));
      return false;
    }
  }
  return true;
}

// Lost node hosting ranks of this class-stage: the first whose loss precedes `until`.
std::optional<std::pair<int, double>> Replay::lost_before(const ClassInfo& ci, int st,
                                                          double until) const {
  const int gpn = s_.cluster.gpus_per_node;
  for (const auto& [node, at] : ci.lost) {
    if (at > until) continue;
    for (int d : ci.replicas) {
      for (int c = 0; c < cp_; ++c) {
        for (int t = 0; t < tp_; ++t) {
          if (gpu_of(t, c, d, st) / gpn == node) return std::make_pair(node, at);
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace clustersim::step
