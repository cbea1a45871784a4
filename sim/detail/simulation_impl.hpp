// Internal to sim/: the state of a Simulation, shared by simulation.cpp (the public API and the
// launch of collectives), flows.cpp (flows between endpoints, link faults) and
// collective_programs.cpp (the engine actors that run a collective's flows, bulk and step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nccl/fluid.hpp"
#include "nccl/planner.hpp"
#include "sim/detail/simgrid_platform.hpp"
#include "sim/simulation.hpp"

namespace clustersim::sim {

namespace sg4 = simgrid::s4u;

using nccl::CollectiveOp;
using nccl::CollectivePlan;
using nccl::CollectiveRequest;
using nccl::CollectiveResult;
using nccl::Decomposition;
using nccl::Granularity;

namespace detail {

struct CollectiveState {
  CollectiveRequest request;
  std::shared_ptr<const Decomposition> dec;
  CollectiveResult result;
  bool launched = false;
  bool done = false;
  int slot = -1;
  int senders_left = 0;  // bulk: endpoint jobs whose flows have not all ended
  std::vector<sg4::SemaphorePtr> waiters;
  std::vector<char> joined;  // join_collective bookkeeping
  int joined_count = 0;
  std::shared_ptr<long long> live;  // the engine's count of states alive (Simulation::Impl)

  CollectiveState() = default;
  CollectiveState(const CollectiveState&) = delete;
  CollectiveState& operator=(const CollectiveState&) = delete;
  ~CollectiveState() {
    if (live) --*live;
  }
};

// Analytic uncontended time: beyond this many flows the bottleneck bound replaces the
// progressive-filling computation (exact for the symmetric patterns of one collective); the
// analytic pool holds no more flows than this.
constexpr std::size_t kFluidMaxFlows = 20000;
// The analytic pool shares all of its links again at every start and flow end: progressive
// filling passes over every flow once per distinct rate level, about one level per collective.
// Members x flows bounds that work per event; beyond it the flows are posted to SimGrid, whose
// solver updates only what changed. (Llama 3 405B on 16384 GPUs peaks at 128 x 16384.)
constexpr std::size_t kPoolMaxWork = std::size_t{1} << 22;

// The largest slot and pattern numbers a mailbox key can hold (16 bits each).
constexpr int kMaxKeyField = 0xffff;

// Stack of the engine's own helper actors: their bodies are flat loops over SimGrid calls
// (SimGrid's Chord example runs 2 million actors on 16 KiB stacks, docs/simgrid.md).
// Actor::set_stacksize takes KiB in 3.32: 16 * 1024 gave every helper a 16 MiB stack
// (200 actors: 3.3 GB of virtual memory against 52 MB with 16).
constexpr unsigned kHelperStackKiB = 16;

// A long-lived engine actor on one endpoint's host that runs the bulk jobs given to it, one at a
// time: it posts the endpoint's outgoing flows of one collective and waits for them. Each host
// keeps as many as it ever had bulk jobs at once, so a step creates a few actors per endpoint,
// not one per endpoint and collective.
struct BulkWorker {
  int endpoint = 0;
  sg4::ActorPtr actor;
  sg4::SemaphorePtr wake;
  std::function<void()> job;
};

// Receives a step worker keeps posted ahead of the data it waits for (see spawn_nvls).
constexpr std::size_t kMaxPendingGets = 4;  // flows carry no data; SimGrid copies this pointer

}  // namespace detail

using detail::CollectiveState;

struct Simulation::Impl {
  SimulationOptions options;
  nccl::TransportChoice transport;
  std::unique_ptr<Platform> platform;
  Platform::Impl* pf = nullptr;
  std::unique_ptr<nccl::Planner> planner;
  mutable std::map<std::string, double> uncontended_cache;
  std::map<std::string, std::shared_ptr<CollectiveState>> joins;
  Totals totals;  // collectives started, flows simulated
  // States alive; shared with each state, which may outlive the engine in a handle.
  std::shared_ptr<long long> live = std::make_shared<long long>(0);
  std::vector<int> free_slots;
  int next_slot = 0;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> mailboxes;
  // Bulk flows: one mailbox per (slot, destination) whose permanent receiver is an actor on the
  // destination's host, so that a put starts its flow at once, with no get (see flows.cpp).
  std::unordered_map<std::uint64_t, sg4::Mailbox*> bulk_mailboxes;
  std::vector<std::unique_ptr<detail::BulkWorker>> bulk_workers;    // all of them, owned
  std::vector<std::vector<detail::BulkWorker*>> idle_bulk_workers;  // per endpoint
  std::vector<sg4::ActorPtr> receivers;                             // per endpoint, or null
  std::shared_ptr<long long> actors_created = std::make_shared<long long>(0);
  struct ActiveFlow {
    sg4::CommPtr comm;
    int src = 0;
    int dst = 0;
    bool suspended = false;
  };
  std::list<ActiveFlow> active;
  std::vector<sg4::SemaphorePtr> link_up_waiters;
  std::exception_ptr actor_error;
  bool ran = false;
  bool deadlocked = false;  // SimGrid found actors blocked with nothing left to happen
  void* sink = nullptr;

