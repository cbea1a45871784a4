// Execution of collectives on the SimGrid platform: actors, mailbox flows, faults, statistics.
//
// Why mailboxes and engine actors rather than SimGrid's one-sided Comm::sendto: in SimGrid 3.32
// Comm::sendto_init always detaches its comm in the kernel (CommImpl::detach puts it on a
// std::list of the maestro's activities), and CommImpl::finish removes it from that list with
// std::list::remove, a scan of every comm in flight: 16384 concurrent flows took 160 us per
// completion in our measurement, against 3-13 us for mailbox put/get. There is no non-detached
// host-to-host comm in 3.32's API. Likewise a comm an actor waits for is removed from that
// actor's std::list of activities, so no actor may keep thousands of comms pending, and an
// actor that moves between hosts (Actor::set_host) scans that list too.
//
// Bulk collectives (the default): the flows start after the latency from a timer, in the
// maestro, with no actor of their own. Each flow is one put into a mailbox whose permanent
// receiver is an engine actor on the destination's host; SimGrid starts such a put at once, from
// the sender's host to the receiver's, with no receive posted (CommImpl::isend). The puts of one
// source endpoint are a job for a long-lived bulk worker on its host, which posts and waits for
// them; a host keeps as many workers as it ever had bulk jobs at once. So a bulk collective
// creates no actor once its endpoints have been used, and costs one SimGrid activity per flow.
// Step granularity runs one small actor per endpoint and pattern with put/get pairs (NCCL's
// per-step handshakes), all daemons, on the endpoint's host.
#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <list>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/errors.hpp"
#include "nccl/fluid.hpp"
#include "nccl/planner.hpp"
#include "sim/detail/simulation_impl.hpp"
#include "sim/isolated.hpp"

