// Running work that needs a fresh SimGrid engine in a child process: SimGrid 3.32 allows one
// engine per process (sim/platform.hpp). POSIX fork + pipe. The one way of isolating a
// simulation: the step simulator (simulate_step_isolated, 1-bit Adam's second phase), the
// campaign's step model, validation's predictions, the granularity comparison, and (several
// children at a time) `validate --jobs` and `calibrate --runs` all use it.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace clustersim::sim {

// The child did not hand back a result: its work threw something other than ConfigError or
// std::invalid_argument (the message is kept), or the child died (signal, exit, a truncated
// answer). A std::runtime_error, so the tool reports it as an internal failure.
class IsolatedRunError : public std::runtime_error {
 public:
  enum class Kind { failed, crashed };
  IsolatedRunError(Kind kind, const std::string& message, int wait_status = 0)
      : std::runtime_error(message), kind_(kind), wait_status_(wait_status) {}
  Kind kind() const { return kind_; }
  int wait_status() const { return wait_status_; }  // waitpid status (crashed)

 private:
  Kind kind_;
  int wait_status_;
};

// Forks; the child runs `work` and sends the bytes it returns back through a pipe, then exits
// without running the parent's destructors (_exit). Returns those bytes. Errors keep their type:
// a ConfigError thrown by `work` is rethrown here as a ConfigError with the same file, JSON
// pointer and message (bad input stays exit code 2), a std::invalid_argument as a
// std::invalid_argument with its message, anything else as IsolatedRunError. Flushes
// stdout/stderr before forking. Throws std::runtime_error when pipe or fork fails.
std::string run_isolated(const std::function<std::string()>& work);

// Numbers through run_isolated: their bytes, and back (IsolatedRunError on a size that is not a
// whole number of doubles).
std::string doubles_to_bytes(const std::vector<double>& values);
std::vector<double> doubles_from_bytes(const std::string& bytes);

// run_isolated for work that returns numbers.
std::vector<double> run_isolated_numbers(const std::function<std::vector<double>()>& work);

// One item of run_isolated_each: the numbers its work returned, or the exception its child's
// answer decodes to (the same typed errors run_isolated throws) and that exception's message.
struct IsolatedOutcome {
  std::vector<double> values;
  std::exception_ptr error;  // null when the work returned
  std::string message;       // error's what(), empty when none
};

// Called in the parent as each item's child ends (its answer read), in completion order, with
// the item's index: where a progress display counts finished items.
using IsolatedDone = std::function<void(std::size_t)>;

// run_isolated_numbers for every i in [0, n): each item in a child of its own, at most `jobs`
// children at once (poll() on their pipes), outcomes in index order. Every item runs, whatever
// the others do. `on_done` (optional) hears of each item as it ends.
std::vector<IsolatedOutcome> run_isolated_each(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work,
    const IsolatedDone& on_done = {});

// The same for work that must not fail: once an item fails no new item starts, and after the
// running children ended the first failure is rethrown: a ConfigError or std::invalid_argument
// as it is (bad input stays bad input), anything else as IsolatedRunError naming the item.
std::vector<std::vector<double>> run_isolated_all(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work,
    const IsolatedDone& on_done = {});

}  // namespace clustersim::sim
