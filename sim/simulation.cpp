// Execution of collectives on the SimGrid platform: actors, mailbox flows, faults, statistics.
//
// Why mailboxes and helper actors rather than SimGrid's one-sided Comm::sendto: in SimGrid 3.32
// a one-sided comm is detached, and every detached comm is removed from a std::list of the
// maestro's activities when it ends (CommImpl::finish), which costs O(comms in flight) per
// completion: 16384 concurrent flows took 160 us per completion in our measurement, against
// 3-13 us for mailbox put/get between actors. So each collective runs one small actor per
// endpoint (bulk) or per endpoint and pattern (step), all daemons, on the endpoint's host.
#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <list>
#include <map>
#include <simgrid/kernel/Timer.hpp>
#include <sstream>
#include <stdexcept>

#include "core/json_reader.hpp"
#include "nccl/fluid.hpp"
#include "nccl/planner.hpp"
#include "sim/detail/simgrid_platform.hpp"
#include "sim/isolated.hpp"

namespace sg4 = simgrid::s4u;

namespace clustersim::sim {

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
  std::vector<sg4::SemaphorePtr> waiters;
  std::vector<char> joined;  // join_collective bookkeeping
  int joined_count = 0;
};

}  // namespace detail

using detail::CollectiveState;

bool CollectiveHandle::done() const {
  return state_ && state_->done;
}

const CollectiveResult& CollectiveHandle::result() const {
  if (!state_) throw std::logic_error("CollectiveHandle::result: empty handle");
  return state_->result;
}

namespace {

// The largest slot and pattern numbers a mailbox key can hold (16 bits each).
constexpr int kMaxKeyField = 0xffff;

// Analytic uncontended time: beyond this many flows the bottleneck bound replaces the
// progressive-filling computation (exact for the symmetric patterns of one collective).
constexpr std::size_t kFluidMaxFlows = 20000;

int dummy_payload = 0;

// Stack of the engine's own helper actors: their bodies are flat loops over SimGrid calls
// (SimGrid's Chord example runs 2 million actors on 16 KiB stacks, docs/simgrid.md).
// Actor::set_stacksize takes KiB in 3.32: 16 * 1024 gave every helper a 16 MiB stack
// (200 actors: 3.3 GB of virtual memory against 52 MB with 16).
constexpr unsigned kHelperStackKiB = 16;

// Above this many GPUs actor stacks go without guard pages by default (SimulationOptions).
constexpr int kGuardMaxGpus = 4096;

// Receives a step worker keeps posted ahead of the data it waits for (see spawn_nvls).
constexpr std::size_t kMaxPendingGets = 4;  // flows carry no data; SimGrid copies this pointer

}  // namespace

struct Simulation::Impl {
  SimulationOptions options;
  nccl::TransportChoice transport;
  std::unique_ptr<Platform> platform;
  Platform::Impl* pf = nullptr;
  std::unique_ptr<nccl::Planner> planner;
  mutable std::map<std::string, double> uncontended_cache;
  std::map<std::string, std::shared_ptr<CollectiveState>> joins;
  std::vector<std::shared_ptr<CollectiveState>> all;
  std::vector<int> free_slots;
  int next_slot = 0;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> mailboxes;
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
  void* sink = nullptr;

  // ---- flows ----
  sg4::Mailbox* mailbox(int slot, int pattern, int src, int dst) {
    const std::uint64_t key =
        (static_cast<std::uint64_t>(slot) << 48) | (static_cast<std::uint64_t>(pattern) << 32) |
        (static_cast<std::uint64_t>(src) << 16) | static_cast<std::uint64_t>(dst);
    auto it = mailboxes.find(key);
    if (it != mailboxes.end()) return it->second;
    std::ostringstream name;
    name << 'm' << slot << '.' << pattern << '.' << src << '.' << dst;
    return mailboxes.emplace(key, sg4::Mailbox::by_name(name.str())).first->second;
  }

  bool route_crosses(int src, int dst, int link) {
    for (const auto& h : pf->route(src, dst).hops) {
      if (h.link == link) return true;
    }
    return false;
  }

  struct Put {
    sg4::CommPtr comm;
    std::list<ActiveFlow>::iterator reg;
    int src = 0, dst = 0;
    double wire = 0;
  };

