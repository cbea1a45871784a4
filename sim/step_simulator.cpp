#include "sim/step_simulator.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <stdexcept>
#include <tuple>

#include "core/errors.hpp"
#include "models/compute_cost.hpp"
#include "sim/isolated.hpp"
#include "sim/simulation.hpp"
#include "sim/step_report.hpp"
#include "topologies/placement.hpp"
#include "validation/calibration.hpp"
#include "workload/workload.hpp"

namespace clustersim::sim {

double TimeBreakdown::total() const {
  return compute_s + tp_s + pp_s + dp_s + bubble_s + optimizer_s + idle_s;
}

namespace {

namespace s4u = simgrid::s4u;
using nccl::bus_bandwidth_factor;
using nccl::CollectiveRequest;
using nccl::NcclCollective;
using workload::CollKind;
using workload::ComputeKind;
using workload::Group;
using workload::Op;
using workload::OpKind;
using workload::PassKind;
using workload::Workload;

// A one-shot event that actors can wait on: each waiter blocks on a semaphore of its own that
// fire() releases (actors are coroutines in one thread: no race between the check and the wait).
class Event {
 public:
  bool fired() const { return fired_; }
  double at() const { return at_; }
  void fire(double now) {
    if (fired_) return;
    fired_ = true;
    at_ = now;
    std::vector<s4u::SemaphorePtr> waiters;
    waiters.swap(waiters_);
    for (auto& w : waiters) w->release();
  }
  void wait() {
    if (fired_) return;
    s4u::SemaphorePtr sem = s4u::Semaphore::create(0);
    waiters_.push_back(sem);
    sem->acquire();
  }

 private:
  bool fired_ = false;
  double at_ = 0;
  std::vector<s4u::SemaphorePtr> waiters_;
};

NcclCollective nccl_op(CollKind k) {
  switch (k) {
    case CollKind::all_reduce: return NcclCollective::all_reduce;
    case CollKind::reduce_scatter: return NcclCollective::reduce_scatter;
    case CollKind::all_gather: return NcclCollective::all_gather;
    case CollKind::all_to_all: return NcclCollective::all_to_all;
  }
  return NcclCollective::all_reduce;
}

struct Slowdown {
  double factor = 1;
  double from_s = 0;
};

// Work `w` (seconds at nominal speed) started at `t` on a group whose speed at any time is the
// smallest factor of the slowdowns active then. Returns the finish time.
double stretch(double t, double w, const std::vector<Slowdown>& slow) {
  if (slow.empty() || w <= 0) return t + w;
  double now = t;
  double left = w;
  while (left > 0) {
    double speed = 1;
    double next_change = std::numeric_limits<double>::infinity();
    for (const auto& s : slow) {
      if (s.from_s <= now) {
        speed = std::min(speed, s.factor);
      } else {
        next_change = std::min(next_change, s.from_s);
      }
    }
    const double can = (next_change - now) * speed;
    if (can >= left) return now + left / speed;
    left -= can;
    now = next_change;
  }
  return now;
}

// A collective instance on a stage's stream: a gradient bucket of one micro-batch, or a
// parameter gather of one (micro-batch, pass).
struct Instance {
  int id = 0;
  int micro_batch = -1;
  int pass = 0;
  int ready = 0;  // classes that launched it
  bool queued = false;
  std::vector<workload::CommCall> calls;
  Group group = Group::dp;
  std::string label;
  double bytes = 0;
  double stream_work_s = 0;  // device work on the stream besides the calls
  Event done;
};

struct Stream {
  std::string name;  // "reduce", "gather", "embedding"
  int stage = 0;
  bool can_merge = true;
  double merge_cap_bytes = 0;
  int needed = 1;  // launches (class-stages) before an instance can start
  bool busy = false;
  std::map<std::tuple<int, int, int>, std::unique_ptr<Instance>> instances;
  std::deque<Instance*> queue;
};

// A pipeline message of one replica class.
struct Message {
  bool sender_posted = false;
  bool receiver_posted = false;
  double sender_t = 0;
  double receiver_t = 0;
  bool started = false;
  Event started_event;
  std::vector<CollectiveHandle> handles;
  std::vector<std::pair<int, int>> pairs;  // (src gpu, dst gpu)
  int src_stage = 0;
  std::string label;
};

struct ClassInfo {
  std::vector<int> replicas;                 // data-parallel indices
  std::vector<std::vector<Slowdown>> slow;   // per stage
  std::vector<double> slowest_speed;         // per stage
  std::vector<std::pair<int, double>> lost;  // (node, at_s) of lost nodes hosting its ranks
};

struct ClassStage {
  int cls = 0;
  int stage = 0;
  TimeBreakdown b;
  double end_s = 0;
  bool finished = false;
  std::vector<Instance*> outstanding;  // reductions launched, not yet awaited
};

class StepRun {
 public:
  StepRun(const Scenario& s, const StepOptions& opt, const Workload& w, Simulation& sim)
      : s_(s), opt_(opt), w_(w), sim_(sim), pl_(topologies::place_ranks(s.parallelism, s.gpus)) {
    p_ = w.pp;
    tp_ = w.tp;
    cp_ = w.cp;
    dp_ = w.dp;
    build_classes();
    build_groups();
    build_streams();
    cost_collectives();
    cs_.resize(classes_.size() * static_cast<std::size_t>(p_));
    for (std::size_t k = 0; k < classes_.size(); ++k) {
      for (int st = 0; st < p_; ++st) {
        auto& c = cs(static_cast<int>(k), st);
        c.cls = static_cast<int>(k);
        c.stage = st;
      }
    }
  }

  void spawn_all() {
    for (std::size_t k = 0; k < classes_.size(); ++k) {
      for (int st = 0; st < p_; ++st) {
        const int gpu = gpu_of(0, 0, classes_[k].replicas.front(), st);
        const int cls = static_cast<int>(k);
        sim_.spawn(gpu, "class" + std::to_string(k) + "-stage" + std::to_string(st),
                   [this, cls, st] { run_class_stage(cls, st); });
      }
    }
  }

