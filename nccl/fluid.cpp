#include "nccl/fluid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clustersim::nccl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow with no more than this share of its bytes left has ended (rounding of rate x time).
constexpr double kEndedShare = 1e-9;
// A resource with no more than this share of its capacity left is saturated.
constexpr double kSaturatedShare = 1e-12;

}  // namespace

FluidNetwork::FluidNetwork(std::function<double(int link)> capacity)
    : capacity_(std::move(capacity)) {}

void FluidNetwork::clear() {
  resources_.clear();
  wire_.clear();
  rate_cap_.clear();
  remaining_.clear();
  rate_.clear();
  is_active_.clear();
  active_.clear();
  for (auto& on : flows_on_) on.clear();
  added_.clear();
  freed_.clear();
  flow_seen_.clear();
}

std::size_t FluidNetwork::add(const FluidFlow& flow) {
  const std::size_t f = wire_.size();
  std::vector<int> res;
  res.reserve(flow.route.size());
  for (const auto& h : flow.route) {
    const auto key = 2 * static_cast<std::size_t>(h.link) + static_cast<std::size_t>(h.dir);
    if (key >= resource_of_.size())
      resource_of_.resize(std::max(key + 1, 2 * resource_of_.size()), -1);
    int& r = resource_of_[key];
    if (r < 0) {
      r = static_cast<int>(cap_.size());
      cap_.push_back(capacity_(h.link));
      left_.push_back(0);
      users_.push_back(0);
      flows_on_.emplace_back();
      resource_seen_.push_back(0);
    }
    res.push_back(r);
  }
  const bool moves = flow.wire_bytes > 0;
  if (moves) {
    for (int r : res) flows_on_[static_cast<std::size_t>(r)].push_back(f);
    active_.push_back(f);
    added_.push_back(f);
  }
  resources_.push_back(std::move(res));
  wire_.push_back(flow.wire_bytes);
  rate_cap_.push_back(flow.rate_cap_Bps);
  remaining_.push_back(moves ? flow.wire_bytes : 0);
  rate_.push_back(0);
  is_active_.push_back(moves ? 1 : 0);
  flow_seen_.push_back(0);
  return f;
}

std::vector<std::size_t> FluidNetwork::changed_components() {
  if (++visit_ == 0) {  // the marks wrapped: start them again
    std::fill(flow_seen_.begin(), flow_seen_.end(), 0);
    std::fill(resource_seen_.begin(), resource_seen_.end(), 0);
    visit_ = 1;
  }
  std::vector<std::size_t> found;
  std::vector<int> frontier;
  const auto visit_resource = [&](int r) {
    unsigned& seen = resource_seen_[static_cast<std::size_t>(r)];
    if (seen != visit_) {
      seen = visit_;
      frontier.push_back(r);
    }
  };
  for (std::size_t f : added_) {
    if (!is_active_[f] || flow_seen_[f] == visit_) continue;
    flow_seen_[f] = visit_;
    found.push_back(f);
    for (int r : resources_[f]) visit_resource(r);
  }
  for (int r : freed_) visit_resource(r);
  while (!frontier.empty()) {
    const auto r = static_cast<std::size_t>(frontier.back());
    frontier.pop_back();
    std::vector<std::size_t>& on = flows_on_[r];
    std::size_t kept = 0;
    for (std::size_t f : on) {
      if (!is_active_[f]) continue;  // ended: dropped from the resource's list here
      on[kept++] = f;
      if (flow_seen_[f] == visit_) continue;
      flow_seen_[f] = visit_;
      found.push_back(f);
      for (int q : resources_[f]) visit_resource(q);
    }
    on.resize(kept);
  }
  // In the order the flows were added, as a share of every active flow would take them.
  std::sort(found.begin(), found.end());
  return found;
}

void FluidNetwork::share() {
  std::vector<std::size_t> open = changed_components();
  added_.clear();
  freed_.clear();
  fill(std::move(open));
}

// Progressive filling: raise all unfixed rates together until a resource saturates or a flow
// reaches its cap; fix those flows; repeat.
void FluidNetwork::fill(std::vector<std::size_t> open) {
  std::vector<std::size_t> still;
  std::vector<int> touched;
  for (std::size_t f : open) {
    rate_[f] = 0;
    for (int r : resources_[f])
      left_[static_cast<std::size_t>(r)] = cap_[static_cast<std::size_t>(r)];
  }
  double level = 0;
  while (!open.empty()) {
    touched.clear();
    for (std::size_t f : open) {
      for (int r : resources_[f]) {
        if (users_[static_cast<std::size_t>(r)]++ == 0) touched.push_back(r);
      }
    }
    double inc = kInf;
    for (int r : touched) {
      const auto i = static_cast<std::size_t>(r);
      inc = std::min(inc, left_[i] / users_[i]);
    }
    for (std::size_t f : open) {
      if (rate_cap_[f] > 0) inc = std::min(inc, rate_cap_[f] - level);
    }
    if (!std::isfinite(inc)) inc = 0;
    level += inc;
    for (int r : touched) {
      const auto i = static_cast<std::size_t>(r);
      left_[i] -= inc * users_[i];
    }
    still.clear();
    for (std::size_t f : open) {
      bool saturated = rate_cap_[f] > 0 && level >= rate_cap_[f] * (1 - kSaturatedShare);
      for (int r : resources_[f]) {
        const auto i = static_cast<std::size_t>(r);
        saturated = saturated || left_[i] <= cap_[i] * kSaturatedShare;
      }
      if (saturated || inc == 0) {
        rate_[f] = level;
      } else {
        still.push_back(f);
      }
    }
    for (int r : touched) users_[static_cast<std::size_t>(r)] = 0;
    open.swap(still);
  }
}

double FluidNetwork::next_end() const {
  double dt = kInf;
  for (std::size_t f : active_) {
    if (rate_[f] > 0) dt = std::min(dt, remaining_[f] / rate_[f]);
  }
  return dt;
}

void FluidNetwork::run(double dt, std::vector<std::size_t>* ended) {
  std::size_t kept = 0;
  for (std::size_t f : active_) {
    remaining_[f] -= rate_[f] * dt;
    if (remaining_[f] <= wire_[f] * kEndedShare) {
      remaining_[f] = 0;
      rate_[f] = 0;
      is_active_[f] = 0;
      freed_.insert(freed_.end(), resources_[f].begin(), resources_[f].end());
      if (ended) ended->push_back(f);
    } else {
      active_[kept++] = f;
    }
  }
  active_.resize(kept);
}

double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity) {
  FluidNetwork net(capacity);
  for (const auto& f : flows) net.add(f);
  double now = 0;
  while (net.active_count() > 0) {
    net.share();
    const double dt = net.next_end();
    if (!std::isfinite(dt)) return kInf;
    net.run(dt);
    now += dt;
  }
  return now;
}

}  // namespace clustersim::nccl