  // Posts a flow (sender side). Waits while its route crosses a down link.
  Put post_put(int slot, int pattern, int src, int dst, double payload, double rate_Bps,
               double eff) {
    while (pf->route_is_down(src, dst)) {
      auto sem = sg4::Semaphore::create(0);
      link_up_waiters.push_back(sem);
      sem->acquire();
    }
    Put p;
    p.src = src;
    p.dst = dst;
    p.wire = payload / eff;
    p.comm = mailbox(slot, pattern, src, dst)
                 ->put_init(&dummy_payload,
                            static_cast<std::uint64_t>(std::llround(std::max(1.0, p.wire))));
    if (rate_Bps > 0) p.comm->set_rate(rate_Bps / eff);
    p.comm->start();
    p.reg = active.insert(active.end(), ActiveFlow{p.comm, src, dst, false});
    return p;
  }
  void finish_put(Put& p) {
    p.comm->wait();
    active.erase(p.reg);
    pf->account(p.src, p.dst, p.wire);
    p.comm = nullptr;  // frees SimGrid's objects now, not when the worker ends
  }

  struct Get {
    sg4::CommPtr comm;
    bool registered = false;
    std::list<ActiveFlow>::iterator reg;
  };
  Get post_get(int slot, int pattern, int src, int dst) {
    Get g;
    g.comm = mailbox(slot, pattern, src, dst)->get_init()->set_dst_data(&sink, sizeof(void*));
    g.comm->start();
    if (pf->route_is_down(src, dst)) {
      g.comm->suspend();
      g.reg = active.insert(active.end(), ActiveFlow{g.comm, src, dst, true});
      g.registered = true;
    }
    return g;
  }
  // Waits for the data; returns when it arrived.
  double finish_get(Get& g) {
    g.comm->wait();
    if (g.registered) active.erase(g.reg);
    const double t = g.comm->get_finish_time();
    g.comm = nullptr;
    return t;
  }

  // ---- faults ----
  void link_down_now(int link) {
    pf->down[static_cast<std::size_t>(link)] += 1;
    pf->refresh_link(link);
    for (auto& f : active) {
      if (!f.suspended && route_crosses(f.src, f.dst, link)) {
        f.comm->suspend();
        f.suspended = true;
      }
    }
  }
  void link_up_now(int link) {
    auto& d = pf->down[static_cast<std::size_t>(link)];
    d = std::max(0, d - 1);
    pf->refresh_link(link);
    for (auto& f : active) {
      if (f.suspended && !pf->route_is_down(f.src, f.dst)) {
        f.comm->resume();
        f.suspended = false;
      }
    }
    std::vector<sg4::SemaphorePtr> w;
    w.swap(link_up_waiters);
    for (auto& s : w) s->release();
  }
  template <class F>
  void at(double time_s, F&& f) {
    if (time_s <= sg4::Engine::get_clock()) {
      f();
    } else {
      simgrid::kernel::timer::Timer::set(time_s, std::forward<F>(f));
    }
  }
  int link_id(const std::string& name) const {
    if (auto l = pf->graph.find_link(name)) return *l;
    std::vector<std::string> names;
    for (const auto& l : pf->graph.links()) names.push_back(l.name);
    std::string msg = "unknown link \"" + name + "\"";
    const std::string near = nearest_name(name, names);
    if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
    throw std::invalid_argument(msg);
  }

  // ---- collectives ----
  int take_slot() {
    if (!free_slots.empty()) {
      const int s = free_slots.back();
      free_slots.pop_back();
      return s;
    }
    if (next_slot > kMaxKeyField) {
      throw std::runtime_error("Simulation: more than 65536 collectives in flight at once");
    }
    return next_slot++;
  }

  void mark_done(CollectiveState& st) {
    st.done = true;
    st.result.completed = true;
    st.result.end_s = sg4::Engine::get_clock();
    if (st.slot >= 0) free_slots.push_back(st.slot);
    std::vector<sg4::SemaphorePtr> w;
    w.swap(st.waiters);
    for (auto& s : w) s->release();
  }

  sg4::ActorPtr helper(int endpoint, const char* what, std::function<void()> body) {
    sg4::ActorPtr a = sg4::Actor::init(what, pf->host(endpoint))
                          ->set_stacksize(kHelperStackKiB)
                          ->start(std::move(body));
    a->daemonize();
    return a;
  }

