// Runs independent simulations in child processes, several at a time. SimGrid 3.32 allows one
// engine per process (sim/platform.hpp), so each item gets a fresh fork of this process; the
// child computes its numbers and sends them back through a pipe.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::cli {

// One item's numbers, or the message of what its work threw (or that its child died).
struct IsolatedOutcome {
  std::vector<double> values;
  std::string error;  // empty when the work returned
};

// Calls work(i) for every i in [0, n), each in its own child process, at most `jobs` at once,
// and returns every item's outcome in index order.
std::vector<IsolatedOutcome> map_isolated_each(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work);

// The same, for work that must not fail: a child whose work throws makes the call throw
// std::runtime_error with the item's index and the message, after the running children ended
// (no new item starts once one failed).
std::vector<std::vector<double>> map_isolated(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work);

}  // namespace clustersim::cli
