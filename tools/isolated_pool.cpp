#include "tools/isolated_pool.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace clustersim::cli {
namespace {

struct Child {
  std::size_t index = 0;
  pid_t pid = -1;
  int fd = -1;
  std::string bytes;  // what it has sent so far
};

void write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

// In the child: runs the work and reports "O" + doubles, or "E" + the message.
[[noreturn]] void child_main(int fd, std::size_t i,
                             const std::function<std::vector<double>(std::size_t)>& work) {
  try {
    const std::vector<double> v = work(i);
    write_all(fd, "O", 1);
    write_all(fd, v.data(), v.size() * sizeof(double));
  } catch (const std::exception& e) {
    write_all(fd, "E", 1);
    write_all(fd, e.what(), std::strlen(e.what()));
  } catch (...) {
    write_all(fd, "Eunknown error", 14);
  }
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(0);
}

Child spawn(std::size_t i, const std::function<std::vector<double>(std::size_t)>& work) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error("pipe failed: " + std::string(std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], i, work);
  }
  ::close(fds[1]);
  return {i, pid, fds[0], {}};
}

// "O" + doubles, or "E" + message.
IsolatedOutcome outcome_of(const Child& c) {
  const std::string& b = c.bytes;
  IsolatedOutcome out;
  if (b.empty() || (b[0] != 'O' && b[0] != 'E')) {
    out.error = "the child process died";
  } else if (b[0] == 'E') {
    out.error = b.substr(1);
  } else {
    const std::size_t count = (b.size() - 1) / sizeof(double);
    out.values.resize(count);
    std::memcpy(out.values.data(), b.data() + 1, count * sizeof(double));
  }
  return out;
}

// Waits until one child's pipe has data or closed; reads it. Returns the position of a child
// whose pipe closed (it has exited or is exiting), or -1.
int poll_children(std::vector<Child>& running) {
  std::vector<pollfd> fds;
  for (const auto& c : running) fds.push_back({c.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0) return -1;
  for (std::size_t k = 0; k < running.size(); ++k) {
    if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[4096];
    const ssize_t n = ::read(running[k].fd, buf, sizeof buf);
    if (n > 0) {
      running[k].bytes.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

}  // namespace

namespace {

// The pool: stops starting new items once one failed when `stop_on_error`.
std::vector<IsolatedOutcome> run_pool(std::size_t n, int jobs, bool stop_on_error,
                                      const std::function<std::vector<double>(std::size_t)>& work) {
  std::vector<IsolatedOutcome> out(n);
  std::vector<Child> running;
  bool failed = false;
  std::size_t next = 0;
  while (next < n || !running.empty()) {
    while (next < n && !(stop_on_error && failed) &&
           static_cast<int>(running.size()) < std::max(1, jobs))
      running.push_back(spawn(next++, work));
    if (running.empty()) break;
    const int done = poll_children(running);
    if (done < 0) continue;
    Child c = std::move(running[static_cast<std::size_t>(done)]);
    running.erase(running.begin() + done);
    ::close(c.fd);
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    out[c.index] = outcome_of(c);
    failed = failed || !out[c.index].error.empty();
  }
  return out;
}

}  // namespace

std::vector<IsolatedOutcome> map_isolated_each(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work) {
  return run_pool(n, jobs, false, work);
}

std::vector<std::vector<double>> map_isolated(
    std::size_t n, int jobs, const std::function<std::vector<double>(std::size_t)>& work) {
  std::vector<IsolatedOutcome> outcomes = run_pool(n, jobs, true, work);
  std::vector<std::vector<double>> out;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].error.empty())
      throw std::runtime_error("item " + std::to_string(i) + ": " + outcomes[i].error);
    out.push_back(std::move(outcomes[i].values));
  }
  return out;
}

}  // namespace clustersim::cli