  const std::vector<ClassInfo>& classes() const { return classes_; }
  std::vector<ClassStage>& class_stages() { return cs_; }
  const std::optional<HangReport>& hang() const { return hang_; }
  std::vector<TraceSlice>& trace() { return trace_; }
  double tp_nvlink_bytes() const { return tp_nvlink_bytes_; }
  // Rails of the data-parallel groups when only the first rail's groups are simulated.
  const std::vector<int>& symmetric_rails() const { return rails_; }
  // Pipeline transfers simulated on the first of symmetric_rails() only (shortcut 5).
  bool pipeline_on_one_rail() const { return pp_one_rail_; }
  double unsimulated_bytes(topologies::LinkClass c) const {
    return unsimulated_bytes_[static_cast<std::size_t>(c)];
  }

 private:
  // ---- Setup -------------------------------------------------------------------------------
  int rank_of(int t, int c, int d, int st) const { return pl_.rank_of({t, c, d, st}); }
  int gpu_of(int t, int c, int d, int st) const {
    return pl_.gpu_of_rank[static_cast<std::size_t>(rank_of(t, c, d, st))];
  }
  ClassStage& cs(int cls, int st) {
    return cs_[static_cast<std::size_t>(cls) * static_cast<std::size_t>(p_) +
               static_cast<std::size_t>(st)];
  }

  void build_classes() {
    // Replicas touched by a fault get a class of their own; all others share class 0.
    std::map<int, std::vector<std::pair<int, Slowdown>>> slow_by_replica;  // d -> (stage, slow)
    for (const auto& g : opt_.faults.slow_gpus) {
      if (g.rank < 0 || g.rank >= pl_.num_ranks()) {
        throw ConfigError(s_.file, "/faults",
                          "slowed GPU rank " + std::to_string(g.rank) + " is outside 0.." +
                              std::to_string(pl_.num_ranks() - 1));
      }
      if (!(g.speed_factor > 0 && g.speed_factor <= 1)) {
        throw ConfigError(s_.file, "/faults",
                          "rank " + std::to_string(g.rank) + " speed factor " +
                              std::to_string(g.speed_factor) + " is outside (0, 1]");
      }
      const auto c = pl_.coords(g.rank);
      slow_by_replica[c.dp].push_back({c.pp, Slowdown{g.speed_factor, g.from_s}});
    }
    std::map<int, std::vector<std::pair<int, double>>> lost_by_replica;
    const int gpn = s_.cluster.gpus_per_node;
    for (const auto& n : opt_.faults.lost_nodes) {
      std::set<int> seen;
      for (int r = 0; r < pl_.num_ranks(); ++r) {
        if (pl_.gpu_of_rank[static_cast<std::size_t>(r)] / gpn != n.node) continue;
        const int d = pl_.coords(r).dp;
        if (seen.insert(d).second) lost_by_replica[d].push_back({n.node, n.at_s});
      }
    }
    std::set<int> special;
    for (const auto& [d, v] : slow_by_replica) special.insert(d);
    for (const auto& [d, v] : lost_by_replica) special.insert(d);
    auto make = [&](std::vector<int> replicas) {
      ClassInfo ci;
      ci.replicas = std::move(replicas);
      ci.slow.assign(static_cast<std::size_t>(p_), {});
      ci.slowest_speed.assign(static_cast<std::size_t>(p_), 1.0);
      for (int d : ci.replicas) {
        if (const auto it = slow_by_replica.find(d); it != slow_by_replica.end()) {
          for (const auto& [st, sl] : it->second) {
            ci.slow[static_cast<std::size_t>(st)].push_back(sl);
            auto& m = ci.slowest_speed[static_cast<std::size_t>(st)];
            m = std::min(m, sl.factor);
          }
        }
        if (const auto it = lost_by_replica.find(d); it != lost_by_replica.end()) {
          for (const auto& l : it->second) ci.lost.push_back(l);
        }
      }
      classes_.push_back(std::move(ci));
    };
    if (opt_.exact) {
      for (int d = 0; d < dp_; ++d) make({d});
      return;
    }
    std::vector<int> healthy;
    for (int d = 0; d < dp_; ++d) {
      if (!special.count(d)) healthy.push_back(d);
    }
    if (!healthy.empty()) make(healthy);
    for (int d : special) make({d});
  }

  void build_groups() {
    // Data-parallel (x context-parallel) groups per stage and TP rank, in rank order.
    dp_groups_.assign(static_cast<std::size_t>(p_), {});
    for (int st = 0; st < p_; ++st) {
      for (int t = 0; t < tp_; ++t) {
        std::vector<std::pair<int, int>> members;  // (rank, gpu)
        for (int d = 0; d < dp_; ++d) {
          for (int c = 0; c < cp_; ++c)
            members.push_back({rank_of(t, c, d, st), gpu_of(t, c, d, st)});
        }
        std::sort(members.begin(), members.end());
        std::vector<int> gpus;
        for (const auto& m : members) gpus.push_back(m.second);
        dp_groups_[static_cast<std::size_t>(st)].push_back(std::move(gpus));
      }
    }
    if (p_ > 1) {
      for (int t = 0; t < tp_; ++t) {
        for (int d = 0; d < dp_; ++d) {
          for (int c = 0; c < cp_; ++c) {
            embedding_groups_.push_back({gpu_of(t, c, d, 0), gpu_of(t, c, d, p_ - 1)});
          }
        }
      }
    }
    for (int c = 0; c < cp_; ++c) {
      for (int t = 0; t < tp_; ++t) pp_ranks_.push_back({t, c});
    }
    detect_rail_symmetry();
  }

