// The simulation engine: one SimGrid platform, actors per rank, collectives and point-to-point
// transfers started asynchronously, compute on GPUs, link and GPU faults, link statistics.
//
// Usage (a training step; every call marked "actor" must run inside an actor body):
//
//   Simulation sim(graph, options);                     // one per process (SimGrid 3.32)
//   for (int gpu = 0; gpu < n; ++gpu)
//     sim.spawn(gpu, "rank" + std::to_string(gpu), [&, gpu] {
//       sim.compute(gpu, 1.2e-3);                       // actor: busy the GPU 1.2 ms
//       auto h = sim.join_collective("dp0/bucket3", member, request);  // actor: NCCL launch
//       sim.compute(gpu, 0.8e-3);                       // overlaps with the all-reduce
//       sim.wait(h);                                    // actor
//     });
//   double end_s = sim.run();
//
// Threading: SimGrid actors are cooperative coroutines in one OS thread; nothing here is
// thread-safe and nothing needs to be.
//
// Collective semantics: a collective starts when it is started (start_collective) or when the
// last member joined (join_collective, NCCL's semantics: a collective launches when every rank
// has called it). Collectives on the same group may run concurrently (the engine does not
// serialise them; NCCL would on one communicator and stream: call wait() in between to get that).
//
// Speed (for 1024-16384 ranks): bulk granularity (one flow per GPU pair per collective),
// contention_free requests (a cached delay, no flows), per-shape plan caches. A process runs one
// engine; see sim/platform.hpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/nccl_settings.hpp"
#include "core/scenario.hpp"
#include "nccl/collectives.hpp"
#include "nccl/nccl_model.hpp"
#include "sim/platform.hpp"
#include "topologies/cluster_graph.hpp"

namespace clustersim::sim {

struct SimulationOptions {
  NetworkModelOptions network;
  NcclSettings nccl;  // NCCL_* as the scenario gives them
  nccl::Granularity granularity = nccl::Granularity::bulk;
  // An input of NCCL's cost model that the cluster spec does not carry (the GPU's architecture
  // comes from the spec: ClusterSpec::gpu.architecture).
  nccl::CpuVendor cpu = nccl::CpuVendor::intel;
  // The cluster's network calibration (the file ClusterSpec::calibration names, read by the
  // caller): the collectives it measured take its fitted times instead of NCCL's cost model.
  // Empty: NCCL's cost model for every collective.
  std::vector<NetworkCalibration> network_calibration;
  // SimGrid's actor settings (stack size, guard pages, context factory), fixed when the engine
  // is created; the defaults are the fast ones (sim/platform.hpp).
  EngineOptions engine;
  // Bulk collectives that start while no flow is posted to SimGrid are timed by the max-min
  // sharing SimGrid would compute (nccl/fluid.hpp), within the pool's limits, with no
  // flows; when one cannot join, their flows are posted with what each still has to send
  // (sim/README.md, "Analytic sharing"). Only without link faults, at bulk granularity;
  // false: always flows.
  bool analytic_sharing = true;
};

namespace detail {
struct CollectiveState;
}

// A started collective or transfer. Copyable; every copy refers to the same operation. Any
// number of actors may wait on it.
class CollectiveHandle {
 public:
  CollectiveHandle() = default;
  bool valid() const { return state_ != nullptr; }
  bool done() const;                             // completed (not hung, not running)
  const nccl::CollectiveResult& result() const;  // the result so far (end_s valid when done())

 private:
  friend class Simulation;
  explicit CollectiveHandle(std::shared_ptr<detail::CollectiveState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::CollectiveState> state_;
};

class Simulation {
 public:
  // Builds the platform for `graph` with NCCL's transport choices applied: when
  // NCCL_NET_GDR_LEVEL forbids GPUDirect RDMA for this cluster's GPU-NIC distance, NIC traffic
  // is staged through host memory (the graph is rebuilt with gpudirect_rdma = false: GPU ->
  // PCIe -> host -> PCIe -> NIC); when NCCL_P2P_LEVEL forbids P2P over NVLink (LOC), peers in a
  // node exchange through host memory over PCIe. Throws std::logic_error when this process
  // already used its SimGrid engine.
  Simulation(const topologies::ClusterGraph& graph, SimulationOptions options = {});
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // The graph actually simulated (see the constructor) and the options.
  const topologies::ClusterGraph& graph() const;
  const SimulationOptions& options() const;
  const Platform& platform() const;

  // ---- Actors -----------------------------------------------------------------------------
  // Runs `body` as an actor on GPU `gpu` (before run(), or from inside another actor). The
  // simulation ends when every such actor has returned; helper actors of the engine never keep
  // it alive (a hung collective does not block run()).
  void spawn(int gpu, const std::string& name, std::function<void()> body);
  // Runs the simulation until every spawned actor has finished. Returns the simulated time (s).
  // May be called once.
  double run();
  // Current simulated time, seconds.
  double now() const;