  // Bulk: one flow per (src, dst) pair, all concurrent, capped so that each ends at the model's
  // bandwidth time when nothing else limits it.
  void run_bulk(const std::shared_ptr<CollectiveState>& st) {
    const Decomposition& d = *st->dec;
    const double eff = d.plan.wire_efficiency;
    std::map<int, std::vector<const nccl::BulkFlow*>> out, in;
    for (const auto& f : d.bulk_flows) {
      out[f.src].push_back(&f);
      in[f.dst].push_back(&f);
    }
    std::set<int> endpoints;
    for (const auto& [e, v] : out) endpoints.insert(e);
    for (const auto& [e, v] : in) endpoints.insert(e);
    std::vector<sg4::ActorPtr> workers;
    const int slot = st->slot;
    const double t = d.bulk_bw_time_s;
    for (int e : endpoints) {
      std::vector<const nccl::BulkFlow*> o = out[e], i = in[e];
      workers.push_back(helper(e, "bulk", [this, slot, t, eff, o, i] {
        std::vector<Get> gets;
        gets.reserve(i.size());
        for (const auto* f : i) gets.push_back(post_get(slot, 0, f->src, f->dst));
        std::vector<Put> puts;
        puts.reserve(o.size());
        for (const auto* f : o) {
          puts.push_back(
              post_put(slot, 0, f->src, f->dst, f->payload, t > 0 ? f->payload / t : 0, eff));
        }
        for (auto& p : puts) finish_put(p);
        for (auto& g : gets) finish_get(g);
      }));
    }
    st->result.flows += static_cast<long long>(d.bulk_flows.size());
    for (const auto& f : d.bulk_flows) st->result.wire_bytes += f.payload / eff;
    for (auto& w : workers) w->join();
  }

  // Step granularity: NCCL's per-step structure, one program per pattern member.
  void spawn_ring(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::RingPattern& rp, int pid) {
    const int k = static_cast<int>(rp.order.size());
    if (k < 2) return;
    const double eff = st->dec->plan.wire_efficiency;
    const int slot = st->slot;
    const bool chain =
        rp.kind == nccl::RingKind::chain_forward || rp.kind == nccl::RingKind::chain_reduce;
    const int steps = rp.kind == nccl::RingKind::all_reduce ? 2 * (k - 1) : k - 1;
    for (int i = 0; i < k; ++i) {
      const int me = rp.order[static_cast<std::size_t>(i)];
      const int prev = rp.order[static_cast<std::size_t>((i - 1 + k) % k)];
      const int next = rp.order[static_cast<std::size_t>((i + 1) % k)];
      const bool has_prev = !chain || i > 0;
      const bool has_next = !chain || i < k - 1;
      const nccl::RingPattern* p = &rp;
      workers.push_back(helper(me, "ring", [=, this] {
        const double rate = p->edge_rate_Bps;
        if (chain) {
          const int K = p->chunks;
          const double b = p->payload / K;
          std::vector<Get> gets;
          if (has_prev) gets.push_back(post_get(slot, pid, prev, me));
          Put put;
          bool put_live = false;
          for (int c = 0; c < K; ++c) {
            if (has_prev) {
              if (c + 1 < K) gets.push_back(post_get(slot, pid, prev, me));
              finish_get(gets[static_cast<std::size_t>(c)]);
            }
            if (has_next) {
              if (put_live) finish_put(put);
              put = post_put(slot, pid, me, next, b, rate, eff);
              put_live = true;
            }
          }
          if (put_live) finish_put(put);
          return;
        }
        const int L = p->chunks;
        const double b = p->payload / (static_cast<double>(k) * L);
        Put put;
        bool put_live = false;
        std::vector<Get> gets;
        gets.reserve(static_cast<std::size_t>(L * steps));
        std::size_t waited = 0;
        for (int l = 0; l < L; ++l) {
          for (int j = 0; j < steps; ++j) {
            if (j > 0) finish_get(gets[waited++]);
            gets.push_back(post_get(slot, pid, prev, me));
            if (put_live) finish_put(put);
            put = post_put(slot, pid, me, next, b, rate, eff);
            put_live = true;
          }
          // The loop's last arrival ends it; the next loop starts with local data.
          finish_get(gets[waited++]);
        }
        if (put_live) finish_put(put);
      }));
    }
  }