  // Shortcut 4: on a rail-optimized fabric with GPUDirect (GPU -> own NIC -> rail leaf), a
  // data-parallel group whose GPUs all sit at the same local index, one per node, keeps all its
  // traffic on that rail's links. Rails share no link; when every rail carries the same groups
  // over the same nodes (with TP > GPUs per node several TP ranks' groups share a rail) and no
  // link fault tells them apart, they behave identically: simulating the first rail's groups is
  // exact, and the other rails' bytes are added to the link statistics.
  void detect_rail_symmetry() {
    rails_.clear();
    first_rail_groups_.clear();
    const auto& g = sim_.graph();
    const ClusterSpec& spec = g.spec();
    if (opt_.exact || !opt_.symmetric_rails || tp_ < 2 || !opt_.faults.links.empty() ||
        !spec.rail_optimized || g.has_hosts()) {
      return;
    }
    const int gpn = spec.gpus_per_node;
    std::vector<int> rails;
    std::vector<std::vector<int>> first(static_cast<std::size_t>(p_));
    for (int st = 0; st < p_; ++st) {
      // Per rail (in order of first use): the node lists of its groups, and which TP ranks.
      std::map<int, std::vector<std::vector<int>>> nodes_on_rail;
      std::vector<int> order;
      std::map<int, std::vector<int>> ranks_on_rail;
      for (int t = 0; t < tp_; ++t) {
        const auto& gpus = dp_groups_[static_cast<std::size_t>(st)][static_cast<std::size_t>(t)];
        const int local = gpus.front() % gpn;
        std::vector<int> nodes;
        for (int gpu : gpus) {
          if (gpu % gpn != local) return;
          nodes.push_back(gpu / gpn);
        }
        std::sort(nodes.begin(), nodes.end());
        if (std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end()) return;
        if (!nodes_on_rail.count(local)) order.push_back(local);
        nodes_on_rail[local].push_back(std::move(nodes));
        ranks_on_rail[local].push_back(t);
      }
      for (auto& [rail, lists] : nodes_on_rail) std::sort(lists.begin(), lists.end());
      for (int rail : order) {
        if (nodes_on_rail[rail] != nodes_on_rail[order.front()]) return;
      }
      if (st == 0) rails = order;
      if (order != rails) return;
      first[static_cast<std::size_t>(st)] = ranks_on_rail[order.front()];
    }
    rails_ = rails;
    first_rail_groups_ = std::move(first);
    detect_pipeline_rail_symmetry();
  }

  // Shortcut 5 (needs shortcut 4): when every pipeline transfer leaves a GPU for the GPU at
  // the same local index on another node, it stays on that GPU's rail, and when every rail
  // carries transfers between the same node pairs, the rails' pipeline traffic is identical
  // too: only the TP/CP ranks on the first rail send (and only its embedding groups reduce),
  // the others' bytes go to the statistics.
  void detect_pipeline_rail_symmetry() {
    if (rails_.size() < 2 || p_ < 2 || faults_can_hang()) return;
    const int gpn = sim_.graph().spec().gpus_per_node;
    std::vector<std::pair<int, int>> stage_pairs;  // (from, to) of forward transfers
    for (int st = 0; st + 1 < p_; ++st) stage_pairs.push_back({st, st + 1});
    if (w_.vpp > 1) stage_pairs.push_back({p_ - 1, 0});
    if (p_ > 2) stage_pairs.push_back({0, p_ - 1});  // the embedding groups' pairs
    for (int d = 0; d < dp_; ++d) {
      for (const auto& [a, b] : stage_pairs) {
        std::map<int, std::vector<std::pair<int, int>>> node_pairs;  // rail -> (src, dst) nodes
        for (int c = 0; c < cp_; ++c) {
          for (int t = 0; t < tp_; ++t) {
            const int src = gpu_of(t, c, d, a);
            const int dst = gpu_of(t, c, d, b);
            // Same rail at both ends, another node, and the same rail in every replica.
            if (src % gpn != dst % gpn || src / gpn == dst / gpn ||
                src % gpn != gpu_of(t, c, 0, 0) % gpn) {
              return;
            }
            node_pairs[src % gpn].push_back({src / gpn, dst / gpn});
          }
        }
        for (auto& [rail, v] : node_pairs) std::sort(v.begin(), v.end());
        for (const auto& [rail, v] : node_pairs) {
          if (v != node_pairs.begin()->second) return;
        }
      }
    }
    const int rail0 = rails_.front();
    std::vector<std::pair<int, int>> on_rail;
    for (const auto& [t, c] : pp_ranks_) {
      if (gpu_of(t, c, 0, 0) % gpn == rail0) on_rail.push_back({t, c});
    }
    pp_ranks_ = std::move(on_rail);
    std::vector<std::vector<int>> embedding;
    for (auto& g : embedding_groups_) {
      if (g.front() % gpn == rail0) embedding.push_back(std::move(g));
    }
    embedding_groups_ = std::move(embedding);
    pp_one_rail_ = true;
  }

  void build_streams() {
    const int needed = static_cast<int>(classes_.size());
    for (int st = 0; st < p_; ++st) {
      const auto& prog = w_.stages[static_cast<std::size_t>(st)];
      Stream red;
      red.name = "reduce";
      red.stage = st;
      red.needed = needed;
      red.can_merge = !opt_.exact;
      double bytes = 0;
      for (const auto& b : prog.buckets) {
        if (b.group == Group::dp) bytes += b.bytes();
      }
      red.merge_cap_bytes = bytes / std::max(1, opt_.merge_parts);
      reduce_.push_back(std::move(red));
      Stream gat;
      gat.name = "gather";
      gat.stage = st;
      gat.needed = needed;
      // ZeRO-3 gathers are paced by compute (one unit of prefetch): merging would only delay
      // the unit being waited for.
      gat.can_merge = !opt_.exact && s_.parallelism.zero_stage < 3;
      double gbytes = 0;
      for (const auto& g : prog.gathers) gbytes += g.call.bytes;
      gat.merge_cap_bytes = gbytes / std::max(1, opt_.merge_parts);
      gather_.push_back(std::move(gat));
    }
    embedding_.name = "embedding";
    embedding_.stage = 0;
    embedding_.needed = needed * (p_ > 1 ? 2 : 1);
    embedding_.can_merge = false;
  }

  // TP/CP collectives: costed once each on an idle node (or zero with free communication).
  void cost_collectives() {
    coll_time_.assign(w_.collectives.size(), 0.0);
    const auto& first = classes_.front();
    for (std::size_t i = 0; i < w_.collectives.size(); ++i) {
      const auto& c = w_.collectives[i];
      if (opt_.free_communication) continue;
      CollectiveRequest req = tp_request(c, first.replicas.front(), 0, 0);
      req.contention_free = true;
      coll_time_[i] = sim_.uncontended_time_s(req);
      // NVLink bytes of TP traffic, which no flow carries when costed once: each GPU sends and
      // receives busbw-factor x size (nccl-tests PERFORMANCE.md), per execution.
      const double per_gpu =
          c.bytes * bus_bandwidth_factor(nccl_op(c.kind), static_cast<int>(req.gpus.size()));
      double executions = 0;
      for (const auto& prog : w_.stages) {
        for (const auto& op : prog.ops) {
          if (op.kind == OpKind::collective && op.index == static_cast<int>(i)) executions += 1;
        }
      }
      const double gpus_per_stage = static_cast<double>(dp_) * cp_ * tp_;
      if (req.gpus.size() > 1) tp_nvlink_bytes_ += 2 * per_gpu * executions * gpus_per_stage;
    }
  }