  // ---- From inside an actor ---------------------------------------------------------------
  void sleep_for(double seconds);
  void sleep_until(double time_s);
  // Keeps GPU `gpu` busy for `seconds` of work at nominal speed (a slowed GPU takes longer;
  // concurrent compute on one GPU shares it). Blocks the calling actor.
  void compute(int gpu, double seconds);
  // Ends the simulation early: kills every actor but the calling one (the step ends on a hang).
  void kill_other_actors();

  // Starts a collective now; returns at once.
  CollectiveHandle start_collective(const nccl::CollectiveRequest& request);
  // NCCL launch semantics: every member calls with the same `key` (unique per collective
  // instance, e.g. "dp3/step0/bucket7") and its member index; the collective starts when the
  // last member has joined. All members get handles to the same collective. Requests must agree.
  CollectiveHandle join_collective(const std::string& key, int member,
                                   const nccl::CollectiveRequest& request);
  // One point-to-point transfer (NCCL send/recv): `bytes` from GPU `src` to GPU `dst`.
  CollectiveHandle start_send(int src_gpu, int dst_gpu, double bytes,
                              const std::string& label = "");
  // Blocks until done. A collective across a down link never completes: use wait_for.
  const nccl::CollectiveResult& wait(const CollectiveHandle& handle);
  // Blocks until done or `timeout_s` of simulated time passed; true when done.
  bool wait_for(const CollectiveHandle& handle, double timeout_s);
  // start_collective + wait.
  nccl::CollectiveResult collective(const nccl::CollectiveRequest& request);

  // ---- Planning (no simulation; any time) -------------------------------------------------
  // NCCL's choice for the request (cached per shape). Throws std::invalid_argument on a bad
  // request (naming the field), std::runtime_error when NCCL_ALGO/NCCL_PROTO leave nothing.
  nccl::CollectivePlan plan(const nccl::CollectiveRequest& request) const;
  // Time the request takes alone on an idle cluster (what bulk simulation gives uncontended),
  // seconds; cached per shape (operation, bytes, placement pattern of the group).
  double uncontended_time_s(const nccl::CollectiveRequest& request) const;

  // ---- Faults (any time; `from_s` in simulated seconds, may be in the past = now) ----------
  // Scales the bandwidth of the named graph link (both directions) by `factor` in (0, 1] from
  // `from_s` until `until_s` (0 = forever). Throws std::invalid_argument for an unknown name
  // (suggesting the nearest) or a factor outside (0, 1].
  void set_link_bandwidth_factor(const std::string& link, double factor, double from_s = 0,
                                 double until_s = 0);
  // Takes the named link down from `from_s` until `until_s` (0 = forever): flows crossing it
  // stop and never complete while it is down, so collectives hang (detect with wait_for).
  void set_link_down(const std::string& link, double from_s = 0, double until_s = 0);
  // GPU `gpu` computes at `speed_factor` in (0, 1] of nominal from `from_s` (0 = now).
  void set_gpu_speed_factor(int gpu, double speed_factor, double from_s = 0);
  // Applies StepFaults: slow GPUs, link faults by name, lost nodes (every link of the node
  // down from at_s). Throws std::invalid_argument naming the offending entry.
  void apply_faults(const StepFaults& faults);

  // ---- Statistics --------------------------------------------------------------------------
  // Bytes per link and per link class, utilisation over [0, now()].
  LinkUsageReport link_usage() const;
  // Collectives and transfers started so far and the flows they simulated. Counted, not kept:
  // the state of a collective lives only while a handle to it or its flows do.
  struct Totals {
    long long collectives = 0;
    long long flows = 0;     // flows of bulk collectives, with those shared analytically
    long long actors = 0;    // SimGrid actors created so far: the callers' and the engine's
    long long analytic = 0;  // collectives shared analytically from start to end
  };
  Totals totals() const;
  // Collectives and transfers whose state is still held: by a handle, by its running flows, or
  // by its pending completion. What a long simulation keeps grows with this, not with totals().
  long long live_collectives() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The gap between granularities under the same concurrent load: runs `requests` all started at
// time 0 on one engine per granularity, each in its own child process (bulk, then step), and
// reports each request's time under both. Forks; call from a process that has not used its
// engine (it does not need to).
struct GranularityGap {
  std::vector<double> bulk_s;  // per request
  std::vector<double> step_s;
  double max_relative_gap = 0;  // max |step - bulk| / step over requests
};
GranularityGap compare_granularities(const topologies::ClusterGraph& graph,
                                     const std::vector<nccl::CollectiveRequest>& requests,
                                     const SimulationOptions& options);

// Standalone use: each request simulated alone on an idle cluster, one after the other in
// simulated time (so results do not interact), in a single SimGrid engine. Uses this process's
// only engine (see sim/platform.hpp); call it at most once per process.
std::vector<nccl::CollectiveResult> simulate_collectives(
    const topologies::ClusterGraph& graph, const std::vector<nccl::CollectiveRequest>& requests,
    const SimulationOptions& options);

}  // namespace clustersim::sim