  void spawn_tree(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::TreePattern& tp, int pid) {
    const int nn = static_cast<int>(tp.nodes.size());
    if (nn < 2) return;
    const double eff = st->dec->plan.wire_efficiency;
    const int slot = st->slot;
    std::vector<std::vector<int>> children(static_cast<std::size_t>(nn));
    for (int v = 0; v < nn; ++v) {
      const int pv = tp.parent[static_cast<std::size_t>(v)];
      if (pv >= 0)
        children[static_cast<std::size_t>(pv)].push_back(tp.nodes[static_cast<std::size_t>(v)]);
    }
    const nccl::TreePattern* p = &tp;
    for (int v = 0; v < nn; ++v) {
      const int me = tp.nodes[static_cast<std::size_t>(v)];
      const int pv = tp.parent[static_cast<std::size_t>(v)];
      const int parent = pv >= 0 ? tp.nodes[static_cast<std::size_t>(pv)] : -1;
      const std::vector<int> kids = children[static_cast<std::size_t>(v)];
      // The root's reduced chunks feed its broadcast: a semaphore between its two workers.
      auto ready = sg4::Semaphore::create(0);
      // Up: reduce from the children, send to the parent.
      workers.push_back(helper(me, "tree-up", [=, this] {
        const int K = p->chunks;
        const double b = p->payload / K;
        std::vector<std::vector<Get>> gets(kids.size());
        for (std::size_t c = 0; c < kids.size(); ++c)
          gets[c].push_back(post_get(slot, pid, kids[c], me));
        Put put;
        bool put_live = false;
        for (int ch = 0; ch < K; ++ch) {
          for (std::size_t c = 0; c < kids.size(); ++c) {
            if (ch + 1 < K) gets[c].push_back(post_get(slot, pid, kids[c], me));
            finish_get(gets[c][static_cast<std::size_t>(ch)]);
          }
          if (parent >= 0) {
            if (put_live) finish_put(put);
            put = post_put(slot, pid, me, parent, b, p->edge_rate_Bps, eff);
            put_live = true;
          } else {
            ready->release();
          }
        }
        if (put_live) finish_put(put);
      }));
      // Down: receive from the parent (or the root's own reduction), send to the children.
      workers.push_back(helper(me, "tree-down", [=, this] {
        const int K = p->chunks;
        const double b = p->payload / K;
        std::vector<Get> gets;
        if (parent >= 0) gets.push_back(post_get(slot, pid, parent, me));
        std::vector<Put> puts(kids.size());
        std::vector<char> live(kids.size(), 0);
        for (int ch = 0; ch < K; ++ch) {
          if (parent >= 0) {
            if (ch + 1 < K) gets.push_back(post_get(slot, pid, parent, me));
            finish_get(gets[static_cast<std::size_t>(ch)]);
          } else {
            ready->acquire();
          }
          for (std::size_t c = 0; c < kids.size(); ++c) {
            if (live[c]) finish_put(puts[c]);
            puts[c] = post_put(slot, pid, me, kids[c], b, p->edge_rate_Bps, eff);
            live[c] = 1;
          }
        }
        for (std::size_t c = 0; c < kids.size(); ++c) {
          if (live[c]) finish_put(puts[c]);
        }
      }));
    }
  }

  void spawn_nvls(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                  const nccl::NvlsPattern& np, int pid) {
    const double eff = st->dec->plan.wire_efficiency;
    const int slot = st->slot;
    const nccl::NvlsPattern* p = &np;
    for (int g : np.gpus) {
      workers.push_back(helper(g, "nvls-gpu", [=, this] {
        // Outstanding receives are bounded: SimGrid 3.32 removes a finished comm from its
        // actor's std::list of activities, a cost linear in what the actor has pending.
        const int K = p->chunks;
        std::vector<Get> gets;
        gets.reserve(static_cast<std::size_t>(K));
        std::size_t waited = 0;
        Put put;
        bool live = false;
        for (int c = 0; c < K; ++c) {
          gets.push_back(post_get(slot, pid, p->nvswitch, g));
          if (gets.size() - waited > kMaxPendingGets) finish_get(gets[waited++]);
          if (live) finish_put(put);
          put = post_put(slot, pid, g, p->nvswitch, p->up_bytes / K, p->up_rate_Bps, eff);
          live = true;
        }
        if (live) finish_put(put);
        for (; waited < gets.size(); ++waited) finish_get(gets[waited]);
      }));
    }
    workers.push_back(helper(np.nvswitch, "nvls-switch", [=, this] {
      const int K = p->chunks;
      const std::size_t n = p->gpus.size();
      std::vector<std::vector<Get>> gets(n);
      for (std::size_t i = 0; i < n; ++i)
        gets[i].push_back(post_get(slot, pid, p->gpus[i], p->nvswitch));
      std::vector<Put> puts(n);
      std::vector<char> live(n, 0);
      for (int c = 0; c < K; ++c) {
        for (std::size_t i = 0; i < n; ++i) {
          if (c + 1 < K) gets[i].push_back(post_get(slot, pid, p->gpus[i], p->nvswitch));
          finish_get(gets[i][static_cast<std::size_t>(c)]);
        }
        for (std::size_t i = 0; i < n; ++i) {
          if (live[i]) finish_put(puts[i]);
          puts[i] = post_put(slot, pid, p->nvswitch, p->gpus[i], p->down_bytes / K,
                             p->down_rate_Bps, eff);
          live[i] = 1;
        }
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (live[i]) finish_put(puts[i]);
      }
    }));
  }

