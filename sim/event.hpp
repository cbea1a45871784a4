// A one-shot event that actors of a Simulation can wait on (e.g. "this gradient bucket's
// reduction is done"). Actors are coroutines in one thread: no race between the check and the
// wait. No SimGrid type here; wait() must run inside an actor.
#pragma once

#include <memory>

namespace clustersim::sim {

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  bool fired() const { return fired_; }
  double at() const { return at_; }  // simulated time it fired (valid when fired())
  // Marks the event fired at `now_s` and wakes every waiter; later calls do nothing.
  void fire(double now_s);
  // Actor: returns at once if fired, else blocks until fire().
  void wait();

 private:
  struct Waiters;  // SimGrid semaphores, one per blocked actor
  bool fired_ = false;
  double at_ = 0;
  std::unique_ptr<Waiters> waiters_;
};

}  // namespace clustersim::sim
