// Flows between endpoints as mailbox puts (bulk: into a permanent receiver's mailbox; step:
// matched by a get), and the link faults that suspend and resume them.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "core/json_reader.hpp"
#include "sim/detail/simulation_impl.hpp"

namespace clustersim::sim {

namespace {

int dummy_payload = 0;

}  // namespace

sg4::Mailbox* Simulation::Impl::mailbox(int slot, int pattern, int src, int dst) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(slot) << 48) | (static_cast<std::uint64_t>(pattern) << 32) |
      (static_cast<std::uint64_t>(src) << 16) | static_cast<std::uint64_t>(dst);
  auto it = mailboxes.find(key);
  if (it != mailboxes.end()) return it->second;
  std::ostringstream name;
  name << 'm' << slot << '.' << pattern << '.' << src << '.' << dst;
  return mailboxes.emplace(key, sg4::Mailbox::by_name(name.str())).first->second;
}

// The mailbox of the bulk flows of one collective (slot) into one endpoint. Its permanent
// receiver, an engine actor on the endpoint's host, makes every put into it start at once from
// the sender's host to the receiver's (SimGrid 3.32, CommImpl::isend): a bulk flow is one put
// and one wait, with no receive posted and no actor of its own on the destination. SimGrid
// keeps such a finished put in the mailbox until it is cleared (end_bulk).
sg4::Mailbox* Simulation::Impl::bulk_mailbox(int slot, int dst) {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(slot) << 32) | static_cast<std::uint32_t>(dst);
  auto it = bulk_mailboxes.find(key);
  if (it != bulk_mailboxes.end()) return it->second;
  std::ostringstream name;
  name << 'b' << slot << '.' << dst;
  sg4::Mailbox* m = sg4::Mailbox::by_name(name.str());
  m->set_receiver(receiver(dst));
  return bulk_mailboxes.emplace(key, m).first->second;
}

bool Simulation::Impl::route_crosses(int src, int dst, int link) {
  for (const auto& h : pf->route(src, dst).hops) {
    if (h.link == link) return true;
  }
  return false;
}

// Posts a flow (sender side) into mailbox m. Waits while its route crosses a down link.
Simulation::Impl::Put Simulation::Impl::post_put_into(sg4::Mailbox* m, int src, int dst,
                                                      double payload, double rate_Bps, double eff) {
  while (pf->route_is_down(src, dst)) {
    auto sem = sg4::Semaphore::create(0);
    link_up_waiters.push_back(sem);
    sem->acquire();
  }
  Put p;
  p.src = src;
  p.dst = dst;
  p.wire = payload / eff;
  p.comm =
      m->put_init(&dummy_payload, static_cast<std::uint64_t>(std::llround(std::max(1.0, p.wire))));
  if (rate_Bps > 0) p.comm->set_rate(rate_Bps / eff);
  p.comm->start();
  p.reg = active.insert(active.end(), ActiveFlow{p.comm, src, dst, false});
  return p;
}

Simulation::Impl::Put Simulation::Impl::post_put(int slot, int pattern, int src, int dst,
                                                 double payload, double rate_Bps, double eff) {
  return post_put_into(mailbox(slot, pattern, src, dst), src, dst, payload, rate_Bps, eff);
}

void Simulation::Impl::finish_put(Put& p) {
  p.comm->wait();
  active.erase(p.reg);
  pf->account(p.src, p.dst, p.wire);
  p.comm = nullptr;  // frees SimGrid's objects now, not when the worker ends
}

Simulation::Impl::Get Simulation::Impl::post_get(int slot, int pattern, int src, int dst) {
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
double Simulation::Impl::finish_get(Get& g) {
  g.comm->wait();
  if (g.registered) active.erase(g.reg);
  const double t = g.comm->get_finish_time();
  g.comm = nullptr;
  return t;
}

void Simulation::Impl::link_down_now(int link) {
  pf->down[static_cast<std::size_t>(link)] += 1;
  pf->refresh_link(link);
  for (auto& f : active) {
    if (!f.suspended && route_crosses(f.src, f.dst, link)) {
      f.comm->suspend();
      f.suspended = true;
    }
  }
}

void Simulation::Impl::link_up_now(int link) {
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

void Simulation::Impl::at(double time_s, std::function<void()> f) {
  if (time_s <= sg4::Engine::get_clock()) {
    f();
  } else {
    detail::call_at(time_s, std::move(f));
  }
}

int Simulation::Impl::link_id(const std::string& name) const {
  if (auto l = pf->graph.find_link(name)) return *l;
  std::vector<std::string> names;
  for (const auto& l : pf->graph.links()) names.push_back(l.name);
  std::string msg = "unknown link \"" + name + "\"";
  const std::string near = nearest_name(name, names);
  if (!near.empty()) msg += "; did you mean \"" + near + "\"?";
  throw std::invalid_argument(msg);
}

}  // namespace clustersim::sim