  void spawn_direct(std::vector<sg4::ActorPtr>& workers, const std::shared_ptr<CollectiveState>& st,
                    const nccl::Phase& ph, int pid) {
    const double eff = st->dec->plan.wire_efficiency;
    const int slot = st->slot;
    const double t = ph.bw_time_s;
    std::map<int, std::vector<const nccl::DirectFlow*>> out, in;
    for (const auto& f : ph.direct) {
      out[f.src].push_back(&f);
      in[f.dst].push_back(&f);
    }
    std::set<int> endpoints;
    for (const auto& [e, v] : out) endpoints.insert(e);
    for (const auto& [e, v] : in) endpoints.insert(e);
    for (int e : endpoints) {
      std::vector<const nccl::DirectFlow*> o = out[e], i = in[e];
      workers.push_back(helper(e, "p2p", [=, this] {
        std::vector<Get> gets;
        for (const auto* f : i) gets.push_back(post_get(slot, pid, f->src, f->dst));
        std::vector<Put> puts;
        for (const auto* f : o) {
          puts.push_back(
              post_put(slot, pid, f->src, f->dst, f->payload, t > 0 ? f->payload / t : 0, eff));
        }
        for (auto& p : puts) finish_put(p);
        for (auto& g : gets) finish_get(g);
      }));
    }
  }

  void run_step(const std::shared_ptr<CollectiveState>& st) {
    const Decomposition& d = *st->dec;
    int pid = 0;
    std::vector<sg4::ActorPtr> workers;
    for (const nccl::Phase& ph : d.phases) {
      sg4::this_actor::sleep_for(ph.alpha_s);
      for (const auto& rp : ph.rings) spawn_ring(workers, st, rp, ++pid);
      for (const auto& tp : ph.trees) spawn_tree(workers, st, tp, ++pid);
      for (const auto& np : ph.nvls) spawn_nvls(workers, st, np, ++pid);
      if (!ph.direct.empty()) spawn_direct(workers, st, ph, ++pid);
      if (pid > kMaxKeyField)
        throw std::runtime_error("Simulation: too many patterns in one collective");
      if (!d.pipelined_phases) {
        for (auto& w : workers) w->join();
        workers.clear();
      }
    }
    for (auto& w : workers) w->join();
    // Flows and bytes of the step granularity, from the patterns.
    const double eff = d.plan.wire_efficiency;
    for (const auto& f : d.bulk_flows) st->result.wire_bytes += f.payload / eff;
    long long flows = 0;
    for (const auto& ph : d.phases) {
      for (const auto& rp : ph.rings) {
        const long long k = static_cast<long long>(rp.order.size());
        const bool chain =
            rp.kind == nccl::RingKind::chain_forward || rp.kind == nccl::RingKind::chain_reduce;
        const long long steps = rp.kind == nccl::RingKind::all_reduce ? 2 * (k - 1) : k - 1;
        flows += chain ? (k - 1) * rp.chunks : k * steps * rp.chunks;
      }
      for (const auto& tp : ph.trees)
        flows += 2 * static_cast<long long>(tp.nodes.size() - 1) * tp.chunks;
      for (const auto& np : ph.nvls)
        flows += 2 * static_cast<long long>(np.gpus.size()) * np.chunks;
      flows += static_cast<long long>(ph.direct.size());
    }
    st->result.flows += flows;
  }

  void launch(const std::shared_ptr<CollectiveState>& st) {
    st->launched = true;
    st->result.start_s = sg4::Engine::get_clock();
    const CollectivePlan& plan = st->dec->plan;
    if (st->request.contention_free) {
      const double t = uncontended(st->request, *st->dec);
      at(st->result.start_s + t, [this, st] {
        const double eff = st->dec->plan.wire_efficiency;
        for (const auto& f : st->dec->bulk_flows) {
          pf->account(f.src, f.dst, f.payload / eff);
          st->result.wire_bytes += f.payload / eff;
        }
        mark_done(*st);
      });
      return;
    }
    st->slot = take_slot();
    const int host = st->request.gpus.front();
    helper(host, "collective", [this, st, plan] {
      if (plan.granularity == Granularity::bulk || st->dec->phases.empty()) {
        sg4::this_actor::sleep_for(plan.latency_s);
        run_bulk(st);
      } else {
        run_step(st);
      }
      mark_done(*st);
    });
  }

