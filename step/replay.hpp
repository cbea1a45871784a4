// The step replay: the per-rank programs of a PreparedStep run on the SimGrid engine
// (sim/simulation.hpp), one actor per pipeline stage of each data-parallel replica class. The
// actor walks its program and hands each op to the handler of its kind, in the shape of
// ASTRA-sim's issue_comp / issue_comm and Vidur's events:
//   compute, and TP/CP collectives costed once   op_compute.cpp    (batched into blocks)
//   collective (exact mode: TP/CP as flows)      op_collective.cpp
//   send, recv (pipeline messages)               op_pipeline.cpp
//   grad_ready, grad_wait (gradient reductions)  op_gradients.cpp
//   gather_issue, gather_wait (ZeRO gathers)     op_gathers.cpp
// Reductions and gathers run on per-stage streams (streams.cpp), hangs on down links are
// detected as NCCL would (hangs.cpp), and the replica classes and the rail shortcuts are fixed
// before the run (replica_classes.cpp, rail_symmetry.cpp). Internal to step/.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nccl/collectives.hpp"
#include "sim/event.hpp"
#include "sim/simulation.hpp"
#include "step/prepare.hpp"
#include "step/simulate_step.hpp"
#include "step/step_report.hpp"
#include "topologies/cluster_graph.hpp"
#include "workload/workload.hpp"

namespace clustersim::step {

// The NCCL operation of a workload collective.
nccl::CollectiveOp nccl_op(workload::CollKind k);

// "F3", "B12.1", "W5" (pass, micro-batch, model chunk), "optimizer": the name of an op's pass.
std::string pass_name(const workload::Op& op, int chunks);

// Both directions of every ring edge of `gpus` (the pairs a ring collective's flows use).
std::vector<std::pair<int, int>> ring_pairs(const std::vector<int>& gpus);

// A slowdown of a GPU from a moment on.
struct Slowdown {
  double factor = 1;
  double from_s = 0;
};

// The fraction of a GPU's `sm_count` SMs left to compute while NCCL kernels hold `held` of them
// (at least one SM; 1 when sm_count is 0, unknown).
double sm_share(int held, int sm_count);

// The CTAs that NCCL kernels on a stage's streams (gradient reductions, parameter gathers, the
// embedding's all-reduce) hold on each of the stage's GPUs, over the step (sm_share.cpp).
class SmLedger {
 public:
  // Actor: an NCCL call of `ctas` CTAs launched (take) or ended (give_back) at `now_s`; wakes
  // what waits on changed(). Calls come in time order.
  void take(double now_s, int ctas);
  void give_back(double now_s, int ctas);
  // The fraction of `sm_count` SMs left to compute at `t` (1 when sm_count is 0, unknown).
  double share(double t, int sm_count) const;
  // The first change after `t`; infinity when none.
  double next_change(double t) const;
  sim::Signal& changed() { return changed_; }

 private:
  void record(double now_s);
  std::multiset<int> active_;                  // CTAs of the calls in flight
  std::vector<std::pair<double, int>> steps_;  // (from_s, CTAs held from then), in time order
  sim::Signal changed_;
};

// Work `w` (seconds at nominal speed) started at `t` on a group whose speed at any time is the
// smallest factor of the slowdowns active then, times the share of SMs `sms` leaves to compute
// (none when null). Returns the finish time, taking the SMs held after the ledger's last change
// to stay held.
double stretch(double t, double w, const std::vector<Slowdown>& slow, const SmLedger* sms = nullptr,
               int sm_count = 0);

// A collective instance on a stage's stream: a gradient bucket of one micro-batch, or a
// parameter gather of one (micro-batch, pass).
struct Instance {
  int id = 0;
  int micro_batch = -1;
  int pass = 0;
  int ready = 0;     // classes that launched it
  int released = 0;  // gradient reductions: classes that waited for it (op_gradients.cpp)
  bool queued = false;
  std::vector<workload::CommCall> calls;
  workload::Group group = workload::Group::dp;
  std::string label;
  double bytes = 0;
  double stream_work_s = 0;  // device work on the stream besides the calls
  sim::Event done;
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
  sim::Event started_event;
  std::vector<sim::CollectiveHandle> handles;
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

// Consecutive compute (and TP collectives costed once) of one pass, run as one timed block.
struct Block {
  struct Part {
    bool tp = false;  // a collective costed once (TP/CP, or EP when `ep`)
    bool ep = false;
    bool optimizer = false;
    double seconds = 0;
    double host_s = 0;      // of seconds, CPU time with the GPU idle: never stretched
    int collective = -1;    // tp: the collective (Workload::collectives), for the trace
    double flops = 0;       // compute: the kernels' FLOPs, for the trace
    bool nccl_sms = false;  // compute: a GEMM's time lost to the SMs of a TP call beside it
    double kernels = 0;     // compute: kernel launches
  };
  std::vector<Part> parts;
  std::string name;
  bool empty() const { return parts.empty(); }
};

struct ClassStage {
  int cls = 0;
  int stage = 0;
  TimeBreakdown b;
  double end_s = 0;
  bool finished = false;
  // Reductions launched, not yet awaited, with their streams.
  std::vector<std::pair<Stream*, Instance*>> outstanding;
  Block block;               // compute not yet run
  std::size_t op_index = 0;  // of the op being handled, in the stage's program
  // overlap_p2p_comm: the program's recv ops per direction (forward, backward) in order, how
  // many of them are posted and how many were waited for.
  std::array<std::vector<workload::Op>, 2> recvs;
  std::array<std::size_t, 2> posted{};
  std::array<std::size_t, 2> waited{};
  // The index into recvs, posted and waited of a recv or recv_post op.
  static std::size_t direction(const workload::Op& op) {
    return op.pass == workload::PassKind::forward ? 0 : 1;
  }
};

class Replay {
 public:
  // Throws ConfigError like prepare_step for faults it did not check (it checks them all).
  Replay(const PreparedStep& prepared, const StepOptions& options, sim::Simulation& sim);