  // ---- bulk collectives shared analytically (options.analytic_sharing; sim/README.md) ----
  int flowing = 0;            // collectives whose flows are posted and have not all ended
  bool pool_allowed = false;  // the option, bulk granularity, no link fault so far
  struct Pooled {
    std::shared_ptr<CollectiveState> st;
    std::size_t first = 0;  // its first flow in the pool's network
    int flows_left = 0;
  };
  // Collectives timed by the engine's own max-min sharing while no flow is posted to SimGrid.
  struct Pool {
    // Kept between uses (cleared, not rebuilt): its table of links and their capacities stays.
    std::unique_ptr<nccl::FluidNetwork> net;
    bool in_use = false;  // net holds the flows of members (or ended ones) since it was cleared
    std::map<long long, Pooled> members;  // by the order they joined
    std::vector<long long> owner;         // per flow of net: its member
    std::size_t flows = 0;                // active flows
    double t = 0;                         // when net's rates were last run up to
    long long next_id = 0;
    long long generation = 0;  // the pending timer's; older timers do nothing
  } pool;

  // ---- flows ----
  sg4::Mailbox* mailbox(int slot, int pattern, int src, int dst);

  bool route_crosses(int src, int dst, int link);

  struct Put {
    sg4::CommPtr comm;
    std::list<ActiveFlow>::iterator reg;
    int src = 0, dst = 0;
    double wire = 0;
  };

  // Posts a flow (sender side). Waits while its route crosses a down link.
  Put post_put_into(sg4::Mailbox* m, int src, int dst, double payload, double rate_Bps, double eff);
  Put post_put(int slot, int pattern, int src, int dst, double payload, double rate_Bps,
               double eff);
  void finish_put(Put& p);

  struct Get {
    sg4::CommPtr comm;
    bool registered = false;
    std::list<ActiveFlow>::iterator reg;
  };
  Get post_get(int slot, int pattern, int src, int dst);
  sg4::Mailbox* bulk_mailbox(int slot, int dst);
  // Waits for the data; returns when it arrived.
  double finish_get(Get& g);

  // ---- faults ----
  void link_down_now(int link);
  void link_up_now(int link);
  // Runs f at simulated time time_s (now if that has passed).
  void at(double time_s, std::function<void()> f);
  int link_id(const std::string& name) const;

  // ---- collectives ----
  int take_slot();

  void mark_done(CollectiveState& st);

  sg4::ActorPtr helper(int endpoint, const char* what, std::function<void()> body);

  // Bulk: one flow per (src, dst) pair, all concurrent, capped so that each ends at the model's
  // bandwidth time when nothing else limits it. Each source endpoint's flows are a job for an
  // idle bulk worker on its host; the last job to end ends the collective.
  void run_bulk(const std::shared_ptr<CollectiveState>& st);
  // Posts a bulk collective's flows; with wire_left, each flow's wire bytes still to send (the
  // rest is accounted now).
  void post_bulk(const std::shared_ptr<CollectiveState>& st,
                 const std::vector<double>* wire_left = nullptr);
  // The pool (runs in the maestro): st joins it; the pool's rates run up to now; they are
  // shared again and the next flow end is timed; every member's flows are posted to SimGrid
  // with what each still has to send (a collective that cannot join is about to start flows).
  void pool_join(const std::shared_ptr<CollectiveState>& st);
  void pool_run(double dt);
  void pool_schedule();
  void pool_materialize();
  // The pool's network drops its flows (it keeps its links); no member is left.
  void pool_clear();
  // No more analytic sharing (a fault, a step-granularity collective).
  void stop_pool();
  double capacity_Bps(int link) const;
  // Every flow of d accounted on its links, whole (a collective timed without its flows).
  void account_flows(const Decomposition& d);
  // d's bulk flows as the fluid model takes them (routed once per decomposition: a planner
  // keeps every decomposition it built, so the cache's keys stay valid).
  const std::vector<nccl::FluidFlow>& fluid_flows(const Decomposition& d) const;
  mutable std::unordered_map<const Decomposition*, std::vector<nccl::FluidFlow>> fluid_flow_cache;
  detail::BulkWorker* idle_bulk_worker(int endpoint);
  sg4::ActorPtr receiver(int endpoint);
  void end_bulk(const std::shared_ptr<CollectiveState>& st);

  // Step granularity: NCCL's per-step structure, one program per pattern member.
  void spawn_ring(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::RingPattern& rp, int pid);

  void spawn_tree(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::TreePattern& tp, int pid);

  void spawn_nvls(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::NvlsPattern& np, int pid);

  void spawn_direct(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                    const nccl::Phase& ph, int pid);

  void run_step(const std::shared_ptr<CollectiveState>& st);

  void launch(const std::shared_ptr<CollectiveState>& st);

  std::shared_ptr<CollectiveState> make_state(const CollectiveRequest& r);

  double uncontended(const CollectiveRequest& r, const Decomposition& d) const;
};

}  // namespace clustersim::sim
