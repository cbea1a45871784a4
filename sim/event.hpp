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
  friend class Signal;
  struct Waiters;  // SimGrid semaphores, one per blocked actor
  bool fired_ = false;
  double at_ = 0;
  std::unique_ptr<Waiters> waiters_;
};

// A notification that can be given again and again (e.g. "the SMs NCCL holds on this stage
// changed"): actors wait for the next notify() or for a time, whichever comes first.
class Signal {
 public:
  Signal();
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  // Wakes every actor waiting now.
  void notify();
  // Actor: blocks until the next notify() or until simulated time `time_s`, whichever comes
  // first; true when notified. Returns false at once when `time_s` is not in the future.
  bool wait_until(double time_s);

 private:
  std::unique_ptr<Event::Waiters> waiters_;
};

}  // namespace clustersim::sim