  // Spawns one actor per class-stage (before sim.run()).
  void spawn_all();

  const std::vector<ClassInfo>& classes() const { return classes_; }
  std::vector<ClassStage>& class_stages() { return cs_; }
  const std::optional<HangReport>& hang() const { return hang_; }
  std::vector<TraceSlice>& trace() { return trace_; }
  double tp_nvlink_bytes() const { return tp_nvlink_bytes_; }
  // Rails of the data-parallel groups when only the first rail's groups are simulated.
  const std::vector<int>& symmetric_rails() const { return rails_; }
  // Pipeline transfers simulated on the first of symmetric_rails() only (shortcut 5).
  bool pipeline_on_one_rail() const { return pp_one_rail_; }
  // Pipeline messages posted and not yet received: none once every actor has finished.
  std::size_t messages_in_flight() const { return messages_.size(); }
  double unsimulated_bytes(topologies::LinkClass c) const {
    return unsimulated_bytes_[static_cast<std::size_t>(c)];
  }

 private:
  using Op = workload::Op;

  // ---- Setup (replica_classes.cpp, rail_symmetry.cpp, replay.cpp) ---------------------------
  nccl::CollectiveRequest expert_request(const workload::Collective& c, int rank) const;
  void join_expert_exchange(const ClassStage& me, const Op& op,
                            std::vector<sim::CollectiveHandle>& hs);
  int rank_of(int t, int c, int d, int st) const { return pl_.rank_of({t, c, d, st}); }
  int gpu_of(int t, int c, int d, int st) const {
    return pl_.gpu_of_rank[static_cast<std::size_t>(rank_of(t, c, d, st))];
  }
  ClassStage& cs(int cls, int st) {
    return cs_[static_cast<std::size_t>(cls) * static_cast<std::size_t>(p_) +
               static_cast<std::size_t>(st)];
  }
  void build_classes();
  void build_groups();
  void build_expert_dp_groups();
  void detect_rail_symmetry();
  void detect_pipeline_rail_symmetry();
  void cost_collectives();
  nccl::CollectiveRequest tp_request(const workload::Collective& c, int d, int cpi, int st) const;

  // ---- Hangs (hangs.cpp) --------------------------------------------------------------------
  bool faults_can_hang() const;
  int down_link_on(const std::vector<std::pair<int, int>>& pairs) const;
  std::string describe_link_cause(int link, int* node_out) const;
  double down_since(int link) const;
  void declare_hang(HangReport h);
  bool wait_all(std::vector<sim::CollectiveHandle>& handles,
                const std::vector<std::pair<int, int>>& pairs, double started,
                const std::string& what, int stage);
  std::optional<std::pair<int, double>> lost_before(const ClassInfo& ci, int st,
                                                    double until) const;

  // ---- Streams (streams.cpp) ----------------------------------------------------------------
  void build_streams();
  Instance& instance(Stream& st, int id, int mb, int pass,
                     const std::vector<workload::CommCall>& calls, workload::Group group,
                     const std::string& label, double stream_work_s = 0);
  void launch(Stream& st, Instance& inst);
  std::vector<std::vector<int>> groups_for(const Stream& st, workload::Group g) const;
  std::vector<Instance*> next_batch(Stream& st);
  // How NCCL would run each of `head`'s calls at `bytes` (one entry per call) on `gpus`:
  // algorithm, protocol and channels, which NCCL picks by size (none for fewer than 2 GPUs).
  std::vector<std::tuple<int, int, int>> call_plans(const Instance& head,
                                                    const std::vector<int>& gpus,
                                                    const std::vector<double>& bytes) const;
  bool run_calls(Stream& st, const std::vector<Instance*>& batch, const std::string& label,
                 double started);
  void run_stream(Stream& st);

