#include "sim/event.hpp"

#include <simgrid/s4u/Semaphore.hpp>
#include <vector>

namespace clustersim::sim {

// Each waiter blocks on a semaphore of its own that fire() releases.
struct Event::Waiters {
  std::vector<simgrid::s4u::SemaphorePtr> semaphores;
};

Event::Event() : waiters_(std::make_unique<Waiters>()) {}
Event::~Event() = default;

void Event::fire(double now_s) {
  if (fired_) return;
  fired_ = true;
  at_ = now_s;
  std::vector<simgrid::s4u::SemaphorePtr> waiters;
  waiters.swap(waiters_->semaphores);
  for (auto& w : waiters) w->release();
}

void Event::wait() {
  if (fired_) return;
  simgrid::s4u::SemaphorePtr sem = simgrid::s4u::Semaphore::create(0);
  waiters_->semaphores.push_back(sem);
  sem->acquire();
}

}  // namespace clustersim::sim
