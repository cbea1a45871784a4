// The SMs NCCL's kernels take from the compute they overlap. NCCL runs one CTA per channel, and
// a CTA holds a whole SM for as long as its kernel is resident: NCCL's maintainers state that
// its CTAs do not share an SM with compute kernels (NVIDIA/nccl issue 689). A kernel that
// overlaps a collective of C channels on a GPU of S SMs therefore runs on S - C of them, at
// (S - C) / S of its rate when it fills several waves (docs/sm-contention.md has the sources and
// what is left out: the tail of one-wave GEMMs, HBM contention).
#include <algorithm>
#include <limits>

#include "step/replay.hpp"

namespace clustersim::step {

void SmLedger::take(double now_s, int ctas) {
  active_.insert(ctas);
  record(now_s);
}

void SmLedger::give_back(double now_s, int ctas) {
  if (const auto it = active_.find(ctas); it != active_.end()) active_.erase(it);
  record(now_s);
}

// Kernels of the stage's streams run on the data-parallel communicator, whose NCCL calls run one
// after the other on the GPU: the SMs held are those of the largest call in flight.
void SmLedger::record(double now_s) {
  const int held = active_.empty() ? 0 : *active_.rbegin();
  if (!steps_.empty() && steps_.back().first == now_s) {
    steps_.back().second = held;
  } else if (steps_.empty() || steps_.back().second != held) {
    steps_.emplace_back(now_s, held);
  }
  changed_.notify();
}

double sm_share(int held, int sm_count) {
  if (sm_count <= 0) return 1;
  return static_cast<double>(std::max(1, sm_count - held)) / sm_count;
}

double SmLedger::share(double t, int sm_count) const {
  const auto after = std::upper_bound(steps_.begin(), steps_.end(), t,
                                      [](double x, const auto& s) { return x < s.first; });
  return sm_share(after == steps_.begin() ? 0 : std::prev(after)->second, sm_count);
}

double SmLedger::next_change(double t) const {
  const auto after = std::upper_bound(steps_.begin(), steps_.end(), t,
                                      [](double x, const auto& s) { return x < s.first; });
  return after == steps_.end() ? std::numeric_limits<double>::infinity() : after->first;
}

double stretch(double t, double w, const std::vector<Slowdown>& slow, const SmLedger* sms,
               int sm_count) {
  if (w <= 0) return t;
  double now = t;
  double left = w;
  while (true) {
    double speed = 1;
    double next_change = std::numeric_limits<double>::infinity();
    for (const auto& s : slow) {
      if (s.from_s <= now) {
        speed = std::min(speed, s.factor);
      } else {
        next_change = std::min(next_change, s.from_s);
      }
    }
    if (sms != nullptr) {
      speed *= sms->share(now, sm_count);
      next_change = std::min(next_change, sms->next_change(now));
    }
    const double can = (next_change - now) * speed;
    if (can >= left) return now + left / speed;
    left -= can;
    now = next_change;
  }
}

}  // namespace clustersim::step