  // ---- The class-stage actors and their op handlers ----------------------------------------
  void run_class_stage(int cls, int st);  // replay.cpp: the op loop
  // Each returns false when the step ended (a hang was declared) and the actor must stop.
  bool handle(ClassStage& me, const Op& op);
  bool on_compute(ClassStage& me, const Op& op);  // op_compute.cpp
  bool flush(ClassStage& me);
  // The block's parts laid out from `start`, as the SMs held so far allow: the end of each part
  // in `ends`; returns the block's end.
  double lay_out(const ClassStage& me, double start, std::vector<double>& ends) const;
  // When a compute part started at `t` ends.
  double on_gpu(double t, const Block::Part& part, const std::vector<Slowdown>& slow,
                const SmLedger* sms) const;
  // The time of each laid-out part into the breakdown, and into the trace (`inside`).
  void account(ClassStage& me, double start, const std::vector<double>& ends,
               std::vector<TraceSlice>& inside);
  // A part of a block as a slice nested in the block's (kernels merged, each collective apart).
  void trace_part(const ClassStage& me, const Block::Part& part, double from, double to,
                  std::vector<TraceSlice>& inside) const;
  void note_wait(ClassStage& me, double from, double to, double TimeBreakdown::*field,
                 const std::string& name, const char* cat);
  bool on_collective(ClassStage& me, const Op& op);  // op_collective.cpp
  bool on_send(ClassStage& me, const Op& op);        // op_pipeline.cpp
  bool on_recv(ClassStage& me, const Op& op);
  bool on_recv_post(ClassStage& me, const Op& op);
  void post_recv(ClassStage& me, const Op& recv);
  static std::tuple<int, int, int, int> message_key(int cls, const Op& op);
  Message& message(int cls, const Op& op);
  void start_transfer(Message& msg, int cls, const Op& recv_like, int receiver_stage);
  const std::array<double, topologies::kNumLinkClasses>& skipped_pp_hops(int cls, int src, int dst);
  bool on_grad_ready(ClassStage& me, const Op& op);  // op_gradients.cpp
  bool on_grad_wait(ClassStage& me, const Op& op);
  void release(Stream& stream, Instance& inst);
  void forget_finished(ClassStage& me);
  bool on_gather_issue(ClassStage& me, const Op& op);  // op_gathers.cpp
  bool on_gather_wait(ClassStage& me, const Op& op);

  const Scenario& s_;
  const StepOptions& opt_;
  const workload::Workload& w_;
  sim::Simulation& sim_;
  const topologies::Placement& pl_;
  int p_ = 1, tp_ = 1, cp_ = 1, dp_ = 1;
  std::vector<ClassInfo> classes_;
  std::vector<std::vector<std::vector<int>>> dp_groups_;  // [stage][tp rank] -> gpus
  std::vector<std::vector<int>> embedding_groups_;
  // MoE models: [stage] -> the expert-data-parallel groups' GPUs, and the TP rank all of a
  // group's members hold (-1 when they hold several: etp != tp).
  std::vector<std::vector<std::vector<int>>> expert_dp_groups_;
  std::vector<std::vector<int>> expert_dp_tp_;
  std::vector<int> rails_;  // non-empty: shortcut 4 active (the rails the DP groups use)
  std::vector<std::vector<int>> first_rail_groups_;  // [stage] -> TP ranks on rails_[0]
  std::vector<std::pair<int, int>> pp_ranks_;        // (tp, cp) ranks whose transfers run
  bool pp_one_rail_ = false;                         // shortcut 5 active
  std::deque<Stream> reduce_, gather_;               // per stage (deque: Stream is move-only)
  Stream embedding_;
  // Per stage: the SMs NCCL's stream kernels hold (deque: SmLedger is neither copied nor moved).
  std::deque<SmLedger> sms_;
  int sm_count_ = 0;  // of the GPU; 0 (unknown): NCCL takes no SMs from compute
  std::vector<double> coll_time_;
  std::vector<int> coll_ctas_;      // of each costed-once TP collective: its NCCL channels
  double ep_exposed_fraction_ = 1;  // of each EP all-to-all (training.moe_comm_overlap)
  double tp_nvlink_bytes_ = 0;
  std::array<double, topologies::kNumLinkClasses> unsimulated_bytes_{};
  std::map<std::tuple<int, int, int>,
           std::unique_ptr<std::array<double, topologies::kNumLinkClasses>>>
      skipped_hops_;
  std::vector<ClassStage> cs_;
  // Pipeline messages posted by one side and not yet received.
  std::map<std::tuple<int, int, int, int>, std::unique_ptr<Message>> messages_;
  bool aborted_ = false;
  std::optional<HangReport> hang_;
  std::vector<TraceSlice> trace_;
};

}  // namespace clustersim::step