  std::shared_ptr<CollectiveState> make_state(const CollectiveRequest& r) {
    auto st = std::make_shared<CollectiveState>();
    st->request = r;
    st->dec = planner->decompose(r, options.granularity);
    st->result.plan = st->dec->plan;
    st->result.label = r.label;
    all.push_back(st);
    return st;
  }

  double uncontended(const CollectiveRequest& r, const Decomposition& d) const {
    const std::string key = planner->shape_key(r);
    auto it = uncontended_cache.find(key);
    if (it != uncontended_cache.end()) return it->second;
    const double eff = d.plan.wire_efficiency;
    const double t_bw = d.bulk_bw_time_s;
    double makespan = 0;
    const auto capacity = [this](int link) {
      return pf->graph.link(link).bandwidth_Bps * options.network.bandwidth_factor;
    };
    if (d.bulk_flows.size() <= kFluidMaxFlows) {
      std::vector<nccl::FluidFlow> flows;
      flows.reserve(d.bulk_flows.size());
      for (const auto& f : d.bulk_flows) {
        flows.push_back({planner->router().route(f.src, f.dst), f.payload / eff,
                         t_bw > 0 ? f.payload / t_bw / eff : 0});
      }
      makespan = nccl::fluid_makespan_s(flows, capacity);
    } else {
      std::map<std::pair<int, int>, double> load;
      for (const auto& f : d.bulk_flows) {
        for (const auto& h : planner->router().route(f.src, f.dst)) {
          load[{h.link, static_cast<int>(h.dir)}] += f.payload / eff;
        }
      }
      makespan = t_bw;
      for (const auto& [k, bytes] : load) makespan = std::max(makespan, bytes / capacity(k.first));
    }
    const double t = d.plan.latency_s + makespan;
    uncontended_cache.emplace(key, t);
    return t;
  }
};

// ---------------------------------------------------------------------------------------------

Simulation::Simulation(const topologies::ClusterGraph& graph, SimulationOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->transport = nccl::choose_transport(graph.spec(), impl_->options.nccl);
  const bool guard = impl_->options.actor_stack_guard.value_or(graph.num_gpus() <= kGuardMaxGpus);
  if ((!impl_->transport.gpudirect_rdma || !impl_->transport.p2p_nvlink) && !graph.has_hosts()) {
    ClusterSpec spec = graph.spec();
    spec.gpudirect_rdma = false;
    const auto staged = topologies::ClusterGraph::build(spec, graph.num_gpus());
    impl_->platform =
        std::make_unique<Platform>(staged, impl_->options.network, impl_->transport.p2p_nvlink,
                                   impl_->options.actor_stack_KiB, guard);
  } else {
    impl_->platform =
        std::make_unique<Platform>(graph, impl_->options.network, impl_->transport.p2p_nvlink,
                                   impl_->options.actor_stack_KiB, guard);
  }
  impl_->pf = &impl_->platform->impl();
  impl_->planner = std::make_unique<nccl::Planner>(
      impl_->pf->graph, impl_->options.nccl, impl_->options.arch, impl_->options.cpu,
      impl_->transport, impl_->options.network_calibration);
}

Simulation::~Simulation() = default;

const topologies::ClusterGraph& Simulation::graph() const {
  return impl_->pf->graph;
}
const SimulationOptions& Simulation::options() const {
  return impl_->options;
}
const Platform& Simulation::platform() const {
  return *impl_->platform;
}

void Simulation::spawn(int gpu, const std::string& name, std::function<void()> body) {
  if (gpu < 0 || gpu >= impl_->pf->num_gpus) {
    throw std::invalid_argument("Simulation::spawn: GPU " + std::to_string(gpu) + " out of range");
  }
  Impl* impl = impl_.get();
  sg4::Actor::create(name, impl_->pf->host(gpu), [impl, body = std::move(body)] {
    try {
      body();
    } catch (const simgrid::ForcefulKillException&) {
      throw;
    } catch (...) {
      if (!impl->actor_error) impl->actor_error = std::current_exception();
    }
  });
}

double Simulation::run() {
  if (impl_->ran) throw std::logic_error("Simulation::run: already ran");
  impl_->ran = true;
  impl_->pf->engine->run();
  if (impl_->actor_error) std::rethrow_exception(impl_->actor_error);
  return sg4::Engine::get_clock();
}

double Simulation::now() const {
  return sg4::Engine::get_clock();
}

void Simulation::sleep_for(double seconds) {
  sg4::this_actor::sleep_for(seconds);
}
void Simulation::sleep_until(double time_s) {
  sg4::this_actor::sleep_until(time_s);
}