  CollectiveRequest tp_request(const workload::Collective& c, int d, int cpi, int st) const {
    CollectiveRequest req;
    req.op = nccl_op(c.kind);
    req.bytes = c.bytes;
    req.dtype = c.dtype;
    req.label = c.label;
    if (c.group == Group::cp) {
      for (int x = 0; x < cp_; ++x) req.gpus.push_back(gpu_of(0, x, d, st));
    } else {
      for (int t = 0; t < tp_; ++t) req.gpus.push_back(gpu_of(t, cpi, d, st));
    }
    return req;
  }

  // ---- Hangs -------------------------------------------------------------------------------
  bool faults_can_hang() const {
    for (const auto& l : opt_.faults.links) {
      if (l.down) return true;
    }
    return !opt_.faults.lost_nodes.empty();
  }

  // A down link on the route of any (src, dst) pair, or -1.
  int down_link_on(const std::vector<std::pair<int, int>>& pairs) const {
    const auto& g = sim_.graph();
    for (const auto& [a, b] : pairs) {
      if (a == b) continue;
      for (const auto& hop : g.route(a, b)) {
        if (sim_.platform().link_is_down(hop.link)) return hop.link;
      }
    }
    return -1;
  }

  static std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& gpus) {
    std::vector<std::pair<int, int>> pairs;
    const std::size_t n = gpus.size();
    for (std::size_t i = 0; i < n && n > 1; ++i) {
      pairs.push_back({gpus[i], gpus[(i + 1) % n]});
      pairs.push_back({gpus[(i + 1) % n], gpus[i]});
    }
    return pairs;
  }

