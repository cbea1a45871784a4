// Runs child processes N at a time and collects their output.
//
// SimGrid runs one engine per process, so every simulation of a sweep or a regression check
// runs in its own child process (the clustersim binary itself, `clustersim run --json FILE`).
// Children die with their parent (PR_SET_PDEATHSIG): a killed sweep leaves no evaluator
// running that could write after it.
#pragma once

#include <csignal>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::sweep {

struct ProcessJob {
  std::vector<std::string> argv;  // argv[0] is the executable path
  // Milliseconds the child waits before exec (a test hook: makes a kill land mid-sweep).
  unsigned delay_ms = 0;
};

struct ProcessResult {
  int exit_code = -1;   // exit status, or -1 when killed by a signal
  int term_signal = 0;  // the signal that ended the child, 0 if it exited
  bool timed_out = false;
  bool spawn_failed = false;
  std::string out;  // everything the child wrote to stdout
  std::string err;  // and to stderr
  double wall_s = 0;
  // "exit code 3", "killed by signal 9", "timed out after 60 s": for messages.
  std::string describe() const;
};

struct PoolOptions {
  int parallel = 1;      // children at a time (>= 1)
  double timeout_s = 0;  // per child; 0 = none. A child over time is killed (SIGKILL).
  // Set asynchronously (a signal handler) to stop: no new child starts, running ones are
  // killed and their results dropped.
  const volatile std::sig_atomic_t* stop = nullptr;
  // Called about every 200 ms while children run (progress display).
  std::function<void()> tick;
};

// Runs jobs from `next` (returns nullopt when there are no more) and hands each finished one
// to `done` with the id `next` gave it, in completion order. Returns false when stopped early.
bool run_processes(const std::function<std::optional<std::pair<std::size_t, ProcessJob>>()>& next,
                   const std::function<void(std::size_t, ProcessResult&&)>& done,
                   const PoolOptions& options);

// The path of the running executable (/proc/self/exe resolved).
std::string self_executable();

// Number of CPUs this process may run on (sched_getaffinity), at least 1.
int available_cpus();

}  // namespace clustersim::sweep