void Simulation::compute(int gpu, double seconds) {
  if (gpu < 0 || gpu >= impl_->pf->num_gpus) {
    throw std::invalid_argument("Simulation::compute: GPU " + std::to_string(gpu) +
                                " out of range");
  }
  if (!(seconds >= 0)) throw std::invalid_argument("Simulation::compute: seconds must be >= 0");
  if (seconds == 0) return;
  impl_->pf->host(gpu)->execute(seconds * Platform::Impl::kNominalSpeed);
}

void Simulation::kill_other_actors() {
  sg4::Actor::kill_all();
}

CollectiveHandle Simulation::start_collective(const CollectiveRequest& request) {
  auto st = impl_->make_state(request);
  impl_->launch(st);
  return CollectiveHandle(st);
}

CollectiveHandle Simulation::join_collective(const std::string& key, int member,
                                             const CollectiveRequest& request) {
  auto& slot = impl_->joins[key];
  if (!slot) {
    slot = impl_->make_state(request);
    slot->joined.assign(request.gpus.size(), 0);
  }
  auto st = slot;
  const CollectiveRequest& first = st->request;
  if (first.op != request.op || first.gpus != request.gpus || first.bytes != request.bytes) {
    throw std::invalid_argument("Simulation::join_collective: member " + std::to_string(member) +
                                " of \"" + key + "\" disagrees with the first member's request");
  }
  if (member < 0 || member >= static_cast<int>(st->joined.size()) ||
      st->joined[static_cast<std::size_t>(member)]) {
    throw std::invalid_argument("Simulation::join_collective: member " + std::to_string(member) +
                                " of \"" + key + "\" is out of range or joined twice");
  }
  st->joined[static_cast<std::size_t>(member)] = 1;
  if (++st->joined_count == static_cast<int>(st->joined.size())) {
    impl_->joins.erase(key);
    impl_->launch(st);
  }
  return CollectiveHandle(st);
}

CollectiveHandle Simulation::start_send(int src_gpu, int dst_gpu, double bytes,
                                        const std::string& label) {
  CollectiveRequest r;
  r.op = CollectiveOp::send_recv;
  r.gpus = {src_gpu, dst_gpu};
  r.bytes = bytes;
  r.one_way = true;
  r.label = label;
  return start_collective(r);
}

const CollectiveResult& Simulation::wait(const CollectiveHandle& handle) {
  if (!handle.state_) throw std::logic_error("Simulation::wait: empty handle");
  auto& st = *handle.state_;
  if (!st.done) {
    auto sem = sg4::Semaphore::create(0);
    st.waiters.push_back(sem);
    sem->acquire();
  }
  return st.result;
}

bool Simulation::wait_for(const CollectiveHandle& handle, double timeout_s) {
  if (!handle.state_) throw std::logic_error("Simulation::wait_for: empty handle");
  auto& st = *handle.state_;
  if (st.done) return true;
  auto sem = sg4::Semaphore::create(0);
  st.waiters.push_back(sem);
  return !sem->acquire_timeout(timeout_s) || st.done;
}

CollectiveResult Simulation::collective(const CollectiveRequest& request) {
  return wait(start_collective(request));
}

CollectivePlan Simulation::plan(const CollectiveRequest& request) const {
  return impl_->planner->plan(request, impl_->options.granularity);
}

double Simulation::uncontended_time_s(const CollectiveRequest& request) const {
  const auto d = impl_->planner->decompose(request, impl_->options.granularity);
  return impl_->uncontended(request, *d);
}

void Simulation::set_link_bandwidth_factor(const std::string& link, double factor, double from_s,
                                           double until_s) {
  const int id = impl_->link_id(link);
  if (!(factor > 0 && factor <= 1)) {
    throw std::invalid_argument("set_link_bandwidth_factor: factor for \"" + link +
                                "\" must be in (0, 1]");
  }
  Impl* impl = impl_.get();
  impl->at(from_s, [impl, id, factor] {
    impl->pf->factor[static_cast<std::size_t>(id)] = factor;
    impl->pf->refresh_link(id);
  });
  if (until_s > 0) {
    impl->at(until_s, [impl, id] {
      impl->pf->factor[static_cast<std::size_t>(id)] = 1.0;
      impl->pf->refresh_link(id);
    });
  }
}

void Simulation::set_link_down(const std::string& link, double from_s, double until_s) {
  const int id = impl_->link_id(link);
  Impl* impl = impl_.get();
  impl->at(from_s, [impl, id] { impl->link_down_now(id); });
  if (until_s > 0) impl->at(until_s, [impl, id] { impl->link_up_now(id); });
}