namespace clustersim::sim {

bool CollectiveHandle::done() const {
  return state_ && state_->done;
}

const CollectiveResult& CollectiveHandle::result() const {
  if (!state_) throw std::logic_error("CollectiveHandle::result: empty handle");
  return state_->result;
}

int Simulation::Impl::take_slot() {
  if (!free_slots.empty()) {
    const int s = free_slots.back();
    free_slots.pop_back();
    return s;
  }
  if (next_slot > detail::kMaxKeyField) {
    throw std::runtime_error("Simulation: more than 65536 collectives in flight at once");
  }
  return next_slot++;
}

void Simulation::Impl::mark_done(CollectiveState& st) {
  st.done = true;
  st.result.completed = true;
  st.result.end_s = sg4::Engine::get_clock();
  if (st.slot >= 0) free_slots.push_back(st.slot);
  std::vector<sg4::SemaphorePtr> w;
  w.swap(st.waiters);
  for (auto& s : w) s->release();
}

sg4::ActorPtr Simulation::Impl::helper(int endpoint, const char* what, std::function<void()> body) {
  sg4::ActorPtr a = sg4::Actor::init(what, pf->host(endpoint))
                        ->set_stacksize(detail::kHelperStackKiB)
                        ->start(std::move(body));
  a->daemonize();
  return a;
}

void Simulation::Impl::launch(const std::shared_ptr<CollectiveState>& st) {
  st->launched = true;
  st->result.start_s = sg4::Engine::get_clock();
  const CollectivePlan& plan = st->dec->plan;
  if (st->request.contention_free) {
    const double t = uncontended(st->request, *st->dec);
    at(st->result.start_s + t, [this, st] {
      const double eff = st->dec->plan.wire_efficiency;
      for (const auto& f : st->dec->bulk_flows) st->result.wire_bytes += f.payload / eff;
      account_flows(*st->dec);
      mark_done(*st);
    });
    return;
  }
  st->slot = take_slot();
  if (plan.granularity == Granularity::bulk || st->dec->phases.empty()) {
    // No actor of its own: the flows start after the latency, from the workers' hosts. Always
    // a timer, even for no latency, so that run_bulk runs in the maestro.
    detail::call_at(st->result.start_s + plan.latency_s, [this, st] { run_bulk(st); });
    return;
  }
  stop_pool();  // step flows start from actors; no analytic sharing beside them
  helper(st->request.gpus.front(), "collective", [this, st] {
    run_step(st);
    mark_done(*st);
  });
}

std::shared_ptr<CollectiveState> Simulation::Impl::make_state(const CollectiveRequest& r) {
  auto st = std::make_shared<CollectiveState>();
  st->request = r;
  st->dec = planner->decompose(r, options.granularity);
  st->result.plan = st->dec->plan;
  st->result.label = r.label;
  ++totals.collectives;
  st->live = live;
  ++*live;
  return st;
}

double Simulation::Impl::uncontended(const CollectiveRequest& r, const Decomposition& d) const {
  const std::string key = planner->shape_key(r);
  auto it = uncontended_cache.find(key);
  if (it != uncontended_cache.end()) return it->second;
  const double eff = d.plan.wire_efficiency;
  const double t_bw = d.bulk_bw_time_s;
  double makespan = 0;
  const auto capacity = [this](int link) { return capacity_Bps(link); };
  if (d.bulk_flows.size() <= detail::kFluidMaxFlows) {
    makespan = nccl::fluid_makespan_s(fluid_flows(d), capacity);
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

void Simulation::Impl::account_flows(const Decomposition& d) {
  const double eff = d.plan.wire_efficiency;
  for (const auto& f : d.bulk_flows) pf->account(f.src, f.dst, f.payload / eff);
}

double Simulation::Impl::capacity_Bps(int link) const {
  return pf->graph.link(link).bandwidth_Bps * options.network.bandwidth_factor;
}

// ---------------------------------------------------------------------------------------------

Simulation::Simulation(const topologies::ClusterGraph& graph, SimulationOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->transport = nccl::choose_transport(graph.spec(), impl_->options.nccl);
  if ((!impl_->transport.gpudirect_rdma || !impl_->transport.p2p_nvlink) && !graph.has_hosts()) {
    ClusterSpec spec = graph.spec();
    spec.gpudirect_rdma = false;
    const auto staged = topologies::ClusterGraph::build(spec, graph.num_gpus());
    impl_->platform = std::make_unique<Platform>(
        staged, impl_->options.network, impl_->transport.p2p_nvlink, impl_->options.engine);
  } else {
    impl_->platform = std::make_unique<Platform>(
        graph, impl_->options.network, impl_->transport.p2p_nvlink, impl_->options.engine);
  }
  impl_->pf = &impl_->platform->impl();
  impl_->pool_allowed =
      impl_->options.analytic_sharing && impl_->options.granularity == nccl::Granularity::bulk;
  impl_->idle_bulk_workers.resize(impl_->pf->hosts.size());
  impl_->receivers.resize(impl_->pf->hosts.size());
  // Every actor SimGrid creates in this process: the callers' and the engine's own.
  sg4::Actor::on_creation_cb([count = impl_->actors_created](sg4::Actor&) { ++*count; });
  impl_->planner = std::make_unique<nccl::Planner>(
      impl_->pf->graph, impl_->options.nccl, graph.spec().gpu.architecture, impl_->options.cpu,
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
  Impl* impl = impl_.get();
  sg4::Engine::on_deadlock_cb([impl] { impl->deadlocked = true; });
  impl_->pf->engine->run();
  if (impl_->actor_error) std::rethrow_exception(impl_->actor_error);
  // SimGrid kills the blocked actors and returns as if the run had ended: every time measured
  // after that would be a wrong answer presented as a result.
  if (impl_->deadlocked) {
    throw InternalError(
        "the simulation deadlocked at t = " + std::to_string(sg4::Engine::get_clock()) +
        " s: actors wait for transfers or collectives that can never complete");
  }
  return sg4::Engine::get_clock();
}

double Simulation::now() const {
  return sg4::Engine::get_clock();
}

void Simulation::sleep_for(double seconds) {
  if (!std::isfinite(seconds)) {
    throw InternalError("Simulation::sleep_for: " + std::to_string(seconds) + " s");
  }
  sg4::this_actor::sleep_for(seconds);
}
void Simulation::sleep_until(double time_s) {
  if (!std::isfinite(time_s)) {
    throw InternalError("Simulation::sleep_until: " + std::to_string(time_s) + " s");
  }
  sg4::this_actor::sleep_until(time_s);
}

void Simulation::compute(int gpu, double seconds) {
  if (gpu < 0 || gpu >= impl_->pf->num_gpus) {
    throw std::invalid_argument("Simulation::compute: GPU " + std::to_string(gpu) +
                                " out of range");
  }
  // SimGrid aborts the process on a duration that is not finite; report it as the bug it is.
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw InternalError("Simulation::compute: a compute time of " + std::to_string(seconds) +
                        " s on GPU " + std::to_string(gpu));
  }
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
  // The analytic sharing assumes every link at its capacity: none from the fault on.
  impl->at(from_s, [impl] { impl->stop_pool(); });
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
  impl->at(from_s, [impl] { impl->stop_pool(); });
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

Simulation::Totals Simulation::totals() const {
  Totals t = impl_->totals;
  t.actors = *impl_->actors_created;
  return t;
}

long long Simulation::live_collectives() const {
  return *impl_->live;
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
