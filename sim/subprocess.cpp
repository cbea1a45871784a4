#include "sim/subprocess.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

namespace {

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

}  // namespace

std::vector<double> run_in_subprocess(const std::function<std::vector<double>()>& work) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Message: 'V' + doubles, or 'E' + error text.
    try {
      const std::vector<double> v = work();
      const char tag = 'V';
      const bool ok =
          write_all(fds[1], &tag, 1) && write_all(fds[1], v.data(), v.size() * sizeof(double));
      ::close(fds[1]);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(ok ? 0 : 3);
    } catch (const std::exception& e) {
      const char tag = 'E';
      write_all(fds[1], &tag, 1);
      write_all(fds[1], e.what(), std::strlen(e.what()));
    } catch (...) {
      const char tag = 'E';
      const char* what = "unknown exception";
      write_all(fds[1], &tag, 1);
      write_all(fds[1], what, std::strlen(what));
    }
    ::close(fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(4);
  }
  ::close(fds[1]);
  const std::string msg = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!msg.empty() && msg[0] == 'E') throw std::runtime_error(msg.substr(1));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || msg.empty() || msg[0] != 'V' ||
      (msg.size() - 1) % sizeof(double) != 0) {
    throw std::runtime_error("run_in_subprocess: the child process failed (status " +
                             std::to_string(status) + ")");
  }
  std::vector<double> out((msg.size() - 1) / sizeof(double));
  std::memcpy(out.data(), msg.data() + 1, out.size() * sizeof(double));
  return out;
}

}  // namespace clustersim::sim
