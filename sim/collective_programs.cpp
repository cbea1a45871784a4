// The engine actors that run one collective's flows: bulk (one flow per endpoint pair, posted by
// long-lived workers) and step granularity (NCCL's per-step structure: rings, trees, NVLS,
// direct transfers).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "nccl/fluid.hpp"
#include "sim/detail/simulation_impl.hpp"

namespace clustersim::sim {

using detail::kMaxKeyField;
using detail::kMaxPendingGets;

// An idle bulk worker on the endpoint's host; a new one when all there are busy.
detail::BulkWorker* Simulation::Impl::idle_bulk_worker(int endpoint) {
  auto& idle = idle_bulk_workers[static_cast<std::size_t>(endpoint)];
  if (!idle.empty()) {
    detail::BulkWorker* w = idle.back();
    idle.pop_back();
    return w;
  }
  auto owned = std::make_unique<detail::BulkWorker>();
  detail::BulkWorker* w = owned.get();
  w->endpoint = endpoint;
  w->wake = sg4::Semaphore::create(0);
  w->actor = helper(endpoint, "bulk", [this, w] {
    for (;;) {
      w->wake->acquire();
      const std::function<void()> job = std::move(w->job);
      w->job = nullptr;
      job();
      idle_bulk_workers[static_cast<std::size_t>(w->endpoint)].push_back(w);
    }
  });
  bulk_workers.push_back(std::move(owned));
  return w;
}

// The permanent receiver of the endpoint's bulk mailboxes: any engine actor on its host. It
// never receives; it only names the host where the puts into those mailboxes end.
sg4::ActorPtr Simulation::Impl::receiver(int endpoint) {
  auto& r = receivers[static_cast<std::size_t>(endpoint)];
  if (!r) {
    detail::BulkWorker* w = idle_bulk_worker(endpoint);
    r = w->actor;
    idle_bulk_workers[static_cast<std::size_t>(endpoint)].push_back(w);
  }
  return r;
}

// Bulk: one flow per (src, dst) pair, all concurrent, capped so that each ends at the model's
// bandwidth time when nothing else limits it. While no flow is posted to SimGrid, collectives are
// timed by the engine's own max-min sharing of their flows (the pool); otherwise, or once one
// cannot join the pool, their flows are posted (post_bulk). Runs in SimGrid's maestro (a timer, see
// launch), so the workers, receivers and mailboxes it sets up are complete before any actor runs:
// an actor would let others run at each call into SimGrid, in the middle of that set-up.
void Simulation::Impl::run_bulk(const std::shared_ptr<CollectiveState>& st) {
  const Decomposition& d = *st->dec;
  const double eff = d.plan.wire_efficiency;
  st->result.flows += static_cast<long long>(d.bulk_flows.size());
  totals.flows += static_cast<long long>(d.bulk_flows.size());
  for (const auto& f : d.bulk_flows) st->result.wire_bytes += f.payload / eff;
  if (d.bulk_flows.empty()) {
    mark_done(*st);
    return;
  }
  const std::size_t flows = pool.flows + d.bulk_flows.size();
  if (pool_allowed && flowing == 0 && flows <= detail::kFluidMaxFlows &&
      (pool.members.size() + 1) * flows <= detail::kPoolMaxWork) {
    pool_join(st);
    return;
  }
  if (!pool.members.empty()) pool_materialize();
  post_bulk(st);
}

// Each source endpoint's flows are one job for an idle bulk worker on its host; the job that
// ends last ends the collective (end_bulk).
void Simulation::Impl::post_bulk(const std::shared_ptr<CollectiveState>& st,
                                 const std::vector<double>* wire_left) {
  const Decomposition& d = *st->dec;
  const double eff = d.plan.wire_efficiency;
  const int slot = st->slot;
  // (flow, its mailbox, the payload it still sends)
  std::map<int, std::vector<std::tuple<const nccl::BulkFlow*, sg4::Mailbox*, double>>> out;
  for (std::size_t i = 0; i < d.bulk_flows.size(); ++i) {
    const auto& f = d.bulk_flows[i];
    const double wire = f.payload / eff;
    const double left = wire_left ? std::min(wire, (*wire_left)[i]) : wire;
    if (left < wire) pf->account(f.src, f.dst, wire - left);
    if (left > 0) out[f.src].emplace_back(&f, bulk_mailbox(slot, f.dst), left * eff);
  }
  if (out.empty()) {
    mark_done(*st);
    return;
  }
  ++flowing;
  st->senders_left = static_cast<int>(out.size());
  const double t = d.bulk_bw_time_s;
  for (auto& [e, flows] : out) {
    detail::BulkWorker* w = idle_bulk_worker(e);
    w->job = [this, st, t, eff, o = std::move(flows)] {
      std::vector<Put> puts;
      puts.reserve(o.size());
      for (const auto& [f, m, payload] : o) {
        puts.push_back(post_put_into(m, f->src, f->dst, payload, t > 0 ? f->payload / t : 0, eff));
      }
      for (auto& p : puts) finish_put(p);
      if (--st->senders_left == 0) end_bulk(st);
    };
    w->wake->release();
  }
}

const std::vector<nccl::FluidFlow>& Simulation::Impl::fluid_flows(const Decomposition& d) const {
  auto [it, fresh] = fluid_flow_cache.try_emplace(&d);
  if (!fresh) return it->second;
  const double eff = d.plan.wire_efficiency;
  const double t_bw = d.bulk_bw_time_s;
  std::vector<nccl::FluidFlow>& flows = it->second;
  flows.reserve(d.bulk_flows.size());
  for (const auto& f : d.bulk_flows) {
    flows.push_back({planner->router().route(f.src, f.dst), f.payload / eff,
                     t_bw > 0 ? f.payload / t_bw / eff : 0});
  }
  return flows;
}

void Simulation::Impl::pool_join(const std::shared_ptr<CollectiveState>& st) {
  pool_run(sg4::Engine::get_clock() - pool.t);
  if (!pool.in_use) {
    if (!pool.net) {
      pool.net =
          std::make_unique<nccl::FluidNetwork>([this](int link) { return capacity_Bps(link); });
    }
    pool.in_use = true;
    pool.t = sg4::Engine::get_clock();
  }
  const long long id = pool.next_id++;
  Pooled m{st, pool.net->size(), 0};
  for (const auto& f : fluid_flows(*st->dec)) {
    const std::size_t k = pool.net->add(f);
    pool.owner.push_back(id);
    m.flows_left += pool.net->active(k) ? 1 : 0;
  }
  pool.flows += static_cast<std::size_t>(m.flows_left);
  if (m.flows_left == 0) {  // nothing to send: done now, as post_bulk would be
    mark_done(*st);
  } else {
    pool.members.emplace(id, std::move(m));
  }
  pool_schedule();
}

// Runs the pool's current rates for dt seconds; members whose flows have all ended are done.
void Simulation::Impl::pool_run(double dt) {
  pool.t = sg4::Engine::get_clock();
  if (!pool.in_use) return;
  std::vector<std::size_t> ended;
  if (dt > 0) pool.net->run(dt, &ended);
  pool.flows -= ended.size();
  for (std::size_t f : ended) {
    auto it = pool.members.find(pool.owner[f]);
    if (--it->second.flows_left > 0) continue;
    const std::shared_ptr<CollectiveState> st = std::move(it->second.st);
    pool.members.erase(it);
    account_flows(*st->dec);
    ++totals.analytic;
    mark_done(*st);
  }
  if (pool.members.empty()) pool_clear();
}

// Shares the pool's links again and times its next flow end.
void Simulation::Impl::pool_schedule() {
  const long long gen = ++pool.generation;
  if (pool.members.empty()) return;
  pool.net->share();
  const double dt = pool.net->next_end();
  if (!std::isfinite(dt)) {  // a flow that cannot move: SimGrid's flows say it as they always did
    pool_materialize();
    return;
  }
  detail::call_at(pool.t + dt, [this, gen, dt] {
    if (gen != pool.generation) return;  // the pool changed since: a later timer is set
    pool_run(dt);
    pool_schedule();
  });
}

void Simulation::Impl::pool_materialize() {
  pool_run(sg4::Engine::get_clock() - pool.t);
  ++pool.generation;
  for (auto& [id, m] : pool.members) {
    const std::size_t n = m.st->dec->bulk_flows.size();
    std::vector<double> left(n);
    for (std::size_t i = 0; i < n; ++i) left[i] = pool.net->remaining(m.first + i);
    post_bulk(m.st, &left);
  }
  pool.members.clear();
  pool_clear();
  pool.flows = 0;
}

void Simulation::Impl::pool_clear() {
  if (pool.net) pool.net->clear();
  pool.in_use = false;
  pool.owner.clear();
}

void Simulation::Impl::stop_pool() {
  pool_allowed = false;
  if (!pool.members.empty()) {
    detail::call_at(sg4::Engine::get_clock(), [this] {
      if (!pool.members.empty()) pool_materialize();
    });
  }
}

// The last flow of a bulk collective ended: SimGrid's finished puts leave its mailboxes (they
// stay there until cleared: a permanent receiver's mailbox keeps what it was sent), and the
// collective is done.
void Simulation::Impl::end_bulk(const std::shared_ptr<CollectiveState>& st) {
  std::vector<int> dsts;
  dsts.reserve(st->dec->bulk_flows.size());
  for (const auto& f : st->dec->bulk_flows) dsts.push_back(f.dst);
  std::sort(dsts.begin(), dsts.end());
  dsts.erase(std::unique(dsts.begin(), dsts.end()), dsts.end());
  for (int dst : dsts) bulk_mailbox(st->slot, dst)->clear();
  --flowing;
  mark_done(*st);
}

// Step granularity: NCCL's per-step structure, one program per pattern member.
void Simulation::Impl::spawn_ring(std::vector<sg4::ActorPtr>& workers,
                                  const std::shared_ptr<CollectiveState>& st,
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

void Simulation::Impl::spawn_tree(std::vector<sg4::ActorPtr>& workers,
                                  const std::shared_ptr<CollectiveState>& st,
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

void Simulation::Impl::spawn_nvls(std::vector<sg4::ActorPtr>& workers,
                                  const std::shared_ptr<CollectiveState>& st,
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
        puts[i] =
            post_put(slot, pid, p->nvswitch, p->gpus[i], p->down_bytes / K, p->down_rate_Bps, eff);
        live[i] = 1;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (live[i]) finish_put(puts[i]);
    }
  }));
}

void Simulation::Impl::spawn_direct(std::vector<sg4::ActorPtr>& workers,
                                    const std::shared_ptr<CollectiveState>& st,
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

void Simulation::Impl::run_step(const std::shared_ptr<CollectiveState>& st) {
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
    for (const auto& np : ph.nvls) flows += 2 * static_cast<long long>(np.gpus.size()) * np.chunks;
    flows += static_cast<long long>(ph.direct.size());
  }
  st->result.flows += flows;
  totals.flows += flows;
}

}  // namespace clustersim::sim
