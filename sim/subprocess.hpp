// Running a computation in a child process, for code that needs a fresh SimGrid engine
// (SimGrid 3.32 allows one engine per process; see sim/platform.hpp). POSIX fork + pipe.
#pragma once

#include <functional>
#include <vector>

namespace clustersim::sim {

// Forks; the child runs `work` and sends its numbers back through a pipe, then exits without
// running the parent's destructors. Returns the child's numbers. If `work` throws, the child
// sends the message and the parent rethrows it as std::runtime_error; a child that dies
// (signal, exit) is also a std::runtime_error. Flushes stdout/stderr before forking.
std::vector<double> run_in_subprocess(const std::function<std::vector<double>()>& work);

}  // namespace clustersim::sim
