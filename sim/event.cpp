#include "sim/event.hpp"

#include <algorithm>
#include <simgrid/s4u/Engine.hpp>
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

Signal::Signal() : waiters_(std::make_unique<Event::Waiters>()) {}
Signal::~Signal() = default;

void Signal::notify() {
  std::vector<simgrid::s4u::SemaphorePtr> waiters;
  waiters.swap(waiters_->semaphores);
  for (auto& w : waiters) w->release();
}

bool Signal::wait_until(double time_s) {
  const double timeout = time_s - simgrid::s4u::Engine::get_clock();
  if (!(timeout > 0)) return false;
  simgrid::s4u::SemaphorePtr sem = simgrid::s4u::Semaphore::create(0);
  waiters_->semaphores.push_back(sem);
  if (!sem->acquire_timeout(timeout)) return true;
  // Timed out: no longer a waiter (notify() may have run at the same instant and taken it).
  auto& all = waiters_->semaphores;
  all.erase(std::remove(all.begin(), all.end(), sem), all.end());
  return false;
}

}  // namespace clustersim::sim
