#include "nccl/fluid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace clustersim::nccl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Flows, the (link, direction) resources they cross, and their progress.
struct FluidState {
  const std::vector<FluidFlow>& flows;
  std::vector<double> cap;                 // per resource, bytes/s
  std::vector<std::vector<int>> flow_res;  // per flow: its resources
  std::vector<double> remaining;           // per flow, wire bytes
  std::vector<char> active;
  std::size_t n_active = 0;
  std::vector<double> rate;  // per flow, set by fill_rates
  std::vector<double> left;  // per resource, scratch
  std::vector<int> users;    // per resource, scratch
  std::vector<char> fixed;   // per flow, scratch

  FluidState(const std::vector<FluidFlow>& f, const std::function<double(int link)>& capacity)
      : flows(f), flow_res(f.size()) {
    std::map<std::pair<int, int>, int> res_index;
    for (std::size_t i = 0; i < flows.size(); ++i) {
      for (const auto& h : flows[i].route) {
        auto [it, fresh] = res_index.emplace(std::make_pair(h.link, static_cast<int>(h.dir)),
                                             static_cast<int>(cap.size()));
        if (fresh) cap.push_back(capacity(h.link));
        flow_res[i].push_back(it->second);
      }
    }
    remaining.resize(flows.size());
    active.assign(flows.size(), 0);
    for (std::size_t i = 0; i < flows.size(); ++i) {
      remaining[i] = flows[i].wire_bytes;
      if (remaining[i] > 0) {
        active[i] = 1;
        ++n_active;
      }
    }
    rate.resize(flows.size());
    left.resize(cap.size());
    users.resize(cap.size());
    fixed.resize(flows.size());
  }

  bool open(std::size_t f) const { return active[f] && !fixed[f]; }

  // The largest common rate increase before a resource saturates or a flow reaches its cap.
  double increment(double level) {
    std::fill(users.begin(), users.end(), 0);
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (open(f)) {
        for (int r : flow_res[f]) ++users[static_cast<std::size_t>(r)];
      }
    }
    double inc = kInf;
    for (std::size_t r = 0; r < cap.size(); ++r) {
      if (users[r] > 0) inc = std::min(inc, left[r] / users[r]);
    }
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (open(f) && flows[f].rate_cap_Bps > 0) inc = std::min(inc, flows[f].rate_cap_Bps - level);
    }
    return std::isfinite(inc) ? inc : 0;
  }

  // Progressive filling: raise all unfixed rates together until a resource saturates or a
  // flow reaches its cap; fix those flows; repeat.
  void fill_rates() {
    std::fill(rate.begin(), rate.end(), 0.0);
    std::fill(fixed.begin(), fixed.end(), 0);
    left = cap;
    std::size_t unfixed = n_active;
    double level = 0;
    while (unfixed > 0) {
      const double inc = increment(level);
      level += inc;
      for (std::size_t r = 0; r < cap.size(); ++r) left[r] -= inc * users[r];
      for (std::size_t f = 0; f < flows.size(); ++f) {
        if (!open(f)) continue;
        bool saturated = flows[f].rate_cap_Bps > 0 && level >= flows[f].rate_cap_Bps * (1 - 1e-12);
        for (int r : flow_res[f]) {
          saturated = saturated ||
                      left[static_cast<std::size_t>(r)] <= cap[static_cast<std::size_t>(r)] * 1e-12;
        }
        if (saturated || inc == 0) {
          fixed[f] = 1;
          rate[f] = level;
          --unfixed;
        }
      }
    }
  }

  // Runs the current rates until the next flow ends, or for at most `limit` seconds; returns
  // the time that took.
  double advance(double limit = kInf) {
    double dt = kInf;
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (active[f] && rate[f] > 0) dt = std::min(dt, remaining[f] / rate[f]);
    }
    dt = std::min(dt, limit);
    if (!std::isfinite(dt)) return kInf;
    for (std::size_t f = 0; f < flows.size(); ++f) {
      if (!active[f]) continue;
      remaining[f] -= rate[f] * dt;
      if (remaining[f] <= flows[f].wire_bytes * 1e-9) {
        active[f] = 0;
        --n_active;
      }
    }
    return dt;
  }
};

}  // namespace

double fluid_makespan_s(const std::vector<FluidFlow>& flows,
                        const std::function<double(int link)>& capacity) {
  FluidState state(flows, capacity);
  double now = 0;
  while (state.n_active > 0) {
    state.fill_rates();
    const double dt = state.advance();
    if (!std::isfinite(dt)) return kInf;
    now += dt;
  }
  return now;
}

std::vector<double> fluid_remaining(const std::vector<FluidFlow>& flows,
                                    const std::function<double(int link)>& capacity,
                                    double elapsed_s) {
  FluidState state(flows, capacity);
  double now = 0;
  while (state.n_active > 0 && now < elapsed_s) {
    state.fill_rates();
    const double dt = state.advance(elapsed_s - now);
    if (!std::isfinite(dt)) break;
    now += dt;
  }
  for (std::size_t f = 0; f < flows.size(); ++f) {
    if (!state.active[f]) state.remaining[f] = 0;
  }
  return state.remaining;
}

}  // namespace clustersim::nccl