void Simulation::set_gpu_speed_factor(int gpu, double speed_factor, double from_s) {
  if (gpu < 0 || gpu >= impl_->pf->num_gpus) {
    throw std::invalid_argument("set_gpu_speed_factor: GPU " + std::to_string(gpu) +
                                " out of range");
  }
  if (!(speed_factor > 0 && speed_factor <= 1)) {
    throw std::invalid_argument("set_gpu_speed_factor: speed_factor must be in (0, 1]");
  }
  const int steps = Platform::Impl::kSpeedSteps;
  const int state =
      std::clamp(static_cast<int>(std::lround((1 - speed_factor) * steps)), 0, steps - 1);
  sg4::Host* h = impl_->pf->host(gpu);
  impl_->at(from_s, [h, state] { h->set_pstate(state); });
}

void Simulation::apply_faults(const StepFaults& faults) {
  for (std::size_t i = 0; i < faults.slow_gpus.size(); ++i) {
    const auto& f = faults.slow_gpus[i];
    try {
      set_gpu_speed_factor(f.rank, f.speed_factor, f.from_s);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("slow_gpus[" + std::to_string(i) + "]: " + e.what());
    }
  }
  for (std::size_t i = 0; i < faults.links.size(); ++i) {
    const auto& f = faults.links[i];
    try {
      if (f.down) {
        set_link_down(f.link, f.from_s, f.until_s);
      } else {
        set_link_bandwidth_factor(f.link, f.bandwidth_factor, f.from_s, f.until_s);
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("links[" + std::to_string(i) + "]: " + e.what());
    }
  }
  for (std::size_t i = 0; i < faults.lost_nodes.size(); ++i) {
    const auto& f = faults.lost_nodes[i];
    if (f.node < 0 || f.node >= impl_->pf->graph.num_nodes()) {
      throw std::invalid_argument("lost_nodes[" + std::to_string(i) + "]: node " +
                                  std::to_string(f.node) + " out of range");
    }
    const std::string prefix = "node" + std::to_string(f.node) + "/";
    for (const auto& l : impl_->pf->graph.links()) {
      if (l.name.rfind(prefix, 0) == 0) set_link_down(l.name, f.at_s);
    }
    for (int g = 0; g < impl_->pf->num_gpus; ++g) {
      if (impl_->pf->graph.node_of_gpu(g) == f.node)
        set_gpu_speed_factor(g, 1.0 / Platform::Impl::kSpeedSteps, f.at_s);
    }
  }
}

LinkUsageReport Simulation::link_usage() const {
  return impl_->platform->link_usage(now());
}

std::vector<CollectiveResult> Simulation::results() const {
  std::vector<CollectiveResult> out;
  out.reserve(impl_->all.size());
  for (const auto& st : impl_->all) out.push_back(st->result);
  return out;
}

// ---------------------------------------------------------------------------------------------

std::vector<CollectiveResult> simulate_collectives(const topologies::ClusterGraph& graph,
                                                   const std::vector<CollectiveRequest>& requests,
                                                   const SimulationOptions& options) {
  Simulation sim(graph, options);
  std::vector<CollectiveResult> out;
  if (requests.empty()) return out;
  for (const auto& r : requests) sim.plan(r);  // validate before running
  sim.spawn(requests.front().gpus.front(), "driver", [&] {
    for (const auto& r : requests) out.push_back(sim.collective(r));
  });
  sim.run();
  return out;
}

GranularityGap compare_granularities(const topologies::ClusterGraph& graph,
                                     const std::vector<CollectiveRequest>& requests,
                                     const SimulationOptions& options) {
  GranularityGap gap;
  for (Granularity g : {Granularity::bulk, Granularity::step}) {
    const std::vector<double> times = run_isolated_numbers([&] {
      SimulationOptions o = options;
      o.granularity = g;
      Simulation sim(graph, o);
      std::vector<double> t(requests.size(), -1);
      sim.spawn(requests.front().gpus.front(), "driver", [&] {
        std::vector<CollectiveHandle> hs;
        for (const auto& r : requests) {
          CollectiveRequest rr = r;
          rr.granularity = g;
          hs.push_back(sim.start_collective(rr));
        }
        for (std::size_t i = 0; i < hs.size(); ++i) t[i] = sim.wait(hs[i]).time_s();
      });
      sim.run();
      return t;
    });
    (g == Granularity::bulk ? gap.bulk_s : gap.step_s) = times;
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const double s = gap.step_s[i];
    if (s > 0)
      gap.max_relative_gap = std::max(gap.max_relative_gap, std::abs(s - gap.bulk_s[i]) / s);
  }
  return gap;
}

}  // namespace clustersim::sim