  std::string describe_link_cause(int link, int* node_out) const {
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

  double down_since(int link) const {
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
  void declare_hang(HangReport h) {
    if (hang_) return;
    hang_ = std::move(h);
    aborted_ = true;
    s4u::Actor::kill_all();
  }

  // Waits for every handle; with faults that can hang, watches for a down link on the path and
  // declares a hang once NCCL would detect it. Returns false when the step hung.
  bool wait_all(std::vector<CollectiveHandle>& handles,
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

  // ---- Streams -----------------------------------------------------------------------------
  Instance& instance(Stream& st, int id, int mb, int pass,
                     const std::vector<workload::CommCall>& calls, Group group,
                     const std::string& label, double stream_work_s = 0) {
    auto& slot = st.instances[{id, mb, pass}];
    if (!slot) {
      slot = std::make_unique<Instance>();
      slot->id = id;
      slot->micro_batch = mb;
      slot->pass = pass;
      slot->calls = calls;
      slot->group = group;
      slot->label = label;
      slot->stream_work_s = stream_work_s;
      for (const auto& c : calls) slot->bytes += c.bytes;
    }
    return *slot;
  }

  void launch(Stream& st, Instance& inst) {
    if (++inst.ready < st.needed) return;
    inst.queued = true;
    st.queue.push_back(&inst);
    if (!st.busy) {
      st.busy = true;
      const int gpu = gpu_of(0, 0, classes_.front().replicas.front(), st.stage);
      Stream* sp = &st;
      sim_.spawn(gpu, st.name + "-stream-stage" + std::to_string(st.stage),
                 [this, sp] { run_stream(*sp); });
    }
  }

  static bool same_shape(const Instance& a, const Instance& b) {
    if (a.group != b.group || a.calls.size() != b.calls.size()) return false;
    for (std::size_t i = 0; i < a.calls.size(); ++i) {
      if (a.calls[i].kind != b.calls[i].kind || a.calls[i].dtype != b.calls[i].dtype) return false;
    }
    return true;
  }

  std::vector<std::vector<int>> groups_for(const Stream& st, Group g) const {
    if (g == Group::embedding) return embedding_groups_;
    const auto& all = dp_groups_[static_cast<std::size_t>(st.stage)];
    if (rails_.empty()) return all;
    std::vector<std::vector<int>> first_rail;  // shortcut 4
    for (int t : first_rail_groups_[static_cast<std::size_t>(st.stage)]) {
      first_rail.push_back(all[static_cast<std::size_t>(t)]);
    }
    return first_rail;
  }

  void run_stream(Stream& st) {
    while (!st.queue.empty()) {
      std::vector<Instance*> batch{st.queue.front()};
      st.queue.pop_front();
      double bytes = batch.front()->bytes;
      while (st.can_merge && !st.queue.empty() && same_shape(*batch.front(), *st.queue.front()) &&
             bytes + st.queue.front()->bytes <=
                 std::max(st.merge_cap_bytes, batch.front()->bytes)) {
        bytes += st.queue.front()->bytes;
        batch.push_back(st.queue.front());
        st.queue.pop_front();
      }
      const double started = sim_.now();
      const Instance& head = *batch.front();
      std::string label = st.name + " stage " + std::to_string(st.stage) + " (" + head.label;
      if (batch.size() > 1) label += " + " + std::to_string(batch.size() - 1) + " more";
      label += ")";
      if (!opt_.free_communication) {
        const auto groups = groups_for(st, head.group);
        for (std::size_t ci = 0; ci < head.calls.size(); ++ci) {
          double call_bytes = 0;
          for (const Instance* in : batch) call_bytes += in->calls[ci].bytes;
          std::vector<CollectiveHandle> handles;
          std::vector<std::pair<int, int>> pairs;
          // The calls merged away would each have paid NCCL's latency, at their own size: NCCL
          // picks the protocol per call, and a merged call large enough to switch protocol (ring
          // LL128 -> Simple) has a larger latency than any of the calls it stands for.
          double merged_latency = 0;
          for (const auto& gpus : groups) {
            if (gpus.size() < 2) continue;
            CollectiveRequest req;
            req.op = nccl_op(head.calls[ci].kind);
            req.gpus = gpus;
            req.bytes = call_bytes;
            req.dtype = head.calls[ci].dtype;
            req.label = label;
            handles.push_back(sim_.start_collective(req));
            double group_latency = 0;
            for (std::size_t k = 1; k < batch.size(); ++k) {
              req.bytes = batch[k]->calls[ci].bytes;
              if (req.bytes > 0) group_latency += sim_.plan(req).latency_s;
            }
            merged_latency = std::max(merged_latency, group_latency);
            if (faults_can_hang()) {
              const auto rp = ring_pairs(gpus);
              pairs.insert(pairs.end(), rp.begin(), rp.end());
            }
          }
          if (!wait_all(handles, pairs, started, label, st.stage)) return;
          if (merged_latency > 0) sim_.sleep_for(merged_latency);
        }
      }
      double stream_work_s = 0;
      for (const Instance* in : batch) stream_work_s += in->stream_work_s;
      if (stream_work_s > 0) sim_.sleep_for(stream_work_s);
      for (Instance* in : batch) in->done.fire(sim_.now());
      if (opt_.record_trace && sim_.now() > started) {
        trace_.push_back({-1, st.stage, 1, started, sim_.now(), label, "dp-stream"});
      }
    }
    st.busy = false;
  }

  // ---- Class-stage actors -------------------------------------------------------------------
  struct Part {
    bool tp = false;
    bool optimizer = false;
    double seconds = 0;
  };
  struct Block {
    std::vector<Part> parts;
    std::string name;
    bool empty() const { return parts.empty(); }
  };

  static std::string pass_name(const Op& op, int vpp) {
    if (op.micro_batch < 0) {
      return op.compute == ComputeKind::optimizer     ? "optimizer"
             : op.compute == ComputeKind::compression ? "1-bit compression"
                                                      : "step";
    }
    std::string n = (op.pass == PassKind::forward ? "F" : "B") + std::to_string(op.micro_batch);
    if (vpp > 1) n += "." + std::to_string(op.chunk);
    return n;
  }

  // Lost node hosting ranks of this class-stage: the first whose loss precedes `until`.
  std::optional<std::pair<int, double>> lost_before(const ClassInfo& ci, int st,
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

  bool flush(ClassStage& me, Block& blk) {
    if (blk.empty()) return true;
    const ClassInfo& ci = classes_[static_cast<std::size_t>(me.cls)];
    const auto& slow = ci.slow[static_cast<std::size_t>(me.stage)];
    const double start = sim_.now();
    double t = start;
    bool has_tp = false;
    for (const auto& part : blk.parts) {
      if (part.tp) {
        t += part.seconds;
        me.b.tp_s += part.seconds;
        has_tp = true;
      } else {
        const double end = stretch(t, part.seconds, slow);
        (part.optimizer ? me.b.optimizer_s : me.b.compute_s) += end - t;
        t = end;
      }
    }
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
    sim_.sleep_until(t);
    if (opt_.record_trace && t > start) {
      trace_.push_back({me.cls, me.stage, 0, start, t, blk.name,
                        blk.parts.size() == 1 && blk.parts[0].optimizer ? "optimizer" : "compute"});
    }
    blk.parts.clear();
    return true;
  }

  void note_wait(ClassStage& me, double from, double to, double TimeBreakdown::*field,
                 const std::string& name, const char* cat) {
    if (to <= from) return;
    me.b.*field += to - from;
    if (opt_.record_trace) trace_.push_back({me.cls, me.stage, 0, from, to, name, cat});
  }

  Message& message(int cls, const Op& op) {
    auto& slot = messages_[{cls, static_cast<int>(op.pass), op.micro_batch, op.virtual_stage}];
    if (!slot) slot = std::make_unique<Message>();
    return *slot;
  }

  void start_transfer(Message& msg, int cls, const Op& recv_like, int receiver_stage) {
    msg.started = true;
    const int vs_recv = recv_like.virtual_stage;
    const int vs_send = recv_like.pass == PassKind::forward ? vs_recv - 1 : vs_recv + 1;
    const int src_stage = vs_send % p_;
    msg.src_stage = src_stage;
    msg.label = std::string(recv_like.pass == PassKind::forward ? "activation" : "gradient") +
                " mb " + std::to_string(recv_like.micro_batch) + " to stage " +
                std::to_string(receiver_stage);
    if (!opt_.free_communication) {
      // Shortcut 1: the class's first replica stands for all of them; every replica's pipeline
      // traffic only with StepOptions::pp_all_replicas (or exact).
      const auto& all = classes_[static_cast<std::size_t>(cls)].replicas;
      const std::vector<int> replicas =
          opt_.exact || opt_.pp_all_replicas ? all : std::vector<int>{all.front()};
      for (int d : replicas) {
        for (const auto& [t, c] : pp_ranks_) {  // every TP/CP rank, or one rail's (shortcut 5)
          const int src = gpu_of(t, c, d, src_stage);
          const int dst = gpu_of(t, c, d, receiver_stage);
          msg.handles.push_back(sim_.start_send(src, dst, recv_like.bytes, msg.label));
          msg.pairs.push_back({src, dst});
        }
      }
      // The other replicas' transfers are not simulated; their bytes still count in the link
      // statistics (payload per hop of each one's own route). The other rails' transfers of the
      // simulated replicas are added by the report (they mirror the first rail's).
      if (replicas.size() < all.size()) {
        const auto& hops = skipped_pp_hops(cls, src_stage, receiver_stage);
        for (std::size_t k = 0; k < hops.size(); ++k)
          unsimulated_bytes_[k] += hops[k] * recv_like.bytes;
      }
    }
    msg.started_event.fire(sim_.now());
  }

  // Hops per link class of the pipeline transfers the shortcut leaves out (all replicas of the
  // class but its first, every TP/CP rank), from stage `src` to stage `dst`.
  const std::array<double, topologies::kNumLinkClasses>& skipped_pp_hops(int cls, int src,
                                                                         int dst) {
    auto& slot = skipped_hops_[{cls, src, dst}];
    if (!slot) {
      slot = std::make_unique<std::array<double, topologies::kNumLinkClasses>>();
      slot->fill(0);
      const auto& g = sim_.graph();
      const auto& all = classes_[static_cast<std::size_t>(cls)].replicas;
      for (std::size_t i = 1; i < all.size(); ++i) {
        for (int c = 0; c < cp_; ++c) {
          for (int t = 0; t < tp_; ++t) {
            for (const auto& hop : g.route(gpu_of(t, c, all[i], src), gpu_of(t, c, all[i], dst))) {
              (*slot)[static_cast<std::size_t>(g.link(hop.link).cls)] += 1;
            }
          }
        }
      }
    }
    return *slot;
  }

  void run_class_stage(int cls, int st) {
    ClassStage& me = cs(cls, st);
    const auto& prog = w_.stages[static_cast<std::size_t>(st)];
    const int vpp = w_.vpp;
    Block blk;
    std::string current;
    for (const Op& op : prog.ops) {
      if (aborted_) return;
      if (op.kind == OpKind::compute || (op.kind == OpKind::collective && !opt_.exact)) {
        const std::string name = pass_name(op, vpp);
        if (!blk.empty() && name != blk.name) {
          if (!flush(me, blk)) return;
        }
        blk.name = name;
        if (op.kind == OpKind::compute) {
          const bool opt =
              op.compute == ComputeKind::optimizer || op.compute == ComputeKind::compression;
          blk.parts.push_back({false, opt, op.time_s});
        } else {
          const double comm = coll_time_[static_cast<std::size_t>(op.index)];
          blk.parts.push_back(
              {true, false,
               op.overlap_s > 0 ? workload::exposed_tp_comm_s(comm, op.overlap_s, tp_) : comm});
        }
        continue;
      }
      if (!flush(me, blk)) return;
      switch (op.kind) {
        case OpKind::collective: {  // exact mode: TP/CP collectives as flows
          const auto& c = w_.collectives[static_cast<std::size_t>(op.index)];
          const double t0 = sim_.now();
          std::vector<CollectiveHandle> hs;
          std::vector<std::pair<int, int>> pairs;
          if (!opt_.free_communication) {
            for (int d : classes_[static_cast<std::size_t>(cls)].replicas) {
              const int groups = c.group == Group::cp ? 1 : cp_;
              for (int x = 0; x < groups; ++x) {
                CollectiveRequest req = tp_request(c, d, x, st);
                hs.push_back(sim_.start_collective(req));
                if (faults_can_hang()) {
                  const auto rp = ring_pairs(req.gpus);
                  pairs.insert(pairs.end(), rp.begin(), rp.end());
                }
              }
            }
          }
          if (!wait_all(hs, pairs, t0, c.label, st)) return;
          me.b.tp_s += sim_.now() - t0;
          break;
        }
        case OpKind::send: {
          Message& msg = message(cls, op);
          msg.sender_posted = true;
          msg.sender_t = sim_.now();
          if (msg.receiver_posted && !msg.started) {
            start_transfer(msg, cls, op, op.virtual_stage % p_);
          }
          break;
        }
        case OpKind::recv: {
          Message& msg = message(cls, op);
          msg.receiver_posted = true;
          msg.receiver_t = sim_.now();
          if (msg.sender_posted && !msg.started) start_transfer(msg, cls, op, st);
          msg.started_event.wait();
          if (aborted_) return;
          if (!wait_all(msg.handles, msg.pairs, msg.started_event.at(), msg.label, st)) return;
          const double ready = std::max(msg.sender_t, msg.receiver_t);
          note_wait(me, msg.receiver_t, msg.sender_t, &TimeBreakdown::bubble_s,
                    "wait " + pass_name(op, vpp), "bubble");
          note_wait(me, ready, sim_.now(), &TimeBreakdown::pp_s, "recv " + pass_name(op, vpp),
                    "pp");
          break;
        }
        case OpKind::grad_ready: {
          const auto& bkt = prog.buckets[static_cast<std::size_t>(op.index)];
          Stream& stream =
              bkt.group == Group::embedding ? embedding_ : reduce_[static_cast<std::size_t>(st)];
          const int id = bkt.group == Group::embedding ? 0 : op.index;
          Instance& inst = instance(stream, id, op.micro_batch, 0, bkt.calls, bkt.group, bkt.label,
                                    bkt.stream_work_s);
          me.outstanding.push_back(&inst);
          launch(stream, inst);
          break;
        }
        case OpKind::grad_wait: {
          const double t0 = sim_.now();
          for (Instance* in : me.outstanding) {
            in->done.wait();
            if (aborted_) return;
          }
          me.outstanding.clear();
          note_wait(me, t0, sim_.now(), &TimeBreakdown::dp_s, "wait gradients", "dp");
          break;
        }
        case OpKind::gather_issue: {
          const auto& g = prog.gathers[static_cast<std::size_t>(op.index)];
          Instance& inst = instance(gather_[static_cast<std::size_t>(st)], op.index, op.micro_batch,
                                    static_cast<int>(op.pass), {g.call}, Group::dp, g.label);
          launch(gather_[static_cast<std::size_t>(st)], inst);
          break;
        }
        case OpKind::gather_wait: {
          const auto& g = prog.gathers[static_cast<std::size_t>(op.index)];
          Instance& inst = instance(gather_[static_cast<std::size_t>(st)], op.index, op.micro_batch,
                                    static_cast<int>(op.pass), {g.call}, Group::dp, g.label);
          const double t0 = sim_.now();
          inst.done.wait();
          if (aborted_) return;
          note_wait(me, t0, sim_.now(), &TimeBreakdown::dp_s, "wait " + g.label, "dp");
          break;
        }
        case OpKind::compute: break;
      }
    }
    if (!flush(me, blk)) return;
    me.end_s = sim_.now();
    me.finished = true;
  }

  const Scenario& s_;
  const StepOptions& opt_;
  const Workload& w_;
  Simulation& sim_;
  topologies::Placement pl_;
  int p_ = 1, tp_ = 1, cp_ = 1, dp_ = 1;
  std::vector<ClassInfo> classes_;
  std::vector<std::vector<std::vector<int>>> dp_groups_;  // [stage][tp rank] -> gpus
  std::vector<std::vector<int>> embedding_groups_;
  std::vector<int> rails_;  // non-empty: shortcut 4 active (the rails the DP groups use)
  std::vector<std::vector<int>> first_rail_groups_;  // [stage] -> TP ranks on rails_[0]
  std::vector<std::pair<int, int>> pp_ranks_;        // (tp, cp) ranks whose transfers run
  bool pp_one_rail_ = false;                         // shortcut 5 active
  std::deque<Stream> reduce_, gather_;               // per stage (deque: Stream is move-only)
  Stream embedding_;
  std::vector<double> coll_time_;
  double tp_nvlink_bytes_ = 0;
  std::array<double, topologies::kNumLinkClasses> unsimulated_bytes_{};
  std::map<std::tuple<int, int, int>,
           std::unique_ptr<std::array<double, topologies::kNumLinkClasses>>>
      skipped_hops_;
  std::vector<ClassStage> cs_;
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<Message>> messages_;
  bool aborted_ = false;
  std::optional<HangReport> hang_;
  std::vector<TraceSlice> trace_;
};

std::string link_class_name(topologies::LinkClass c) {
  return topologies::to_string(c);
}

// "0.5", "12.25": a number as a person writes it.
std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// Everything one simulation of one phase measures.
StepReport simulate_phase(const Scenario& s, const StepOptions& opt, bool compressed) {
  const auto wall0 = std::chrono::steady_clock::now();
  const models::ComputeCostModel compute(
      s.cluster.gpu,
      models::load_compute_calibration(opt.compute_calibration.empty()
                                           ? models::compute_calibration_path(s.cluster.gpu)
                                           : opt.compute_calibration));
  const Workload w = workload::build_workload(s, compute, {.compressed_phase = compressed});
  const topologies::ClusterGraph graph = topologies::ClusterGraph::build(s.cluster, s.gpus);

  // Link names in faults must exist (ConfigError, not a crash deep in the engine).
  for (std::size_t i = 0; i < opt.faults.links.size(); ++i) {
    const auto& l = opt.faults.links[i];
    if (!graph.find_link(l.link)) {
      throw ConfigError(s.file, "/faults/links/" + std::to_string(i) + "/link",
                        "no link named \"" + l.link + "\" in the cluster graph");
    }
  }

  SimulationOptions so;
  so.nccl = s.comm.nccl;
  if (!s.cluster.calibration.empty()) {
    so.network_calibration = validation::load_calibration(s.cluster.calibration).network;
  }
  so.actor_stack_guard = opt.actor_stack_guard;
  Simulation sim(graph, so);
  StepFaults net_faults;  // links and lost nodes go to the engine; slow GPUs are ours
  net_faults.links = opt.faults.links;
  net_faults.lost_nodes = opt.faults.lost_nodes;
  if (!net_faults.empty()) sim.apply_faults(net_faults);

  StepRun run(s, opt, w, sim);
  run.spawn_all();
  sim.run();

  StepReport r;
  r.scenario = s.name;
  r.gpus = s.gpus;
  r.notes = w.notes;
  auto& css = run.class_stages();
  double step = 0;
  int crit = 0;
  for (std::size_t i = 0; i < css.size(); ++i) {
    if (css[i].end_s > step) {
      step = css[i].end_s;
      crit = static_cast<int>(i);
    }
  }
  r.hang = run.hang();
  r.completed = !r.hang.has_value();
  if (!r.completed) step = r.hang->detected_s;
  r.step_time_s = step;
  for (auto& c : css) {
    if (c.finished) c.b.idle_s = std::max(0.0, step - c.end_s);
    RankClassReport rc;
    rc.replica_class = c.cls;
    rc.stage = c.stage;
    rc.replicas = run.classes()[static_cast<std::size_t>(c.cls)].replicas;
    rc.ranks = static_cast<int>(rc.replicas.size()) * w.tp * w.cp;
    rc.end_s = c.end_s;
    rc.slowest_speed = run.classes()[static_cast<std::size_t>(c.cls)]
                           .slowest_speed[static_cast<std::size_t>(c.stage)];
    rc.breakdown = c.b;
    r.ranks.push_back(std::move(rc));
  }
  r.critical_class = css[static_cast<std::size_t>(crit)].cls;
  r.critical_stage = css[static_cast<std::size_t>(crit)].stage;
  r.breakdown = css[static_cast<std::size_t>(crit)].b;

  // FLOPs and utilisation.
  const auto meg = models::flops_per_step(s, models::FlopConvention::megatron);
  const auto palm = models::flops_per_step(s, models::FlopConvention::palm);
  const auto& chosen = opt.convention == models::FlopConvention::megatron ? meg : palm;
  r.flop_convention = models::to_string(opt.convention);
  r.peak_flops_per_gpu = s.cluster.gpu.peak(s.training.precision);
  r.model_flops_per_step = chosen.model();
  r.hardware_flops_per_step = chosen.hardware();
  const double denom = step * s.gpus * r.peak_flops_per_gpu;
  if (r.completed && step > 0) {
    r.tokens_per_s = s.tokens_per_step() / step;
    r.mfu = chosen.model() / denom;
    r.hfu = chosen.hardware() / denom;
    r.mfu_megatron = meg.model() / denom;
    r.mfu_palm = palm.model() / denom;
    r.comm_fraction = r.breakdown.comm() / step;
    r.bubble_fraction = r.breakdown.bubble_s / step;
  }

  // Links: simulated flows, plus the NVLink bytes of TP collectives costed once, plus the
  // bytes of the rails shortcut 4 left out: the simulated rail carries pipeline and gradient
  // traffic, the next rail the same pipeline traffic only, so their difference is the gradient
  // traffic each left-out rail would have carried. With shortcut 5 the next rail carries
  // nothing and each left-out rail would have carried all the first one does.
  const LinkUsageReport usage = sim.link_usage();
  std::array<double, topologies::kNumLinkClasses> rail_extra{};
  if (const auto& rails = run.symmetric_rails(); rails.size() > 1) {
    std::array<double, topologies::kNumLinkClasses> on_first{}, on_second{};
    const auto& g = sim.graph();
    for (const auto& lu : usage.links) {
      const auto& link = g.link(lu.link);
      const auto& a = g.vertex(link.a);
      const int rail = a.kind == topologies::VertexKind::gpu ? a.local : a.rail;
      const auto k = static_cast<std::size_t>(lu.cls);
      if (rail == rails[0]) on_first[k] += lu.bytes_up + lu.bytes_down;
      if (rail == rails[1] && !run.pipeline_on_one_rail()) {
        on_second[k] += lu.bytes_up + lu.bytes_down;
      }
    }
    for (std::size_t k = 0; k < rail_extra.size(); ++k) {
      rail_extra[k] =
          static_cast<double>(rails.size() - 1) * std::max(0.0, on_first[k] - on_second[k]);
    }
  }
  for (const auto& c : usage.classes) {
    LinkClassReport lc;
    lc.link_class = link_class_name(c.cls);
    lc.links = c.links;
    lc.bytes = c.bytes;
    lc.peak_link_utilisation = c.peak_link_utilisation;
    lc.peak_link = c.peak_link;
    if (c.cls == topologies::LinkClass::nvlink && !opt.exact) lc.bytes += run.tp_nvlink_bytes();
    lc.bytes += run.unsimulated_bytes(c.cls) + rail_extra[static_cast<std::size_t>(c.cls)];
    lc.utilisation = c.capacity_Bps > 0 && step > 0 ? lc.bytes / (c.capacity_Bps * step) : 0;
    r.links.push_back(std::move(lc));
  }
  const auto results = sim.results();
  r.collectives = static_cast<long long>(results.size());
  for (const auto& res : results) r.flows += res.flows;

  // Faults named.
  if (!opt.faults.slow_gpus.empty()) {
    const auto* worst = &opt.faults.slow_gpus.front();
    for (const auto& g : opt.faults.slow_gpus) {
      if (g.speed_factor < worst->speed_factor) worst = &g;
    }
    const auto pl = topologies::place_ranks(s.parallelism, s.gpus);
    const int gpu = pl.gpu_of_rank[static_cast<std::size_t>(worst->rank)];
    r.slowest_rank = "rank " + std::to_string(worst->rank) + " (node " +
                     std::to_string(gpu / s.cluster.gpus_per_node) + ", GPU " +
                     std::to_string(gpu % s.cluster.gpus_per_node) + ") at " +
                     num(worst->speed_factor) + "x speed from " + num(worst->from_s) + " s" +
                     (worst->cause.empty() ? "" : " (" + worst->cause + ")");
  }
  if (!opt.faults.links.empty()) {
    const auto* worst = &opt.faults.links.front();
    for (const auto& l : opt.faults.links) {
      const double f = l.down ? 0 : l.bandwidth_factor;
      const double wf = worst->down ? 0 : worst->bandwidth_factor;
      if (f < wf) worst = &l;
    }
    r.slowest_link =
        worst->link +
        (worst->down ? " down" : " at " + num(worst->bandwidth_factor) + "x bandwidth");
  }

  if (opt.record_trace) r.trace = std::move(run.trace());
  if (!opt.exact) {
    r.notes.push_back(
        "tensor/context-parallel collectives costed once on an idle node and reused "
        "(their NVLink bytes are added to the nvlink utilisation)");
    if (run.symmetric_rails().size() > 1) {
      r.notes.push_back("the " + std::to_string(run.symmetric_rails().size()) +
                        " tensor-parallel ranks' data-parallel groups" +
                        (run.pipeline_on_one_rail() ? " and pipeline transfers" : "") +
                        " run on separate rails: the first is simulated, the others' bytes are "
                        "added to the link statistics");
    }
    if (run.classes().size() < static_cast<std::size_t>(w.dp)) {
      r.notes.push_back(std::string("data-parallel replicas without faults share one pipeline "
                                    "timeline; their gradient traffic is simulated in full, ") +
                        (opt.pp_all_replicas ? "and so is their pipeline traffic"
                                             : "their pipeline traffic by the first replica's"));
    }
  }
  if (opt.free_communication) r.notes.push_back("free communication: every transfer takes no time");
  if (!opt.exact && s.parallelism.tp * s.parallelism.cp > s.cluster.gpus_per_node) {
    r.notes.push_back(
        "tensor/context-parallel groups span nodes: their collectives are costed "
        "without the network traffic they would meet");
  }
  const auto mem = models::estimate_memory(s);
  r.memory_per_gpu_bytes = mem.peak_bytes();
  r.memory_usable_bytes = mem.usable_bytes();
  r.fits_in_memory = mem.fits();
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

}  // namespace

StepReport simulate_step(const Scenario& s, const StepOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  const bool onebit = s.comm.compression.kind == Compression::onebit_adam;
  if (!onebit || options.single_phase) {
    StepReport r = simulate_phase(s, options, onebit && options.compressed_phase);
    r.phases.push_back(
        {onebit ? (options.compressed_phase ? "compressed" : "warm-up") : "full precision", 1.0,
         r.step_time_s, r.mfu, r.completed});
    return r;
  }
  // 1-bit Adam: the compressed phase in a child process (one engine per process), the warm-up
  // phase here (with its trace); headline numbers are the run average.
  StepOptions child = options;
  child.single_phase = true;
  child.compressed_phase = true;
  child.record_trace = false;
  const StepReport comp = simulate_step_isolated(s, child);
  StepReport r = simulate_phase(s, options, false);
  const double wf = s.comm.compression.warmup_fraction;
  r.phases = {{"warm-up", wf, r.step_time_s, r.mfu, r.completed},
              {"compressed", 1 - wf, comp.step_time_s, comp.mfu, comp.completed}};
  if (r.completed && comp.completed) {
    const double avg = wf * r.step_time_s + (1 - wf) * comp.step_time_s;
    const double scale = r.step_time_s / avg;
    r.step_time_s = avg;
    r.tokens_per_s = s.tokens_per_step() / avg;
    r.mfu *= scale;
    r.hfu *= scale;
    r.mfu_megatron *= scale;
    r.mfu_palm *= scale;
    r.notes.push_back(
        "1-bit Adam: step time, tokens/s and MFU are averages over the run (warm-up " +
        std::to_string(static_cast<int>(std::lround(100 * wf))) +
        "% of it); the breakdown and trace are the warm-up phase's");
  }
  r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

StepReport simulate_step_isolated(const Scenario& s, const StepOptions& options) {
  StepOptions o = options;
  o.record_trace = false;
  const std::string text = run_isolated([&] { return to_json(simulate_step(s, o)).dump(); });
  return step_report_from_json(nlohmann::json::parse(text));
}

}  // namespace clustersim::sim
